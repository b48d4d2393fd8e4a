// Concat's rows for AVX-512 (concat.h): each piece in zmm moves, its last partial vector masked.
#include <immintrin.h>

#include "kernels/x86/concat.h"

namespace tessera::kernels::x86 {

void concat_rows_f32__avx512f(const float* const* srcs, const int64_t* widths, int64_t n, float* dst,
                              int64_t row, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    float* d = dst + r * row;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t len = widths[i];
      const float* s = srcs[i] + r * len;
      int64_t k = 0;
      for (; k + 64 <= len; k += 64) {
        const __m512 a = _mm512_loadu_ps(s + k), b = _mm512_loadu_ps(s + k + 16),
                     c = _mm512_loadu_ps(s + k + 32), e = _mm512_loadu_ps(s + k + 48);
        _mm512_storeu_ps(d + k, a);
        _mm512_storeu_ps(d + k + 16, b);
        _mm512_storeu_ps(d + k + 32, c);
        _mm512_storeu_ps(d + k + 48, e);
      }
      for (; k + 16 <= len; k += 16) _mm512_storeu_ps(d + k, _mm512_loadu_ps(s + k));
      if (k < len) {
        const __mmask16 m = __mmask16((1u << (len - k)) - 1);
        _mm512_mask_storeu_ps(d + k, m, _mm512_maskz_loadu_ps(m, s + k));
      }
      d += len;
    }
  }
}

}  // namespace tessera::kernels::x86
