// tessera.QLinearAdd's loop for AVX-512: 16 elements at a time, the f32 operations of DequantizeLinear, Add
// and QuantizeLinear in their order (products and sums in explicit-rounding forms, which the compiler does
// not contract into FMAs: the fused result must be the unfused one's bit for bit). Twice the AVX2 loop's
// lanes: the division is most of the time.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/x86/quantize.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

template <class T>
inline __m512 load16_f32(const T* p, __mmask16 m) {
  const __m128i v = _mm_maskz_loadu_epi8(m, p);
  return _mm512_cvtepi32_ps(std::numeric_limits<T>::is_signed ? _mm512_cvtepi8_epi32(v)
                                                              : _mm512_cvtepu8_epi32(v));
}

template <class A, class B, class C>
void qadd(const void* a0, const void* b0, int64_t n, const QAddParams& p, void* c0) {
  const A* a = static_cast<const A*>(a0);
  const B* b = static_cast<const B*>(b0);
  C* c = static_cast<C*>(c0);
  const __m512 za = _mm512_set1_ps(p.za), sa = _mm512_set1_ps(p.sa), zb = _mm512_set1_ps(p.zb),
               sb = _mm512_set1_ps(p.sb), sc = _mm512_set1_ps(p.sc), zc = _mm512_set1_ps(p.zc),
               lo = _mm512_set1_ps(float(std::numeric_limits<C>::min())),
               hi = _mm512_set1_ps(float(std::numeric_limits<C>::max()));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m512 da = _mm512_mul_round_ps(_mm512_sub_round_ps(load16_f32(a + i, m), za, kRound), sa, kRound);
    const __m512 db = _mm512_mul_round_ps(_mm512_sub_round_ps(load16_f32(b + i, m), zb, kRound), sb, kRound);
    __m512 r =
        _mm512_roundscale_ps(_mm512_div_round_ps(_mm512_add_round_ps(da, db, kRound), sc, kRound), kRound);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());  // NaN: 0
    r = _mm512_min_ps(_mm512_max_ps(_mm512_add_round_ps(r, zc, kRound), lo), hi);
    const __m512i q = _mm512_cvtps_epi32(r);
    _mm_mask_storeu_epi8(c + i, m, _mm512_cvtepi32_epi8(q));
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
