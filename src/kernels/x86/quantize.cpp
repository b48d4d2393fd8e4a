#include "kernels/x86/quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cpu_features.h"
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

inline __attribute__((always_inline)) void minmax_loop(const float* x, int64_t n, float& mn, float& mx) {
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;  // (minps / maxps keep the second operand on a NaN: skipped)
    hi = x[i] > hi ? x[i] : hi;
  }
  mn = lo, mx = hi;
}
void minmax_base(const float* x, int64_t n, float& mn, float& mx) {
  minmax_loop(x, n, mn, mx);
}
__attribute__((target("avx2"))) void minmax_avx2(const float* x, int64_t n, float& mn, float& mx) {
  minmax_loop(x, n, mn, mx);
}

// c = quantize((a - za) sa + (b - zb) sb) in the f32 operations of DequantizeLinear, Add, QuantizeLinear.
template <class A, class B, class C>
inline __attribute__((always_inline)) void qadd_loop(const A* a, const B* b, int64_t n, const QAddParams& p,
                                                     C* c) {
  constexpr float lo = float(std::numeric_limits<C>::min()), hi = float(std::numeric_limits<C>::max());
  for (int64_t i = 0; i < n; ++i) {
    const float s = (float(a[i]) - p.za) * p.sa + (float(b[i]) - p.zb) * p.sb;
    float v = std::nearbyint(s / p.sc);
    v = v == v ? v + p.zc : p.zc;
    v = v < lo ? lo : v > hi ? hi : v;
    c[i] = C(int32_t(v));
  }
}
template <class T>
__attribute__((target("avx2"))) inline __m256 load8_f32(const T* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(std::numeric_limits<T>::is_signed ? _mm256_cvtepi8_epi32(v)
                                                              : _mm256_cvtepu8_epi32(v));
}
template <class A, class B, class C>
__attribute__((target("avx2"))) void qadd_avx2(const A* a, const B* b, int64_t n, const QAddParams& p, C* c) {
  const __m256 za = _mm256_set1_ps(p.za), sa = _mm256_set1_ps(p.sa), zb = _mm256_set1_ps(p.zb),
               sb = _mm256_set1_ps(p.sb), sc = _mm256_set1_ps(p.sc), zc = _mm256_set1_ps(p.zc),
               lo = _mm256_set1_ps(float(std::numeric_limits<C>::min())),
               hi = _mm256_set1_ps(float(std::numeric_limits<C>::max()));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 s = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(load8_f32(a + i), za), sa),
                                   _mm256_mul_ps(_mm256_sub_ps(load8_f32(b + i), zb), sb));
    __m256 r = _mm256_round_ps(_mm256_div_ps(s, sc), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    r = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, zc), lo), hi);
    const __m256i q32 = _mm256_cvtps_epi32(r);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q32), _mm256_extracti128_si256(q32, 1));
    const __m128i q8 =
        std::numeric_limits<C>::is_signed ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(c + i), q8);
  }
  qadd_loop(a + i, b + i, n - i, p, c + i);
}
template <class A, class B, class C>
void qadd_base(const A* a, const B* b, int64_t n, const QAddParams& p, C* c) {
  qadd_loop(a, b, n, p, c);
}
template <class A, class B, class C>
void qadd(const void* a, const void* b, int64_t n, const QAddParams& p, void* c, ThreadPool* pool) {
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  const A* ap = static_cast<const A*>(a);
  const B* bp = static_cast<const B*>(b);
  C* cp = static_cast<C*>(c);
  parallel_for(n >= 2 * kGrain ? pool : nullptr, n, kGrain, [&](int64_t s, int64_t e) {
    (avx2 ? qadd_avx2<A, B, C> : qadd_base<A, B, C>)(ap + s, bp + s, e - s, p, cp + s);
  });
}

