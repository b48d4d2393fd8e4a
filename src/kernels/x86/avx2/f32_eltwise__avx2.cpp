// AVX2+FMA instance of the vector math and row kernels (eltwise_impl.h):
// 8 lanes, vmaskmovps tails, 2^n for exp built as two exponent-field factors so
// that results down to the subnormal range take a single rounding (<= 1 subnormal ulp).
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/avx2/ymm_traits.h"
#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

// 8 x 8 transpose in registers (unpack ps, unpack pd, swap 128-bit halves).
void transpose_tile8(const float* x, int64_t ldx, float* y, int64_t ldy) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(x + i * ldx);
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 2; ++g) {
    const __m256d a = _mm256_castps_pd(t[4 * g]), b = _mm256_castps_pd(t[4 * g + 1]),
                  c = _mm256_castps_pd(t[4 * g + 2]), d = _mm256_castps_pd(t[4 * g + 3]);
    r[4 * g + 0] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, c));
    r[4 * g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, c));
    r[4 * g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(b, d));
    r[4 * g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(y + j * ldy, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(y + (4 + j) * ldy, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}

void transpose_tile16(const float* x, int64_t ldx, float* y, int64_t ldy) {
  for (int a = 0; a < 16; a += 8)
    for (int b = 0; b < 16; b += 8) transpose_tile8(x + a + b * ldx, ldx, y + a * ldy + b, ldy);
}

// 8 pixels of each plane -> 24 interleaved floats: output vector k gathers lane m from pixel (8k + m) / 3
// of every plane with one permute each, and two blends keep plane (8k + m) % 3.
void interleave3(const float* x, int64_t ldx, float* y, int64_t n) {
  alignas(32) int32_t idx[3][8], from1[3][8], from2[3][8];
  for (int k = 0; k < 3; ++k)
    for (int m = 0; m < 8; ++m) {
      const int o = 8 * k + m;
      idx[k][m] = o / 3, from1[k][m] = o % 3 == 1 ? -1 : 0, from2[k][m] = o % 3 == 2 ? -1 : 0;
    }
  __m256i ix[3];
  __m256 sel1[3], sel2[3];
  for (int k = 0; k < 3; ++k) {
    ix[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(idx[k]));
    sel1[k] = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(from1[k])));
    sel2[k] = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(from2[k])));
  }
  const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx;
  int64_t a = 0;
  for (; a + 8 <= n; a += 8) {
    const __m256 v0 = _mm256_loadu_ps(x0 + a), v1 = _mm256_loadu_ps(x1 + a), v2 = _mm256_loadu_ps(x2 + a);
    for (int k = 0; k < 3; ++k) {
      __m256 out = _mm256_permutevar8x32_ps(v0, ix[k]);
      out = _mm256_blendv_ps(out, _mm256_permutevar8x32_ps(v1, ix[k]), sel1[k]);
      out = _mm256_blendv_ps(out, _mm256_permutevar8x32_ps(v2, ix[k]), sel2[k]);
      _mm256_storeu_ps(y + 3 * a + 8 * k, out);
    }
  }
  for (; a < n; ++a)
    for (int b = 0; b < 3; ++b) y[3 * a + b] = x[b * ldx + a];
}

}  // namespace

extern const EltwiseKernels kEltwiseKernelsAvx2;
const EltwiseKernels kEltwiseKernelsAvx2 = {unary_kernel<O256>,
                                            binary_kernel<O256>,
                                            softmax_rows_kernel<O256>,
                                            layernorm_rows_kernel<O256>,
                                            rmsnorm_rows_kernel<O256>,
                                            online_softmax_rows_kernel<O256>,
                                            transpose_tile16,
                                            interleave3,
                                            log_softmax_rows_kernel<O256>};

}  // namespace tessera::kernels::x86
