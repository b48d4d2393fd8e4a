#include "kernels/x86/conv2d.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"

namespace tessera::kernels::x86 {

namespace {

// Columns of one image/group: col[(ci*kh + r)*kw + s][oy*ow + ox] = x[ci][oy*sh - pt + r*dh][ox*sw - pl +
// s*dw].
void im2col(const Conv2dParams& p, const float* x, float* col, int64_t cg) {
  const int64_t oh = p.oh(), ow = p.ow();
  for (int64_t ci = 0; ci < cg; ++ci)
    for (int64_t r = 0; r < p.kh; ++r)
      for (int64_t s = 0; s < p.kw; ++s) {
        float* dst = col + ((ci * p.kh + r) * p.kw + s) * oh * ow;
        const float* src = x + ci * p.h * p.w;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t iy = oy * p.sh - p.pad_t + r * p.dh;
          float* drow = dst + oy * ow;
          if (iy < 0 || iy >= p.h) {
            std::memset(drow, 0, size_t(ow) * sizeof(float));
            continue;
          }
          const float* srow = src + iy * p.w;
          const int64_t x0 = s * p.dw - p.pad_l;
          if (p.sw == 1) {
            // valid ox range: 0 <= ox + x0 < w
            const int64_t lo = std::clamp<int64_t>(-x0, 0, ow), hi = std::clamp<int64_t>(p.w - x0, 0, ow);
            for (int64_t ox = 0; ox < lo; ++ox) drow[ox] = 0;
            if (hi > lo) std::memcpy(drow + lo, srow + lo + x0, size_t(hi - lo) * sizeof(float));
            for (int64_t ox = std::max(hi, lo); ox < ow; ++ox) drow[ox] = 0;
          } else {
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t ix = ox * p.sw + x0;
              drow[ox] = (ix >= 0 && ix < p.w) ? srow[ix] : 0.0f;
            }
          }
        }
      }
}

float apply_act(float v, const ConvEpilogue& ep) {
  return activate(v, ep.act, ep.clip_min, ep.clip_max);
}

// acc[i] += w * src[i]: the depthwise kernel's inner loop, for the baseline and for AVX2 + FMA (the NCHW
// depthwise conv ran at SSE2 width with an aliasing check per call).
inline __attribute__((always_inline)) void axpy_loop(float* __restrict acc, const float* __restrict src,
                                                     float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += w * src[i];
}
void axpy_base(float* __restrict acc, const float* __restrict src, float w, int64_t n) {
  axpy_loop(acc, src, w, n);
}
__attribute__((target("avx2,fma"))) void axpy_avx2(float* __restrict acc, const float* __restrict src,
                                                   float w, int64_t n) {
  axpy_loop(acc, src, w, n);
}

// Depthwise over NCHW, one output row at a time: each tap adds a shifted input row times its weight. A
// strided conv splits each input row into its sw phases first (phase j: elements j, j + sw, ...), so that
// every tap reads a contiguous run.
void depthwise(const Conv2dParams& p, const float* x, const float* w, const ConvEpilogue& ep, float* y,
               ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), sw = p.sw, plen = (p.w + sw - 1) / sw;
  const auto axpy = cpu_features().avx2 && cpu_features().fma ? axpy_avx2 : axpy_base;
  parallel_for(pool, p.n * p.c, 1, [&](int64_t b, int64_t e) {
    std::vector<float> acc(static_cast<size_t>(ow)), phases(static_cast<size_t>(sw > 1 ? sw * plen : 0));
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t c = nc % p.c;
      const float* xs = x + nc * p.h * p.w;
      const float* ws = w + c * p.kh * p.kw;
      float* ys = y + nc * oh * ow;
      const float bias = ep.bias ? ep.bias[c] : 0.0f;
      for (int64_t oy = 0; oy < oh; ++oy) {
        std::fill(acc.begin(), acc.end(), bias);
        for (int64_t r = 0; r < p.kh; ++r) {
          const int64_t iy = oy * p.sh - p.pad_t + r * p.dh;
          if (iy < 0 || iy >= p.h) continue;
          const float* srow = xs + iy * p.w;
          if (sw > 1)
            for (int64_t j = 0; j < sw; ++j)
              for (int64_t at = j, i = 0; at < p.w; at += sw, ++i) phases[size_t(j * plen + i)] = srow[at];
          for (int64_t s = 0; s < p.kw; ++s) {
            const float wv = ws[r * p.kw + s];
            const int64_t x0 = s * p.dw - p.pad_l;
            // ox range with 0 <= ox*sw + x0 < w
            int64_t lo = x0 >= 0 ? 0 : (-x0 + sw - 1) / sw;
            int64_t hi = p.w - x0 <= 0 ? 0 : (p.w - x0 - 1) / sw + 1;
            hi = std::min(hi, ow);
            if (hi <= lo) continue;
            // element lo * sw + x0 of the row: phase (that % sw), index (that / sw), contiguous over ox
            const int64_t first = lo * sw + x0;
            const float* src = sw == 1 ? srow + first : phases.data() + (first % sw) * plen + first / sw;
            axpy(acc.data() + lo, src, wv, hi - lo);
          }
        }
        float* yrow = ys + oy * ow;
        const float* rrow = ep.residual ? ep.residual + nc * oh * ow + oy * ow : nullptr;
        if (!rrow && ep.act == Activation::none) {
          std::copy(acc.begin(), acc.end(), yrow);
          continue;
        }
        for (int64_t ox = 0; ox < ow; ++ox)
          yrow[ox] = apply_act(acc[size_t(ox)] + (rrow ? rrow[ox] : 0.0f), ep);
      }
    }
  });
}

}  // namespace

