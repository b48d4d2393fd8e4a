// Depthwise QLinearConv / ConvInteger for AVX-512: each channel's image is converted once into a zero-padded
// f32 plane of x - x_zero (its border is the zero point's 0), then every output row is 16 columns of FMAs
// per tap out of that plane, with no edge cases. The sums are exact: at most 258 products of |x - zx| and
// |w - zw| <= 255 keep every partial sum an integer below 2^24. The requantization (as the reference and
// onnxruntime: f32(sum + bias) * scale, clamped, rounded half to even, plus y_zero) runs on the accumulators.
// On the GEMM kernels a depthwise conv was one output channel per group (a 1-row GEMM per channel): 5x
// onnxruntime's time on a QDQ MobileNetV2.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/x86/qgemm.h"

namespace tessera::kernels::x86 {

// Round half to even, whatever MXCSR says.
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

namespace {

const __m512i kEvens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);

// 16 outputs' sums from the padded plane: taps (r, s) read row r * dh, column (ox * sw + s * dw). KH, KW, SW
// fixed (0: the run-time values) so that the common 3x3 and 5x5 convs unroll.
template <int KH, int KW, int SW>
inline __attribute__((always_inline)) __m512 tap_sums(const Conv2dParams& p, const float* rows, int64_t wpp,
                                                      int64_t ox, int64_t ow, const float* wc) {
  const int64_t kh = KH ? KH : p.kh, kw = KW ? KW : p.kw, sw = SW ? SW : p.sw;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t r = 0; r < kh; ++r)
    for (int64_t s = 0; s < kw; ++s) {
      const float* at = rows + r * p.dh * wpp + ox * sw + s * p.dw;
      __m512 v;
      if (sw == 1) {
        v = _mm512_loadu_ps(at);
      } else if (sw == 2) {
        v = _mm512_permutex2var_ps(_mm512_loadu_ps(at), kEvens, _mm512_loadu_ps(at + 16));
      } else {
        alignas(64) float g[16];
        for (int q = 0; q < 16; ++q) g[q] = ox + q < ow ? at[q * sw] : 0.0f;
        v = _mm512_load_ps(g);
      }
      acc = _mm512_fmadd_ps(_mm512_set1_ps(wc[r * kw + s]), v, acc);
    }
  return acc;
}

}  // namespace

void qdepthwise_int8__avx512f(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                              const float* w, const QOutput& out, ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), taps = p.kh * p.kw, hp = p.h + p.pad_t + p.pad_b;
  const int64_t ow16 = (ow + 15) / 16 * 16;
  // a row is read up to column (ow16 - 1) sw + (kw - 1) dw, and 16 more for a stride-2 pair of loads
  const int64_t wpp = std::max(p.w + p.pad_l + p.pad_r, (ow16 - 1) * p.sw + (p.kw - 1) * p.dw + 1) + 16;
  parallel_for(pool, p.n * p.c, 1, [&](int64_t b, int64_t e) {
    std::vector<float> plane(size_t(hp * wpp + 16));
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t c = nc % p.c;
      // the padded plane of x - x_zero (its border and slack were zeroed once: every channel writes the same
      // interior)
      const uint8_t* xs = static_cast<const uint8_t*>(x) + nc * p.h * p.w;
      const __m512 zx = _mm512_set1_ps(float(x_zero));
      for (int64_t iy = 0; iy < p.h; ++iy) {
        float* d = plane.data() + (iy + p.pad_t) * wpp + p.pad_l;
        const uint8_t* s = xs + iy * p.w;
        for (int64_t ix = 0; ix < p.w; ix += 16) {
          const __mmask16 m = p.w - ix >= 16 ? __mmask16(0xffff) : __mmask16((1u << (p.w - ix)) - 1);
          const __m128i v = _mm_maskz_loadu_epi8(m, s + ix);
          const __m512i wide = x_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
          _mm512_mask_storeu_ps(d + ix, m, _mm512_sub_ps(_mm512_cvtepi32_ps(wide), zx));
        }
      }
      const float* wc = w + c * taps;
      const int32_t bias = out.bias ? out.bias[c] : 0;
      const __m512 sc = _mm512_set1_ps(out.scale ? out.scale[out.scale_per_row ? c : 0] : 1.0f);
      const __m512 lo = _mm512_set1_ps(float((out.type == QOut::s8 ? -128 : 0) - out.y_zero)),
                   hi = _mm512_set1_ps(float((out.type == QOut::s8 ? 127 : 255) - out.y_zero));
      const __m512i yz = _mm512_set1_epi32(out.y_zero);
      const auto sums = [&](const float* rows, int64_t ox) {
        if (p.kh == 3 && p.kw == 3 && p.sw == 1) return tap_sums<3, 3, 1>(p, rows, wpp, ox, ow, wc);
        if (p.kh == 3 && p.kw == 3 && p.sw == 2) return tap_sums<3, 3, 2>(p, rows, wpp, ox, ow, wc);
        if (p.kh == 5 && p.kw == 5 && p.sw == 1) return tap_sums<5, 5, 1>(p, rows, wpp, ox, ow, wc);
        if (p.kh == 5 && p.kw == 5 && p.sw == 2) return tap_sums<5, 5, 2>(p, rows, wpp, ox, ow, wc);
        return tap_sums<0, 0, 0>(p, rows, wpp, ox, ow, wc);
      };
      for (int64_t oy = 0; oy < oh; ++oy) {
        const float* rows = plane.data() + oy * p.sh * wpp;
        for (int64_t ox = 0; ox < ow; ox += 16) {
          const __m512 acc = sums(rows, ox);
          const __mmask16 m = ow - ox >= 16 ? __mmask16(0xffff) : __mmask16((1u << (ow - ox)) - 1);
          const __m512i sum = _mm512_add_epi32(_mm512_cvtps_epi32(acc), _mm512_set1_epi32(bias));
          const int64_t o = (nc * oh + oy) * ow + ox;
          if (out.type == QOut::i32) {
            _mm512_mask_storeu_epi32(static_cast<int32_t*>(out.data) + o, m, sum);
            continue;
          }
          // onnxruntime's requantization: f32 product, clamped to the range less the zero point, rounded
          const __m512 f = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), sc), lo), hi);
          const __m512i q = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, kRound), yz);
          _mm_mask_storeu_epi8(static_cast<uint8_t*>(out.data) + o, m, _mm512_cvtepi32_epi8(q));
        }
      }
    }
  });
}

}  // namespace tessera::kernels::x86
