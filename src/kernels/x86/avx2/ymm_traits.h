// AVX2 vector traits (8 floats per ymm) for the kernels written once over an ISA (dw3_rows_impl.h,
// wino_impl.h, pool_impl.h, gemv_panels_impl.h). Include only from translation units compiled for AVX2.
// The traits live in an anonymous namespace on purpose: every template instantiated over them then has
// internal linkage, so the linker can never fold an AVX2 instantiation into code built for another ISA.
#pragma once

#include <immintrin.h>

namespace tessera::kernels::x86 {
namespace {  // NOLINT(google-build-namespaces): see above

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
};

}  // namespace
}  // namespace tessera::kernels::x86