// y = the requantization of int32(acc) + bias over one plane (acc holds integers), as the reference and
// onnxruntime: f32 product, clamped to the range less the zero point, rounded half to even, plus yz.
template <class Q>
inline __attribute__((always_inline)) void requant_loop(const float* acc, int64_t n, int32_t bias,
                                                        float scale, int32_t yz, Q* y) {
  const float lo = float(int32_t(std::numeric_limits<Q>::min()) - yz),
              hi = float(int32_t(std::numeric_limits<Q>::max()) - yz);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = int32_t(uint32_t(int32_t(acc[i])) + uint32_t(bias));
    float r = float(v) * scale;
    r = r > lo ? r : lo;
    r = r < hi ? r : hi;
    y[i] = Q(int32_t(std::nearbyint(r)) + yz);
  }
}
template <class Q>
void requant_base(const float* acc, int64_t n, int32_t bias, float scale, int32_t yz, Q* y) {
  requant_loop(acc, n, bias, scale, yz, y);
}
template <class Q>
__attribute__((target("avx2"))) void requant_avx2(const float* acc, int64_t n, int32_t bias, float scale,
                                                  int32_t yz, Q* y) {
  const __m256 s = _mm256_set1_ps(scale),
               lo = _mm256_set1_ps(float(int32_t(std::numeric_limits<Q>::min()) - yz)),
               hi = _mm256_set1_ps(float(int32_t(std::numeric_limits<Q>::max()) - yz));
  const __m256i b = _mm256_set1_epi32(bias), z = _mm256_set1_epi32(yz);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_loadu_ps(acc + i)), b);
    const __m256 f = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), s), lo), hi);
    const __m256i q32 = _mm256_add_epi32(_mm256_cvtps_epi32(f), z);  // (MXCSR: nearest even)
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q32), _mm256_extracti128_si256(q32, 1));
    const __m128i q8 =
        std::numeric_limits<Q>::is_signed ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), q8);
  }
  requant_loop(acc + i, n - i, bias, scale, yz, y + i);
}

}  // namespace

void requantize_planes_f32(const float* acc, int64_t planes, int64_t plane, const int32_t* bias,
                           const float* scale, bool scale_per_plane, int32_t y_zero, bool y_signed, void* y,
                           ThreadPool* pool) {
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  parallel_for(
      pool, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane, 1)), [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          const int32_t bc = bias ? bias[c] : 0;
          const float sc = scale[scale_per_plane ? c : 0];
          if (y_signed)
            (avx2 ? requant_avx2<int8_t> : requant_base<int8_t>)(acc + c * plane, plane, bc, sc, y_zero,
                                                                 static_cast<int8_t*>(y) + c * plane);
          else
            (avx2 ? requant_avx2<uint8_t> : requant_base<uint8_t>)(acc + c * plane, plane, bc, sc, y_zero,
                                                                   static_cast<uint8_t*>(y) + c * plane);
        }
      });
}

void qlinear_add_8bit(const void* a, bool a_signed, const void* b, bool b_signed, int64_t n,
                      const QAddParams& p, void* c, bool c_signed, ThreadPool* pool) {
  using F = void (*)(const void*, const void*, int64_t, const QAddParams&, void*, ThreadPool*);
  static constexpr F table[8] = {qadd<uint8_t, uint8_t, uint8_t>, qadd<uint8_t, uint8_t, int8_t>,
                                 qadd<uint8_t, int8_t, uint8_t>,  qadd<uint8_t, int8_t, int8_t>,
                                 qadd<int8_t, uint8_t, uint8_t>,  qadd<int8_t, uint8_t, int8_t>,
                                 qadd<int8_t, int8_t, uint8_t>,   qadd<int8_t, int8_t, int8_t>};
  if (eltwise_isa() == EltIsa::avx512f) {
    parallel_for(n >= 2 * kGrain ? pool : nullptr, n, kGrain,
                 [&](int64_t s, int64_t e) {  // (bytes: s is the offset)
                   qlinear_add_8bit__avx512f(static_cast<const uint8_t*>(a) + s, a_signed,
                                             static_cast<const uint8_t*>(b) + s, b_signed, e - s, p,
                                             static_cast<uint8_t*>(c) + s, c_signed);
                 });
    return;
  }
  table[(a_signed ? 4 : 0) + (b_signed ? 2 : 0) + (c_signed ? 1 : 0)](a, b, n, p, c, pool);
}

void lookup_bytes(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y, ThreadPool* pool) {
  static const bool vbmi = cpu_features().avx512_core() && cpu_features().avx512vbmi;
  parallel_for(n >= 2 * kGrain ? pool : nullptr, n, kGrain, [&](int64_t s, int64_t e) {
    if (vbmi) {
      lookup_bytes__avx512vbmi(x + s, e - s, table, y + s);
      return;
    }
    for (int64_t i = s; i < e; ++i) y[i] = table[x[i]];
  });
}

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
