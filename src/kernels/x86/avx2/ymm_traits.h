// AVX2 vector traits (8 floats per ymm) for the kernels written once over an ISA (dw3_rows_impl.h,
// wino_impl.h, pool_impl.h, gemv_panels_impl.h). Include only from translation units compiled for AVX2.
// The traits live in an anonymous namespace on purpose: every template instantiated over them then has
// internal linkage, so the linker can never fold an AVX2 instantiation into code built for another ISA.
#pragma once

#include <immintrin.h>

#include <cmath>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {
namespace {  // NOLINT(google-build-namespaces): see above

// The vector math traits of eltwise_impl.h (Math<O256>), shared by the eltwise kernels and the epilogues of
// the kernels below (Ymm::silu).
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
  static C nlt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_NLT_UQ); }  // !(a < b): NaN lanes too
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
  static V scale2_where(C keep, V p, V n) { return blend(keep, scale2(p, n), _mm256_setzero_ps()); }
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
  // integer lanes (log's exponent split, sin / cos quadrants)
  using I = __m256i;
  static I as_int(V a) { return _mm256_castps_si256(a); }
  static V as_float(I a) { return _mm256_castsi256_ps(a); }
  static I iset1(int k) { return _mm256_set1_epi32(k); }
  static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I iand(I a, I b) { return _mm256_and_si256(a, b); }
  static I ixor(I a, I b) { return _mm256_xor_si256(a, b); }
  template <int K>
  static I srai(I a) {
    return _mm256_srai_epi32(a, K);
  }
  template <int K>
  static I slli(I a) {
    return _mm256_slli_epi32(a, K);
  }
  static I round_int(V a) { return _mm256_cvtps_epi32(a); }
  static V to_float(I a) { return _mm256_cvtepi32_ps(a); }
  static C itest(I a, int k) {  // (a & k) != 0
    const I z = _mm256_cmpeq_epi32(_mm256_and_si256(a, _mm256_set1_epi32(k)), _mm256_setzero_si256());
    return _mm256_castsi256_ps(_mm256_xor_si256(z, _mm256_set1_epi32(-1)));
  }
  static C cand(C a, C b) { return _mm256_and_ps(a, b); }
  static bool all(C c) { return _mm256_movemask_ps(c) == 0xFF; }
};

#include "kernels/x86/eltwise_impl.h"

struct Ymm {
  using vec = __m256;
  using mask = __m256i;
  static constexpr int kWidth = 8, kTile = 4;  // dw3: 9 weights + 4 sums + the input: 14 of 16 ymm
  static vec load(const float* p) { return _mm256_loadu_ps(p); }
  static vec load(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, vec v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, mask m, vec v) { _mm256_maskstore_ps(p, m, v); }
  static vec fma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
  static vec fnma(vec a, vec b, vec c) { return _mm256_fnmadd_ps(a, b, c); }
  static vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
  static vec sub(vec a, vec b) { return _mm256_sub_ps(a, b); }
  static vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
  static vec max(vec a, vec b) { return _mm256_max_ps(a, b); }
  static vec min(vec a, vec b) { return _mm256_min_ps(a, b); }
  // max(a, x) where a NaN in either stays NaN (vmaxps alone returns x when either is NaN)
  static vec max_keep_nan(vec a, vec x) {
    return _mm256_blendv_ps(_mm256_max_ps(a, x), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static vec set1(float f) { return _mm256_set1_ps(f); }
  static vec silu(vec x) { return Math<O256>::silu(x); }  // x * sigmoid(x), eltwise.h's bound
  static vec hardswish(vec x) { return Math<O256>::hardswish(x); }
  static vec zero() { return _mm256_setzero_ps(); }
  static float hsum(vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  // lanes [0, n) set, n in 0..8
  static mask tail_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // grouped convs (grouped_impl.h): lane o takes lane (o / cpg) * cpg + j of the input vector (cpg a power
  // of two <= 8)
  using ivec = __m256i;
  static ivec group_base(int cpg) {
    const int sh = __builtin_ctz(unsigned(cpg));
    return _mm256_slli_epi32(_mm256_srli_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), sh), sh);
  }
  static ivec plus(ivec i, int j) { return _mm256_add_epi32(i, _mm256_set1_epi32(j)); }
  static vec permute(vec v, ivec i) { return _mm256_permutevar8x32_ps(v, i); }
};

}  // namespace
}  // namespace tessera::kernels::x86
