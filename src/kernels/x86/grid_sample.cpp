#include "kernels/x86/grid_sample.h"

#include <algorithm>
#include <cmath>

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kBlock = 256;  // output pixels a task takes over all channels (their taps stay in L1)

// A grid coordinate g in [-1, 1] as a position on an axis of `len` pixels, as the reference computes it (in
// float), with the border mode's clamp of positions past the outer pixel edges.
float position(float g, int64_t len, const GridSampleParams& p) {
  const float n = float(len);
  float v = p.align_corners ? (g + 1) / 2.0f * (n - 1) : ((g + 1) * n - 1) / 2.0f;
  if (p.nearest) v = std::nearbyint(v);
  const float lo = p.align_corners ? 0.0f : -0.5f, hi = p.align_corners ? n - 1 : n - 0.5f;
  if (p.border && (v < lo || v > hi)) v = std::clamp(v, 0.0f, n - 1);
  if (!std::isfinite(v)) return -2.0f;  // NaN or inf: every tap outside (zeros), or pixel 0 (border)
  return std::clamp(v, -2.0f, n + 1);   // (far outside reads the same zeros; keeps the index in range)
}

}  // namespace

void grid_sample_f32(const GridSampleParams& p, const float* x, const float* grid, float* y,
                     ThreadPool* pool) {
  const int64_t plane = p.h * p.w, out_plane = p.oh * p.ow, blocks = (out_plane + kBlock - 1) / kBlock;
  const int taps = p.nearest ? 1 : 4;
  auto task = [&](int64_t t0, int64_t t1) {
    int32_t off[kBlock][4];
    float wt[kBlock][4];
    uint8_t inside[kBlock];  // a bit per tap inside the image (the taps outside are left out, not 0 * x[0])
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / blocks, p0 = t % blocks * kBlock, cnt = std::min(kBlock, out_plane - p0);
      const float* g = grid + (n * out_plane + p0) * 2;
      // an index on an axis of len: clamped (border) or marked outside (zeros)
      auto index = [&](int64_t i, int64_t len, bool& inside) {
        if (i >= 0 && i < len) return i;
        if (p.border) return std::clamp<int64_t>(i, 0, len - 1);
        inside = false;
        return int64_t(0);
      };
      for (int64_t k = 0; k < cnt; ++k) {
        const float fx = position(g[2 * k], p.w, p), fy = position(g[2 * k + 1], p.h, p);
        if (p.nearest) {
          bool in = true;
          const int64_t iy = index(int64_t(fy), p.h, in), ix = index(int64_t(fx), p.w, in);
          off[k][0] = int32_t(iy * p.w + ix);
          wt[k][0] = in ? 1.0f : 0.0f;
          inside[k] = in ? 1 : 0;
          continue;
        }
        const float x0 = std::floor(fx), y0 = std::floor(fy), tx = fx - x0, ty = fy - y0;
        inside[k] = 0;
        for (int q = 0; q < 4; ++q) {
          bool in = true;
          const int64_t iy = index(int64_t(y0) + q / 2, p.h, in), ix = index(int64_t(x0) + q % 2, p.w, in);
          off[k][q] = int32_t(iy * p.w + ix);
          wt[k][q] = in ? (q / 2 ? ty : 1 - ty) * (q % 2 ? tx : 1 - tx) : 0.0f;
          inside[k] = uint8_t(inside[k] | (in ? 1 << q : 0));
        }
      }
      for (int64_t c = 0; c < p.c; ++c) {
        const float* xp = x + (n * p.c + c) * plane;
        float* yp = y + (n * p.c + c) * out_plane + p0;
        for (int64_t k = 0; k < cnt; ++k) {
          if (taps == 1) {
            yp[k] = inside[k] ? xp[off[k][0]] : 0.0f;
          } else if (inside[k] == 15) {
            yp[k] = wt[k][0] * xp[off[k][0]] + wt[k][1] * xp[off[k][1]] + wt[k][2] * xp[off[k][2]] +
                    wt[k][3] * xp[off[k][3]];
          } else {
            float s = 0.0f;
            for (int q = 0; q < 4; ++q)
              if (inside[k] >> q & 1) s += wt[k][q] * xp[off[k][q]];
            yp[k] = s;
          }
        }
      }
    }
  };
  const double work = double(p.n) * double(out_plane) * double(p.c) * taps;
  parallel_for(work >= double(1 << 16) ? pool : nullptr, p.n * blocks, 1, task);
}

}  // namespace tessera::kernels::x86
