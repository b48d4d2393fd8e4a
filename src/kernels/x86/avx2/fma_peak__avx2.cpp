// FMA throughput probe for AVX2 + FMA: 12 independent 8-wide accumulators.
#include <immintrin.h>

#include "kernels/x86/roofline.h"

namespace tessera::kernels::x86 {

double fma_peak_loop_avx2(long iters, float* sink) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float v[8];
  _mm256_store_ps(v, s);
  for (float x : v) *sink += x;
  return double(iters) * 12 * 8 * 2;
}

}  // namespace tessera::kernels::x86
