// MaxPool over NHWC bytes: each output pixel the running maximum of its window's pixels, 16 channels a vector
// (SSE2, every x86-64 CPU). s8 runs as u8 with the top bit flipped, which keeps the order.
#include <emmintrin.h>

#include <algorithm>

#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86 {

void maxpool2d_nhwc_8bit(const PoolParams& pp, const void* x, bool is_signed, void* y, ThreadPool* pool) {
  const Conv2dParams& p = pp.g;
  const int64_t c = p.c, oh = pp.oh, ow = pp.ow;
  const uint8_t flip = is_signed ? 0x80 : 0;
  const __m128i fl = _mm_set1_epi8(char(flip));
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  uint8_t* yb = static_cast<uint8_t*>(y);
  parallel_for(pool, p.n * oh, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / oh, oy = r % oh;
      for (int64_t ox = 0; ox < ow; ++ox) {
        uint8_t* out = yb + ((b * oh + oy) * ow + ox) * c;
        const uint8_t* src[256];  // the window's pixels inside the image (at most 256 at a time)
        int n = 0;
        bool first = true;
        auto flush = [&] {
          int64_t ch = 0;
          for (; ch + 16 <= c; ch += 16) {
            __m128i m =
                first ? _mm_setzero_si128() : _mm_xor_si128(_mm_loadu_si128((const __m128i*)(out + ch)), fl);
            for (int i = 0; i < n; ++i)
              m = _mm_max_epu8(m, _mm_xor_si128(_mm_loadu_si128((const __m128i*)(src[i] + ch)), fl));
            _mm_storeu_si128((__m128i*)(out + ch), _mm_xor_si128(m, fl));
          }
          for (; ch < c; ++ch) {
            uint8_t m = first ? 0 : uint8_t(out[ch] ^ flip);
            for (int i = 0; i < n; ++i) m = std::max<uint8_t>(m, uint8_t(src[i][ch] ^ flip));
            out[ch] = uint8_t(m ^ flip);
          }
          first = false;
          n = 0;
        };
        for (int64_t ki = 0; ki < p.kh; ++ki) {
          const int64_t iy = oy * p.sh - p.pad_t + ki * p.dh;
          if (iy < 0 || iy >= p.h) continue;
          for (int64_t kj = 0; kj < p.kw; ++kj) {
            const int64_t ix = ox * p.sw - p.pad_l + kj * p.dw;
            if (ix < 0 || ix >= p.w) continue;
            src[n++] = xb + ((b * p.h + iy) * p.w + ix) * c;
            if (n == 256) flush();
          }
        }
        if (n > 0 || first) flush();  // a window wholly in the padding: the type's lowest value
      }
    }
  });
}

}  // namespace tessera::kernels::x86
