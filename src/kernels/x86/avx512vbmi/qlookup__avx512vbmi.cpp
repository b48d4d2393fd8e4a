// tessera.QLookup for AVX-512 VBMI: the 256-byte table in four registers, 64 bytes looked up with two
// vpermi2b (each a 128-entry table by the index's low 7 bits) and a blend on the index's top bit. A scalar
// lookup is one byte a cycle at best; this is 64 in a few.
#include <immintrin.h>

#include "kernels/x86/quantize.h"

namespace tessera::kernels::x86 {

void lookup_bytes__avx512vbmi(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64),
                t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  for (int64_t i = 0; i < n; i += 64) {
    const __mmask64 m = n - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (n - i)) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
}

}  // namespace tessera::kernels::x86
