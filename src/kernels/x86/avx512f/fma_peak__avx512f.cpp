// FMA throughput probe: 12 independent accumulators hide the FMA latency
// (4 cycles x 2 pipes on current cores needs >= 8 chains).
#include <immintrin.h>

#include "kernels/x86/roofline.h"

namespace tessera::kernels::x86 {

double fma_peak_loop_avx512f(long iters, float* sink) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float v[16];
  _mm512_store_ps(v, s);  // (_mm512_reduce_add_ps trips GCC 12's -Wuninitialized)
  for (float x : v) *sink += x;
  return double(iters) * 12 * 16 * 2;
}

}  // namespace tessera::kernels::x86
