// AVX-512 vector traits (16 floats per zmm) for the kernels written once over an ISA (dw3_rows_impl.h,
// wino_impl.h, pool_impl.h, gemv_panels_impl.h). Include only from translation units compiled for AVX-512.
// Anonymous namespace on purpose, as in avx2/ymm_traits.h: instantiations over the traits stay internal.
#pragma once

// GCC 12 warns, falsely (GCC PR105593), about _mm512_undefined_ps inside the intrinsics O512 uses
// (vscalefps, vrndscaleps) wherever they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {
namespace {  // NOLINT(google-build-namespaces): see above

// The vector math traits of eltwise_impl.h (Math<O512>: exp, erf, tanh, sigmoid, silu, GELU), shared by the
// eltwise kernels and the epilogues of the kernels below (Zmm::silu).
struct O512 {
  using V = __m512;
  using C = __mmask16;
  static constexpr int64_t W = 16;
  static __mmask16 m(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << unsigned(n)) - 1u); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V loadn(const float* p, int64_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), m(n), p);
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void storen(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, m(n), v); }
  static V set1(float f) { return _mm512_set1_ps(f); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V bits_and(V a, int m) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(m)));
  }
  static V abs(V a) { return bits_and(a, 0x7fffffff); }
  static V copysign(V mag, V sgn) {
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(bits_and(mag, 0x7fffffff)),
                                               _mm512_castps_si512(bits_and(sgn, int(0x80000000u)))));
  }
  static C lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static C le(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  static C gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static C isnan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static C nlt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLT_UQ); }  // !(a < b): NaN lanes too
  static V blend(C c, V t, V f) { return _mm512_mask_blend_ps(c, f, t); }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V scale2(V p, V n) { return _mm512_scalef_ps(p, n); }
  static V scale2_where(C keep, V p, V n) { return _mm512_maskz_scalef_ps(keep, p, n); }  // 0 elsewhere
  static float hsum(V a) { return _mm512_reduce_add_ps(a); }
  static float hmax(V a) { return _mm512_reduce_max_ps(a); }
  // 32-entry tables (GeluTable), looked up by vpermt2ps
  using I = __m512i;
  struct Table32 {
    __m512 lo, hi;
  };
  static Table32 table32(const float* t) { return {_mm512_loadu_ps(t), _mm512_loadu_ps(t + 16)}; }
  static I trunc_int(V a) { return _mm512_cvttps_epi32(a); }
  static V to_float(I i) { return _mm512_cvtepi32_ps(i); }
  static V lookup(const Table32& t, I i) { return _mm512_permutex2var_ps(t.lo, i, t.hi); }
  // integer lanes (log's exponent split, sin / cos quadrants)
  static I as_int(V a) { return _mm512_castps_si512(a); }
  static V as_float(I a) { return _mm512_castsi512_ps(a); }
  static I iset1(int k) { return _mm512_set1_epi32(k); }
  static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I iand(I a, I b) { return _mm512_and_si512(a, b); }
  static I ixor(I a, I b) { return _mm512_xor_si512(a, b); }
  template <int K>
  static I srai(I a) {
    return _mm512_srai_epi32(a, K);
  }
  template <int K>
  static I slli(I a) {
    return _mm512_slli_epi32(a, K);
  }
  static I round_int(V a) { return _mm512_cvtps_epi32(a); }
  static C itest(I a, int k) { return _mm512_test_epi32_mask(a, _mm512_set1_epi32(k)); }  // (a & k) != 0
  static C cand(C a, C b) { return C(a & b); }
  static bool all(C c) { return c == C(0xFFFF); }
};

#include "kernels/x86/eltwise_impl.h"

struct Zmm {
  using vec = __m512;
  using mask = __mmask16;
  static constexpr int kWidth = 16, kTile = 8;  // dw3: 9 weights + 8 sums + the input: 18 of 32 zmm
  static vec load(const float* p) { return _mm512_loadu_ps(p); }
  static vec load(const float* p, mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, vec v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, mask m, vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static vec fma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
  static vec fnma(vec a, vec b, vec c) { return _mm512_fnmadd_ps(a, b, c); }
  static vec add(vec a, vec b) { return _mm512_add_ps(a, b); }
  static vec sub(vec a, vec b) { return _mm512_sub_ps(a, b); }
  static vec mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
  static vec max(vec a, vec b) { return _mm512_max_ps(a, b); }
  static vec min(vec a, vec b) { return _mm512_min_ps(a, b); }
  // max(a, x) where a NaN in either stays NaN (vmaxps alone returns x when either is NaN)
  static vec max_keep_nan(vec a, vec x) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, x), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
  }
  static vec set1(float f) { return _mm512_set1_ps(f); }
  static vec silu(vec x) { return Math<O512>::silu(x); }  // x * sigmoid(x), eltwise.h's bound
  static vec hardswish(vec x) { return Math<O512>::hardswish(x); }
  static vec zero() { return _mm512_setzero_ps(); }
  static float hsum(vec v) { return _mm512_reduce_add_ps(v); }
  static mask tail_mask(int n) { return n >= 16 ? mask(0xffff) : mask((1u << n) - 1); }
  // grouped convs (grouped_impl.h): lane o takes lane (o / cpg) * cpg + j of the input vector (cpg a power
  // of two <= 8)
  using ivec = __m512i;
  static ivec group_base(int cpg) {
    const int sh = __builtin_ctz(unsigned(cpg));
    const __m512i o = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_slli_epi32(_mm512_srli_epi32(o, sh), sh);
  }
  static ivec plus(ivec i, int j) { return _mm512_add_epi32(i, _mm512_set1_epi32(j)); }
  static vec permute(vec v, ivec i) { return _mm512_permutexvar_ps(i, v); }
};

}  // namespace
}  // namespace tessera::kernels::x86
