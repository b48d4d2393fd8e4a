// ChannelShuffle's two-group interleave for AVX-512 (channel_shuffle.h): 16 elements of each source, two
// vpermt2d, 32 outputs; the row's tail under masks.
#include <immintrin.h>

#include "kernels/x86/channel_shuffle.h"

namespace tessera::kernels::x86 {

void interleave2_rows_32__avx512f(const uint32_t* p0, int64_t s0, const uint32_t* p1, int64_t s1,
                                  uint32_t* out, int64_t so, int64_t rows, int64_t len) {
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const int64_t n0 = (len + 1) / 2, n1 = len / 2;  // elements taken from p0 and from p1
  for (int64_t r = 0; r < rows; ++r, p0 += s0, p1 += s1, out += so) {
    int64_t m = 0;
    for (; m + 16 <= n1; m += 16) {
      const __m512i a = _mm512_loadu_si512(p0 + m), b = _mm512_loadu_si512(p1 + m);
      _mm512_storeu_si512(out + 2 * m, _mm512_permutex2var_epi32(a, lo, b));
      _mm512_storeu_si512(out + 2 * m + 16, _mm512_permutex2var_epi32(a, hi, b));
    }
    if (m < n0) {
      const int64_t t0 = n0 - m, t1 = n1 - m, to = len - 2 * m;  // 1..16, 0..16, 1..32 left
      const __m512i a = _mm512_maskz_loadu_epi32(__mmask16((1u << t0) - 1), p0 + m);
      const __m512i b = _mm512_maskz_loadu_epi32(__mmask16((1u << t1) - 1), p1 + m);
      const auto mask = [](int64_t k) { return __mmask16(k >= 16 ? 0xffffu : (1u << (k > 0 ? k : 0)) - 1); };
      _mm512_mask_storeu_epi32(out + 2 * m, mask(to), _mm512_permutex2var_epi32(a, lo, b));
      _mm512_mask_storeu_epi32(out + 2 * m + 16, mask(to - 16), _mm512_permutex2var_epi32(a, hi, b));
    }
  }
}

}  // namespace tessera::kernels::x86
