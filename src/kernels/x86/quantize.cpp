#include "kernels/x86/quantize.h"

#include <immintrin.h>

#include <cmath>
#include <limits>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per task

// Loops the compiler vectorizes; built for the baseline and (the rounding as vroundps) for AVX2.
template <class Q>
inline __attribute__((always_inline)) void quantize_loop(const float* x, int64_t n, float scale, float zp,
                                                         Q* y) {
  constexpr float lo = float(std::numeric_limits<Q>::min()), hi = float(std::numeric_limits<Q>::max());
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / scale);
    v = v == v ? v + zp : zp;
    v = v < lo ? lo : v > hi ? hi : v;
    y[i] = Q(int32_t(v));
  }
}
template <class Q>
inline __attribute__((always_inline)) void dequantize_loop(const Q* x, int64_t n, float scale, float zp,
                                                           float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float(x[i]) - zp) * scale;
}

template <class Q>
void quantize_base(const float* x, int64_t n, float s, float zp, Q* y) {
  quantize_loop(x, n, s, zp, y);
}
// 8 at a time: the quotient (a division, as the reference), vroundps to nearest even, NaN to 0, the zero
// point, the clamp, then narrowed through int32 and int16 (the compiler kept the portable loop scalar: 6x
// onnxruntime's time).
template <class Q>
__attribute__((target("avx2"))) void quantize_avx2(const float* x, int64_t n, float s, float zp, Q* y) {
  constexpr bool kSigned = std::numeric_limits<Q>::is_signed;
  const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(zp),
               lo = _mm256_set1_ps(float(std::numeric_limits<Q>::min())),
               hi = _mm256_set1_ps(float(std::numeric_limits<Q>::max()));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), vs),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    r = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, vz), lo), hi);
    const __m256i q32 = _mm256_cvtps_epi32(r);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q32), _mm256_extracti128_si256(q32, 1));
    const __m128i q8 = kSigned ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), q8);
  }
  quantize_loop(x + i, n - i, s, zp, y + i);
}
template <class Q>
void dequantize_base(const Q* x, int64_t n, float s, float zp, float* y) {
  dequantize_loop(x, n, s, zp, y);
}
template <class Q>
__attribute__((target("avx2"))) void dequantize_avx2(const Q* x, int64_t n, float s, float zp, float* y) {
  dequantize_loop(x, n, s, zp, y);
}

template <class Q>
void quantize(const float* x, int64_t n, float scale, int32_t zero_point, Q* y, ThreadPool* pool) {
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  parallel_for(n >= 2 * kGrain ? pool : nullptr, n, kGrain, [&](int64_t b, int64_t e) {
    (avx2 ? quantize_avx2<Q> : quantize_base<Q>)(x + b, e - b, scale, float(zero_point), y + b);
  });
}
template <class Q>
void dequantize(const Q* x, int64_t n, float scale, int32_t zero_point, float* y, ThreadPool* pool) {
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  parallel_for(n >= 2 * kGrain ? pool : nullptr, n, kGrain, [&](int64_t b, int64_t e) {
    (avx2 ? dequantize_avx2<Q> : dequantize_base<Q>)(x + b, e - b, scale, float(zero_point), y + b);
  });
}

template <bool>
inline __attribute__((always_inline)) void minmax_loop(const float* x, int64_t n, float& mn, float& mx) {
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;  // (minps / maxps keep the second operand on a NaN: skipped)
    hi = x[i] > hi ? x[i] : hi;
  }
  mn = lo, mx = hi;
}
void minmax_base(const float* x, int64_t n, float& mn, float& mx) {
  minmax_loop<false>(x, n, mn, mx);
}
__attribute__((target("avx2"))) void minmax_avx2(const float* x, int64_t n, float& mn, float& mx) {
  minmax_loop<true>(x, n, mn, mx);
}

}  // namespace

void minmax0_f32(const float* x, int64_t n, float* mn, float* mx) {
  (eltwise_isa() != EltIsa::portable ? minmax_avx2 : minmax_base)(x, n, *mn, *mx);
}

void quantize_u8_f32(const float* x, int64_t n, float scale, int32_t zero_point, uint8_t* y,
                     ThreadPool* pool) {
  quantize(x, n, scale, zero_point, y, pool);
}
void quantize_i8_f32(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y,
                     ThreadPool* pool) {
  quantize(x, n, scale, zero_point, y, pool);
}
void dequantize_u8_f32(const uint8_t* x, int64_t n, float scale, int32_t zero_point, float* y,
                       ThreadPool* pool) {
  dequantize(x, n, scale, zero_point, y, pool);
}
void dequantize_i8_f32(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y,
                       ThreadPool* pool) {
  dequantize(x, n, scale, zero_point, y, pool);
}

}  // namespace tessera::kernels::x86
