// AVX-512 vector traits (16 floats per zmm) for the kernels written once over an ISA (dw3_rows_impl.h,
// wino_impl.h, pool_impl.h, gemv_panels_impl.h). Include only from translation units compiled for AVX-512.
// Anonymous namespace on purpose, as in avx2/ymm_traits.h: instantiations over the traits stay internal.
#pragma once

#include <immintrin.h>

namespace tessera::kernels::x86 {
namespace {  // NOLINT(google-build-namespaces): see above

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
  static vec zero() { return _mm512_setzero_ps(); }
  static float hsum(vec v) { return _mm512_reduce_add_ps(v); }
  static mask tail_mask(int n) { return n >= 16 ? mask(0xffff) : mask((1u << n) - 1); }
};

}  // namespace
}  // namespace tessera::kernels::x86
