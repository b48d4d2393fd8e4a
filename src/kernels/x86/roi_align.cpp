#include "kernels/x86/roi_align.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kChunk = 512;  // samples whose taps a task holds at once (22 KiB: in L1 beside the planes)
constexpr int64_t kChannels = 16;  // channels a task takes of one box

struct Sample {
  int32_t bin;     // output pixel of the box
  int32_t first;   // the bin's first sample (max mode starts from it)
  int32_t inside;  // 0: outside the map, its value 0
  int32_t off[4];
  float wt[4];
};

// One box's geometry, as the reference computes it (double).
struct Box {
  double sh, sw, bh, bw;
  int64_t gh, gw;
  double count;
};

Box box_of(const RoiAlignParams& p, const float* roi) {
  const double off = p.half_pixel ? 0.5 : 0.0;
  const double sw = roi[0] * p.spatial_scale - off, sh = roi[1] * p.spatial_scale - off;
  const double ew = roi[2] * p.spatial_scale - off, eh = roi[3] * p.spatial_scale - off;
  double rw = ew - sw, rh = eh - sh;
  if (!p.half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
  Box b;
  b.sh = sh, b.sw = sw, b.bh = rh / double(p.oh), b.bw = rw / double(p.ow);
  b.gh = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rh / double(p.oh)));
  b.gw = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rw / double(p.ow)));
  b.count = double(std::max<int64_t>(b.gh * b.gw, 1));
  return b;
}

// One sampling position on an axis (rows: py * gh + iy; columns: px * gw + ix), as the reference takes it:
// the two pixels and their weights, or outside the map. The position on one axis depends only on that
// axis's bin and sample, so a box's taps are products of its row and column positions.
struct AxisTap {
  int32_t i0, i1;
  double lo, hi;  // weights of i0 (1 - l) and i1 (l)
  bool inside;
};

void axis_taps(double start, double bin, int64_t bins, int64_t g, int64_t len, std::vector<AxisTap>& out) {
  out.resize(size_t(bins * g));
  for (int64_t b = 0; b < bins; ++b)
    for (int64_t i = 0; i < g; ++i) {
      double v = start + double(b) * bin + (double(i) + 0.5) * bin / double(g);
      AxisTap& t = out[size_t(b * g + i)];
      t.inside = !(v < -1.0 || v > double(len));
      if (!t.inside) continue;
      v = std::max(v, 0.0);
      int64_t i0 = int64_t(v), i1;
      if (i0 >= len - 1) {
        i0 = i1 = len - 1;
        v = double(i0);
      } else {
        i1 = i0 + 1;
      }
      const double l = v - double(i0);
      t.i0 = int32_t(i0), t.i1 = int32_t(i1), t.lo = 1 - l, t.hi = l;
    }
}

}  // namespace

void roi_align_f32(const RoiAlignParams& p, const float* x, const float* rois, const int64_t* batch,
                   int64_t r, float* y, ThreadPool* pool) {
  const int64_t bins = p.oh * p.ow, plane = p.h * p.w, cblocks = (p.c + kChannels - 1) / kChannels;
  auto task = [&](int64_t t0, int64_t t1) {
    Sample tab[kChunk];
    std::vector<AxisTap> ys, xs;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t ri = t / cblocks, c0 = t % cblocks * kChannels, c1 = std::min(p.c, c0 + kChannels);
      const Box b = box_of(p, rois + ri * 4);
      const float* xb = x + batch[ri] * p.c * plane;
      float* yb = y + ri * p.c * bins;
      for (int64_t ci = c0; ci < c1; ++ci) std::fill(yb + ci * bins, yb + (ci + 1) * bins, 0.0f);
      if (b.gh <= 0 || b.gw <= 0) continue;  // an empty box: no samples, zeros
      axis_taps(b.sh, b.bh, p.oh, b.gh, p.h, ys);
      axis_taps(b.sw, b.bw, p.ow, b.gw, p.w, xs);
      // samples bin-major, then the bin's rows and columns; (py, px, iy, ix) the next one to tabulate
      int64_t py = 0, px = 0, iy = 0, ix = 0;
      const int64_t total = bins * b.gh * b.gw;
      for (int64_t s0 = 0; s0 < total; s0 += kChunk) {
        const int64_t n = std::min(kChunk, total - s0);
        for (int64_t i = 0; i < n; ++i) {
          const AxisTap &ty = ys[size_t(py * b.gh + iy)], &tx = xs[size_t(px * b.gw + ix)];
          Sample& e = tab[i];
          e.bin = int32_t(py * p.ow + px), e.first = iy == 0 && ix == 0, e.inside = ty.inside && tx.inside;
          if (e.inside) {
            e.off[0] = int32_t(ty.i0 * p.w + tx.i0), e.off[1] = int32_t(ty.i0 * p.w + tx.i1);
            e.off[2] = int32_t(ty.i1 * p.w + tx.i0), e.off[3] = int32_t(ty.i1 * p.w + tx.i1);
            e.wt[0] = float(ty.lo * tx.lo), e.wt[1] = float(ty.lo * tx.hi);
            e.wt[2] = float(ty.hi * tx.lo), e.wt[3] = float(ty.hi * tx.hi);
          }
          if (++ix == b.gw) {
            ix = 0;
            if (++iy == b.gh) {
              iy = 0;
              if (++px == p.ow) px = 0, ++py;
            }
          }
        }
        for (int64_t ci = c0; ci < c1; ++ci) {
          const float* xp = xb + ci * plane;
          float* yp = yb + ci * bins;
          if (!p.max_mode) {
            // a bin's samples are consecutive: summed in a register, stored once (through memory each
            // sum waited on the store before it)
            float acc = 0;
            for (int64_t i = 0; i < n; ++i) {
              const Sample& e = tab[i];
              if (e.inside)
                acc += e.wt[0] * xp[e.off[0]] + e.wt[1] * xp[e.off[1]] + e.wt[2] * xp[e.off[2]] +
                       e.wt[3] * xp[e.off[3]];
              if (i + 1 == n || tab[i + 1].bin != e.bin) yp[e.bin] += acc, acc = 0;
            }
          } else {
            for (int64_t i = 0; i < n; ++i) {
              const Sample& e = tab[i];
              float v = 0;
              if (e.inside) {
                const float t1 = e.wt[0] * xp[e.off[0]], t2 = e.wt[1] * xp[e.off[1]],
                            t3 = e.wt[2] * xp[e.off[2]], t4 = e.wt[3] * xp[e.off[3]];
                v = std::max(std::max(t1, t2), std::max(t3, t4));
              }
              if (e.first || v > yp[e.bin]) yp[e.bin] = v;
            }
          }
        }
      }
      if (!p.max_mode) {
        const float inv = float(1.0 / b.count);
        for (int64_t ci = c0; ci < c1; ++ci)
          for (int64_t i = 0; i < bins; ++i) yb[ci * bins + i] *= inv;
      }
    }
  };
  const double work = double(r) * double(p.c) * double(bins) * 4.0;
  parallel_for(work >= double(1 << 15) ? pool : nullptr, r * cblocks, 1, task);
}

}  // namespace tessera::kernels::x86