size_t conv2d_scratch_floats(const Conv2dParams& p) {
  if (p.is_pointwise() || p.is_depthwise()) return 0;
  return size_t((p.c / p.groups) * p.kh * p.kw * p.oh() * p.ow());
}

void conv2d_f32(const Conv2dParams& p, const float* x, const float* w, const ConvEpilogue& ep, float* y,
                float* scratch, ThreadPool* pool) {
  if (p.is_depthwise()) {
    depthwise(p, x, w, ep, y, pool);
    return;
  }
  const int64_t cg = p.c / p.groups, ocg = p.oc / p.groups, oh = p.oh(), ow = p.ow(), ohw = oh * ow;
  const int64_t k = cg * p.kh * p.kw;
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = x + (b * p.c + g * cg) * p.h * p.w;
      const float* bmat = xg;
      if (!p.is_pointwise()) {
        im2col(p, xg, scratch, cg);
        bmat = scratch;
      }
      float* yg = y + (b * p.oc + g * ocg) * ohw;
      GemmEpilogue gep;
      gep.row_bias = ep.bias ? ep.bias + g * ocg : nullptr;
      gep.residual = ep.residual ? ep.residual + (b * p.oc + g * ocg) * ohw : nullptr;
      gep.ldr = ohw;
      gep.act = ep.act;
      gep.clip_min = ep.clip_min;
      gep.clip_max = ep.clip_max;
      // Y[ocg, ohw] = W[ocg, k] * col[k, ohw]
      sgemm(ocg, ohw, k, w + g * ocg * k, k, false, bmat, ohw, false, yg, ohw, gep, pool);
    }
}

void conv_transpose2d_f32(const ConvTranspose2dParams& p, const float* x, const float* w, const float* bias,
                          float* y, ThreadPool* pool) {
  const int64_t taps = p.kh * p.kw, hw = p.h * p.w, ohw = p.oh * p.ow, rows = p.oc * taps;
  if (p.n <= 0 || ohw <= 0) return;
  thread_local AlignedScratch tl_cols;
  float* cols = hw > 0 && rows > 0 ? tl_cols.get(size_t(rows * hw)) : nullptr;
  for (int64_t img = 0; img < p.n; ++img) {
    float* yi = y + img * p.oc * ohw;
    // cols[o * taps + t][pixel] = sum over c of w[c][o][t] x[c][pixel]
    if (cols && p.c > 0)
      sgemm(rows, hw, p.c, w, rows, true, x + img * p.c * hw, hw, false, cols, hw, {}, pool);
    else if (cols)
      std::fill(cols, cols + rows * hw, 0.0f);
    parallel_for(pool, p.oc, 1, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        float* yo = yi + o * ohw;
        std::fill(yo, yo + ohw, bias ? bias[o] : 0.0f);
        if (!cols) continue;
        for (int64_t r = 0; r < p.kh; ++r)
          for (int64_t q = 0; q < p.kw; ++q) {
            const float* cr = cols + (o * taps + r * p.kw + q) * hw;
            const int64_t off = q * p.dw - p.pad_l, last = p.ow - 1 - off;
            // the input columns whose output column ix * sw + off lies in [0, ow)
            const int64_t ix0 = off >= 0 ? 0 : (-off + p.sw - 1) / p.sw;
            const int64_t ix1 = last < 0 ? 0 : std::min(p.w, last / p.sw + 1);
            for (int64_t iy = 0; iy < p.h; ++iy) {
              const int64_t oy = iy * p.sh - p.pad_t + r * p.dh;
              if (oy < 0 || oy >= p.oh) continue;
              float* yr = yo + oy * p.ow;
              const float* src = cr + iy * p.w;
              if (p.sw == 1)
                for (int64_t ix = ix0; ix < ix1; ++ix) yr[ix + off] += src[ix];
              else
                for (int64_t ix = ix0; ix < ix1; ++ix) yr[ix * p.sw + off] += src[ix];
            }
          }
      }
    });
  }
}

}  // namespace tessera::kernels::x86
