// AVX2+FMA instance of the vector math and row kernels (eltwise_impl.h):
// 8 lanes, vmaskmovps tails, 2^n for exp built as two exponent-field factors so
// that results down to the subnormal range take a single rounding (<= 1 subnormal ulp).
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

struct O256 {
  using V = __m256;
  using C = __m256;
  static constexpr int64_t W = 8;
  static __m256i m(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : int(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V loadn(const float* p, int64_t n, float fill) {
    const __m256i k = m(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, k), _mm256_castsi256_ps(k));
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void storen(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, m(n), v); }
  static V set1(float f) { return _mm256_set1_ps(f); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V bits(int m) { return _mm256_castsi256_ps(_mm256_set1_epi32(m)); }
  static V abs(V a) { return _mm256_and_ps(a, bits(0x7fffffff)); }
  static V copysign(V mag, V sgn) {
    return _mm256_or_ps(_mm256_and_ps(mag, bits(0x7fffffff)), _mm256_and_ps(sgn, bits(int(0x80000000u))));
  }
  static C lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static C le(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static C gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static C isnan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static V blend(C c, V t, V f) { return _mm256_blendv_ps(f, t, c); }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2i(__m256i k) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
  }
  static V scale2(V p, V n) {  // n in [-150, 129]: two factors 2^n1, 2^n2 with n1, n2 in [-75, 65]
    const __m256i k = _mm256_cvtps_epi32(n);
    const __m256i k1 = _mm256_srai_epi32(k, 1);
    return _mm256_mul_ps(_mm256_mul_ps(p, pow2i(k1)), pow2i(_mm256_sub_epi32(k, k1)));
  }
  static float hsum(V a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static float hmax(V a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

#include "kernels/x86/eltwise_impl.h"

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
                                            online_softmax_rows_kernel<O256>,
                                            transpose_tile16,
                                            interleave3};

}  // namespace tessera::kernels::x86
