// tessera.QLinearAdd's loop for AVX-512: 16 elements at a time, the f32 operations of DequantizeLinear, Add
// and QuantizeLinear in their order (products and sums in explicit-rounding forms, which the compiler does
// not contract into FMAs: the fused result must be the unfused one's bit for bit). Twice the AVX2 loop's
// lanes: the division is most of the time.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/x86/quantize.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// 16 results as int32 (in C's range), from 16 elements of a and b at p.
template <class A, class B, class C, bool Full>
inline __attribute__((always_inline)) __m512i qadd16(const A* a, const B* b, __mmask16 m,
                                                     const __m512 (&k)[8]) {
  const auto load = [&](const auto* p) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
    const __m128i v =
        Full ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)) : _mm_maskz_loadu_epi8(m, p);
    return _mm512_cvtepi32_ps(std::numeric_limits<T>::is_signed ? _mm512_cvtepi8_epi32(v)
                                                                : _mm512_cvtepu8_epi32(v));
  };
  const __m512 da = _mm512_mul_round_ps(_mm512_sub_round_ps(load(a), k[0], kRound), k[1], kRound);
  const __m512 db = _mm512_mul_round_ps(_mm512_sub_round_ps(load(b), k[2], kRound), k[3], kRound);
  __m512 r =
      _mm512_roundscale_ps(_mm512_div_round_ps(_mm512_add_round_ps(da, db, kRound), k[4], kRound), kRound);
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());  // NaN: 0
  r = _mm512_min_ps(_mm512_max_ps(_mm512_add_round_ps(r, k[5], kRound), k[6]), k[7]);
  return _mm512_cvtps_epi32(r);
}

template <class A, class B, class C>
void qadd(const void* a0, const void* b0, int64_t n, const QAddParams& p, void* c0) {
  const A* a = static_cast<const A*>(a0);
  const B* b = static_cast<const B*>(b0);
  C* c = static_cast<C*>(c0);
  const __m512 k[8] = {_mm512_set1_ps(p.za),
                       _mm512_set1_ps(p.sa),
                       _mm512_set1_ps(p.zb),
                       _mm512_set1_ps(p.sb),
                       _mm512_set1_ps(p.sc),
                       _mm512_set1_ps(p.zc),
                       _mm512_set1_ps(float(std::numeric_limits<C>::min())),
                       _mm512_set1_ps(float(std::numeric_limits<C>::max()))};
  // 64 at a time, unmasked, the four results packed to bytes in two steps and one permutation back to their
  // order (a byte narrowing and a masked store per 16 cost more than the arithmetic)
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i q0 = qadd16<A, B, C, true>(a + i, b + i, 0, k),
                  q1 = qadd16<A, B, C, true>(a + i + 16, b + i + 16, 0, k),
                  q2 = qadd16<A, B, C, true>(a + i + 32, b + i + 32, 0, k),
                  q3 = qadd16<A, B, C, true>(a + i + 48, b + i + 48, 0, k);
    const __m512i w01 = _mm512_packs_epi32(q0, q1), w23 = _mm512_packs_epi32(q2, q3);
    const __m512i by =
        std::numeric_limits<C>::is_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
    _mm512_storeu_si512(c + i, _mm512_permutexvar_epi32(order, by));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    _mm_mask_storeu_epi8(c + i, m, _mm512_cvtepi32_epi8(qadd16<A, B, C, false>(a + i, b + i, m, k)));
  }
}

}  // namespace

void qlinear_add_8bit__avx512f(const void* a, bool a_signed, const void* b, bool b_signed, int64_t n,
                               const QAddParams& p, void* c, bool c_signed) {
  using F = void (*)(const void*, const void*, int64_t, const QAddParams&, void*);
  static constexpr F table[8] = {qadd<uint8_t, uint8_t, uint8_t>, qadd<uint8_t, uint8_t, int8_t>,
                                 qadd<uint8_t, int8_t, uint8_t>,  qadd<uint8_t, int8_t, int8_t>,
                                 qadd<int8_t, uint8_t, uint8_t>,  qadd<int8_t, uint8_t, int8_t>,
                                 qadd<int8_t, int8_t, uint8_t>,   qadd<int8_t, int8_t, int8_t>};
  table[(a_signed ? 4 : 0) + (b_signed ? 2 : 0) + (c_signed ? 1 : 0)](a, b, n, p, c);
}

}  // namespace tessera::kernels::x86
