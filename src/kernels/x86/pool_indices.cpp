#include "kernels/x86/pool_indices.h"

#include <algorithm>
#include <cstring>

namespace tessera::kernels::x86 {

void max_pool2d_indices_f32(const PoolParams& p, const float* x, float* y, int64_t* indices,
                            bool column_major, ThreadPool* pool) {
  const Conv2dParams& g = p.g;
  const int64_t planes = g.n, H = g.h, W = g.w, OH = p.oh, OW = p.ow, in_plane = H * W, out_plane = OH * OW;
  // the taps of output position o along an axis that fall inside [0, len): [first, last)
  auto taps = [](int64_t o, int64_t s, int64_t pad, int64_t d, int64_t k, int64_t len, int64_t& first,
                 int64_t& last) {
    const int64_t start = o * s - pad;
    first = start >= 0 ? 0 : (-start + d - 1) / d;
    last = start >= len ? 0 : start + (k - 1) * d < len ? k : (len - 1 - start) / d + 1;
    last = std::max(first, std::min(last, k));
  };
  auto rows = [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* xp = x + pl * in_plane;
      float* yp = y + pl * out_plane;
      int64_t* ip = indices + pl * out_plane;
      for (int64_t oy = 0; oy < OH; ++oy) {
        int64_t r0, r1;
        taps(oy, g.sh, g.pad_t, g.dh, g.kh, H, r0, r1);
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t c0, c1;
          taps(ox, g.sw, g.pad_l, g.dw, g.kw, W, c0, c1);
          float best = 0.0f;
          int64_t at = -1;
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t iy = oy * g.sh - g.pad_t + r * g.dh;
            const float* row = xp + iy * W;
            for (int64_t c = c0; c < c1; ++c) {
              const int64_t ix = ox * g.sw - g.pad_l + c * g.dw;
              const float v = row[ix];
              if (at < 0 || v > best || (v != v && best == best)) best = v, at = iy * W + ix;
            }
          }
          const int64_t o = oy * OW + ox;
          yp[o] = at < 0 ? 0.0f : best;
          const int64_t flat = at < 0 ? 0 : column_major ? (at % W) * H + at / W : at;
          ip[o] = pl * in_plane + flat;
        }
      }
    }
  };
  const double work = double(planes) * double(out_plane) * double(g.kh * g.kw);
  parallel_for(work >= double(1 << 16) ? pool : nullptr, planes, 1, rows);
}

void max_unpool_scatter(const void* x, size_t elem, const int64_t* idx, int64_t n, int64_t total, void* y) {
  std::memset(y, 0, size_t(total) * elem);
  auto scatter = [&](auto tag) {
    using T = decltype(tag);
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    for (int64_t j = 0; j < n; ++j) ys[idx[j]] = xs[j];
  };
  switch (elem) {  // the values' bits, whatever their type
    case 1:
      scatter(uint8_t{});
      break;
    case 2:
      scatter(uint16_t{});
      break;
    case 4:
      scatter(uint32_t{});
      break;
    case 8:
      scatter(uint64_t{});
      break;
    default:
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(static_cast<char*>(y) + size_t(idx[j]) * elem,
                    static_cast<const char*>(x) + size_t(j) * elem, elem);
  }
}

}  // namespace tessera::kernels::x86
