// AVX-512F instance of the vector math and row kernels (eltwise_impl.h):
// 16 lanes, masked tails, vscalefps for the 2^n of exp (handles overflow and
// subnormal results in one rounding).
// GCC 12 warns (falsely, GCC PR105593) about _mm512_undefined_ps inside the intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

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
  static V blend(C c, V t, V f) { return _mm512_mask_blend_ps(c, f, t); }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V scale2(V p, V n) { return _mm512_scalef_ps(p, n); }
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
};

#include "kernels/x86/eltwise_impl.h"

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
                                               online_softmax_rows_kernel<O512>,
                                               transpose_tile16,
                                               interleave3};

}  // namespace tessera::kernels::x86
