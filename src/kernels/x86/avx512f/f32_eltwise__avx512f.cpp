// AVX-512F instance of the vector math and row kernels (eltwise_impl.h):
// 16 lanes, masked tails, vscalefps for the 2^n of exp (handles overflow and
// subnormal results in one rounding).
// GCC 12 warns (falsely, GCC PR105593) about _mm512_undefined_ps inside the intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/avx512f/zmm_traits.h"
#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

// 16 x 16 transpose in registers: interleave pairs of rows (ps), pairs of pairs
// (pd), then gather the 128-bit lanes of four row groups (two f32x4 shuffles).
void transpose_tile16(const float* x, int64_t ldx, float* y, int64_t ldy) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(x + i * ldx);
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // r[4g + j], 128-bit lane L: column 4L + j of rows 4g .. 4g + 3
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]),
                  c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    r[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 v1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88),
                 v2 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD),
                 v3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88),
                 v4 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    _mm512_storeu_ps(y + j * ldy, _mm512_shuffle_f32x4(v1, v3, 0x88));
    _mm512_storeu_ps(y + (4 + j) * ldy, _mm512_shuffle_f32x4(v2, v4, 0x88));
    _mm512_storeu_ps(y + (8 + j) * ldy, _mm512_shuffle_f32x4(v1, v3, 0xDD));
    _mm512_storeu_ps(y + (12 + j) * ldy, _mm512_shuffle_f32x4(v2, v4, 0xDD));
  }
}

// 16 pixels of each plane -> 48 interleaved floats: two two-source permutes per output vector (the first
// takes planes 0 and 1, the second slots plane 2 in). The scalar loop ran at 4 GB/s (ResNet's input:
// 0.15 ms of its 54).
void interleave3(const float* x, int64_t ldx, float* y, int64_t n) {
  alignas(64) int32_t i01[3][16], i2[3][16];
  for (int k = 0; k < 3; ++k)
    for (int m = 0; m < 16; ++m) {
      const int o = 16 * k + m, a = o / 3, b = o % 3;
      i01[k][m] = b == 0 ? a : b == 1 ? 16 + a : 0;
      i2[k][m] = b == 2 ? 16 + a : m;
    }
  __m512i p01[3], p2[3];
  for (int k = 0; k < 3; ++k) {
    p01[k] = _mm512_load_si512(i01[k]);
    p2[k] = _mm512_load_si512(i2[k]);
  }
  const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx;
  int64_t a = 0;
  for (; a + 16 <= n; a += 16) {
    const __m512 v0 = _mm512_loadu_ps(x0 + a), v1 = _mm512_loadu_ps(x1 + a), v2 = _mm512_loadu_ps(x2 + a);
#pragma GCC unroll 3
    for (int k = 0; k < 3; ++k)
      _mm512_storeu_ps(y + 3 * a + 16 * k,
                       _mm512_permutex2var_ps(_mm512_permutex2var_ps(v0, p01[k], v1), p2[k], v2));
  }
  for (; a < n; ++a)
    for (int b = 0; b < 3; ++b) y[3 * a + b] = x[b * ldx + a];
}

}  // namespace

extern const EltwiseKernels kEltwiseKernelsAvx512f;
const EltwiseKernels kEltwiseKernelsAvx512f = {unary_kernel<O512>,
                                               binary_kernel<O512>,
                                               softmax_rows_kernel<O512>,
                                               layernorm_rows_kernel<O512>,
                                               rmsnorm_rows_kernel<O512>,
                                               online_softmax_rows_kernel<O512>,
                                               transpose_tile16,
                                               interleave3,
                                               log_softmax_rows_kernel<O512>};

}  // namespace tessera::kernels::x86
