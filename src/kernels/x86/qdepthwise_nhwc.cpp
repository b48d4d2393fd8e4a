// Depthwise QLinearConv / ConvInteger over NHWC (layout_nhwc's int8 regions): the weights' packing, and the
// dispatch to the AVX-512 kernel (avx512f/qdepthwise_nhwc__avx512f.cpp) or a portable one. The portable
// kernel sums (x - x_zero) (w - w_zero) over the taps inside the image in int32 (at most 258 products of
// bytes: no overflow), the channels of a pixel innermost, and requantizes as the AVX-512 kernel does:
// f32(sum + bias) * scale, clamped to the range less y_zero, rounded half to even, plus y_zero.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/x86/qgemm.h"

namespace tessera::kernels::x86 {

void QDepthwiseW::pack(const void* w, bool w_signed, const int32_t* w_zero, bool w_zero_per_oc, int64_t c,
                       int64_t kh, int64_t kw, float* out) {
  const int64_t taps = kh * kw;
  for (int64_t ch = 0; ch < c; ++ch) {
    const int32_t zero = w_zero_per_oc ? w_zero[ch] : w_zero ? w_zero[0] : 0;
    int32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = ch * taps + t;
      const int32_t v = (w_signed ? int32_t(static_cast<const int8_t*>(w)[i])
                                  : int32_t(static_cast<const uint8_t*>(w)[i])) -
                        zero;
      out[t * c + ch] = float(v);
      sum += v;
    }
    out[taps * c + ch] = float(sum);
  }
}

// Not static: the unit test reaches it directly (declared there), to check it where AVX-512 is dispatched.
void qdepthwise_nhwc_int8_portable(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                                   const float* wf, const QOutput& out, ThreadPool* pool);

void qdepthwise_nhwc_int8_portable(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                                   const float* wf, const QOutput& out, ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), c = p.c, taps = p.kh * p.kw;
  if (p.n <= 0 || oh <= 0 || ow <= 0 || c <= 0) return;
  std::vector<int32_t> wi(size_t(taps * c));
  for (size_t i = 0; i < wi.size(); ++i) wi[i] = int32_t(wf[i]);
  const float lo = float((out.type == QOut::s8 ? -128 : 0) - out.y_zero),
              hi = float((out.type == QOut::s8 ? 127 : 255) - out.y_zero);
  const auto run = [&](auto xp, int64_t b, int64_t e) {
    std::vector<int32_t> acc(static_cast<size_t>(c));
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / oh, oy = t % oh;
      for (int64_t ox = 0; ox < ow; ++ox) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t i = 0; i < p.kh; ++i) {
          const int64_t iy = oy * p.sh - p.pad_t + i * p.dh;
          if (iy < 0 || iy >= p.h) continue;
          for (int64_t j = 0; j < p.kw; ++j) {
            const int64_t ix = ox * p.sw - p.pad_l + j * p.dw;
            if (ix < 0 || ix >= p.w) continue;
            const auto* s = xp + ((img * p.h + iy) * p.w + ix) * c;
            const int32_t* wt = wi.data() + (i * p.kw + j) * c;
            for (int64_t ch = 0; ch < c; ++ch) acc[size_t(ch)] += (int32_t(s[ch]) - x_zero) * wt[ch];
          }
        }
        const int64_t o = ((img * oh + oy) * ow + ox) * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          const int32_t sum = int32_t(uint32_t(acc[size_t(ch)]) + (out.bias ? uint32_t(out.bias[ch]) : 0u));
          if (out.type == QOut::i32) {
            static_cast<int32_t*>(out.data)[o + ch] = sum;
            continue;
          }
          // onnxruntime's requantization: f32 product, clamped to the range less the zero point, rounded
          // half to even (the default rounding mode)
          const float sc = out.scale[out.scale_per_row ? ch : 0];
          const float v = std::min(std::max(float(sum) * sc, lo), hi);
          static_cast<uint8_t*>(out.data)[o + ch] = uint8_t(int32_t(std::nearbyint(v)) + out.y_zero);
        }
      }
    }
  };
  parallel_for(pool, p.n * oh, 1, [&](int64_t b, int64_t e) {
    if (x_signed)
      run(static_cast<const int8_t*>(x), b, e);
    else
      run(static_cast<const uint8_t*>(x), b, e);
  });
}

void qdepthwise_nhwc_int8(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                          const float* wf, const QOutput& out, ThreadPool* pool) {
  if (cpu_features().avx512_core()) {
    qdepthwise_nhwc_int8__avx512f(p, x, x_signed, x_zero, wf, out, pool);
    return;
  }
  qdepthwise_nhwc_int8_portable(p, x, x_signed, x_zero, wf, out, pool);
}

}  // namespace tessera::kernels::x86
