// Where's row for AVX-512: 16 conditions a step as a byte mask (vptestmb), the two operands blended by it
// (vpblendmd); an operand with stride 0 is broadcast once. Bit-for-bit copies: any 4-byte type.
#include <immintrin.h>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

void where_row_32__avx512f(const bool* c, bool sc, const uint32_t* x, bool sx, const uint32_t* y, bool sy,
                           uint32_t* z, int64_t n) {
  const __m512i xb = _mm512_set1_epi32(int(x[0])), yb = _mm512_set1_epi32(int(y[0]));
  const __mmask16 cb = c[0] ? __mmask16(0xffff) : __mmask16(0);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    __mmask16 take_x = cb;
    if (sc) {
      const __m128i v = _mm_maskz_loadu_epi8(m, c + i);
      take_x = _mm_test_epi8_mask(v, v);
    }
    const __m512i xv = sx ? _mm512_maskz_loadu_epi32(m, x + i) : xb;
    const __m512i yv = sy ? _mm512_maskz_loadu_epi32(m, y + i) : yb;
    _mm512_mask_storeu_epi32(z + i, m, _mm512_mask_blend_epi32(take_x, yv, xv));
  }
}

}  // namespace tessera::kernels::x86
