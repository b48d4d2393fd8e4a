// 6 x 64 f32 GEMM micro-kernel for AVX-512F: 24 zmm accumulators (6 rows x 4
// vectors), 4 zmm of B and one broadcast of A per k step — 24 FMAs per 10 loads.
// Zen 4 retires one 512-bit FMA per cycle, so 24 independent accumulators cover
// the 4-cycle FMA latency several times over.
#include <immintrin.h>

#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

namespace {
inline __m512 finish(__m512 v, const float* cprev, float beta, const UkrEpilogue* ep, int64_t i, int64_t j) {
  if (beta != 0.0f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(cprev), v);
  if (ep) {
    if (ep->bias) v = _mm512_add_ps(v, _mm512_loadu_ps(ep->bias + j));
    if (ep->row_bias) v = _mm512_add_ps(v, _mm512_set1_ps(ep->row_bias[i]));
    if (ep->residual) v = _mm512_add_ps(v, _mm512_loadu_ps(ep->residual + i * ep->ldr + j));
    if (ep->act == Activation::relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
    else if (ep->act == Activation::clip)
      v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(ep->clip_min)), _mm512_set1_ps(ep->clip_max));
  }
  return v;
}
}  // namespace

void f32_gemm_ukr_6x64__avx512f(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr,
                                int64_t nr, float beta, const UkrEpilogue* ep) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
  __m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  __m512 c20 = c00, c21 = c00, c22 = c00, c23 = c00;
  __m512 c30 = c00, c31 = c00, c32 = c00, c33 = c00;
  __m512 c40 = c00, c41 = c00, c42 = c00, c43 = c00;
  __m512 c50 = c00, c51 = c00, c52 = c00, c53 = c00;
  // C is read (beta) and written only after the K loop: start bringing the
  // tile in now, or its misses stall the end of every call on large problems.
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 64; j += 16) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + j), _MM_HINT_T0);
  for (int64_t p = 0; p < kc; ++p) {
    const float* bp = b + p * 64;
    _mm_prefetch(reinterpret_cast<const char*>(bp + 8 * 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(bp + 8 * 64 + 32), _MM_HINT_T0);
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16), b2 = _mm512_load_ps(bp + 32),
                 b3 = _mm512_load_ps(bp + 48);
    const float* ap = a + p * 6;
    __m512 av = _mm512_set1_ps(ap[0]);
    c00 = _mm512_fmadd_ps(av, b0, c00); c01 = _mm512_fmadd_ps(av, b1, c01);
    c02 = _mm512_fmadd_ps(av, b2, c02); c03 = _mm512_fmadd_ps(av, b3, c03);
    av = _mm512_set1_ps(ap[1]);
    c10 = _mm512_fmadd_ps(av, b0, c10); c11 = _mm512_fmadd_ps(av, b1, c11);
    c12 = _mm512_fmadd_ps(av, b2, c12); c13 = _mm512_fmadd_ps(av, b3, c13);
    av = _mm512_set1_ps(ap[2]);
    c20 = _mm512_fmadd_ps(av, b0, c20); c21 = _mm512_fmadd_ps(av, b1, c21);
    c22 = _mm512_fmadd_ps(av, b2, c22); c23 = _mm512_fmadd_ps(av, b3, c23);
    av = _mm512_set1_ps(ap[3]);
    c30 = _mm512_fmadd_ps(av, b0, c30); c31 = _mm512_fmadd_ps(av, b1, c31);
    c32 = _mm512_fmadd_ps(av, b2, c32); c33 = _mm512_fmadd_ps(av, b3, c33);
    av = _mm512_set1_ps(ap[4]);
    c40 = _mm512_fmadd_ps(av, b0, c40); c41 = _mm512_fmadd_ps(av, b1, c41);
    c42 = _mm512_fmadd_ps(av, b2, c42); c43 = _mm512_fmadd_ps(av, b3, c43);
    av = _mm512_set1_ps(ap[5]);
    c50 = _mm512_fmadd_ps(av, b0, c50); c51 = _mm512_fmadd_ps(av, b1, c51);
    c52 = _mm512_fmadd_ps(av, b2, c52); c53 = _mm512_fmadd_ps(av, b3, c53);
  }
  (void)mr;
  (void)nr;  // always a full 6 x 64 tile (the driver handles edges)
  const __m512 rows[6][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
                             {c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53}};
  for (int64_t i = 0; i < 6; ++i) {
    float* crow = c + i * ldc;
    for (int64_t j = 0; j < 4; ++j)
      _mm512_storeu_ps(crow + 16 * j, finish(rows[i][j], crow + 16 * j, beta, ep, i, 16 * j));
  }
}

}  // namespace tessera::kernels::x86
