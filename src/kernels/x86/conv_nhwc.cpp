#include "kernels/x86/conv_nhwc.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/cpu_features.h"

namespace tessera::kernels::x86 {

#if defined(__x86_64__) || defined(_M_X64)
#define TESSERA_CONV_X86 1
#endif

ConvIsa conv_isa() {
  const CpuFeatures& f = cpu_features();
#ifdef TESSERA_CONV_X86
  if (f.avx512f) return ConvIsa::avx512f;
  if (f.avx2 && f.fma) return ConvIsa::avx2;
#endif
  (void)f;
  return ConvIsa::portable;
}

bool conv_isa_available(ConvIsa isa) {
  return isa == ConvIsa::portable || (isa == ConvIsa::avx2 && conv_isa() != ConvIsa::portable) ||
         (isa == ConvIsa::avx512f && conv_isa() == ConvIsa::avx512f);
}

int64_t conv_nhwc_panel_width(int64_t oc, int64_t panel) {
  const int64_t rest = oc - panel * kConvPanel;
  return std::min<int64_t>(kConvPanel, (rest + 15) / 16 * 16);
}

size_t conv_nhwc_packed_floats(int64_t oc, int64_t k) {
  const int64_t full = oc / kConvPanel;
  return size_t(full * kConvPanel * k + (oc % kConvPanel ? conv_nhwc_panel_width(oc, full) * k : 0));
}

void conv_nhwc_pack_weights(const float* w, int64_t oc, int64_t c, int64_t kh, int64_t kw, float* out) {
  const int64_t k = c * kh * kw, np = (oc + kConvPanel - 1) / kConvPanel;
  for (int64_t j = 0; j < np; ++j) {
    const int64_t pw = conv_nhwc_panel_width(oc, j);
    float* panel = out + j * kConvPanel * k;
    for (int64_t row = 0; row < k; ++row) {
      const int64_t t = row / c, ci = row % c, r = t / kw, s = t % kw;
      for (int64_t q = 0; q < pw; ++q) {
        const int64_t o = j * kConvPanel + q;
        panel[row * pw + q] = o < oc ? w[((o * c + ci) * kh + r) * kw + s] : 0.0f;
      }
    }
  }
}

float conv_nhwc_packed_at(const float* packed, int64_t oc, int64_t k, int64_t o, int64_t row) {
  const int64_t j = o / kConvPanel, pw = conv_nhwc_panel_width(oc, j);
  return packed[j * kConvPanel * k + row * pw + (o - j * kConvPanel)];
}

void dw_nhwc_pack_weights(const float* w, int64_t c, int64_t kh, int64_t kw, float* out) {
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t t = 0; t < kh * kw; ++t) out[t * c + ch] = w[ch * kh * kw + t];
}

namespace {

float act1(float v, Activation act, float lo, float hi) {
  if (act == Activation::relu) return v > 0 ? v : 0;
  if (act == Activation::clip) return std::min(std::max(v, lo), hi);
  return v;
}

// Portable micro-kernel: 4 pixels x 16 channels.
void conv_ukr_portable(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw,
                       float* y, int64_t ldy, int64_t mr, int64_t nr, bool accumulate,
                       const ConvTileEpilogue* ep) {
  constexpr int MR = 4, NR = 16;
  float acc[MR][NR] = {};
  for (int64_t t = 0; t < ntaps; ++t)
    for (int64_t ci = 0; ci < kc; ++ci) {
      for (int i = 0; i < MR; ++i) {
        const float a = rows[t * MR + i][ci];
        for (int j = 0; j < NR; ++j) acc[i][j] += a * w[j];
      }
      w += ldw;
    }
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j) {
      float s = acc[i][j];
      if (accumulate) s += y[i * ldy + j];
      if (ep) {
        if (ep->bias) s += ep->bias[j];
        if (ep->residual) s += ep->residual[i * ep->ldr + j];
        s = act1(s, ep->act, ep->clip_min, ep->clip_max);
      }
      y[i * ldy + j] = s;
    }
}

void dw_row_portable(const DwRowArgs& a) {
  const int64_t c = a.c;
  for (int64_t ox = a.ox0; ox < a.ox0 + a.cnt; ++ox) {
    float* yo = a.y + (ox - a.ox0) * c;
    for (int64_t ch = 0; ch < c; ++ch) yo[ch] = a.bias ? a.bias[ch] : 0.0f;
    const int64_t ixb = ox * a.sw + a.ix0;
    for (int64_t r = 0; r < a.kh; ++r) {
      const int64_t iy = a.iy0 + r * a.dh;
      if (iy < 0 || iy >= a.h) continue;
      for (int64_t q = 0; q < a.kw; ++q) {
        const int64_t ix = ixb + q * a.dw;
        if (ix < 0 || ix >= a.w) continue;
        const float* xp = a.x + (iy * a.w + ix) * c;
        const float* wp = a.wp + (r * a.kw + q) * c;
        for (int64_t ch = 0; ch < c; ++ch) yo[ch] += xp[ch] * wp[ch];
      }
    }
    const float* ro = a.residual ? a.residual + (ox - a.ox0) * c : nullptr;
    for (int64_t ch = 0; ch < c; ++ch)
      yo[ch] = act1(yo[ch] + (ro ? ro[ch] : 0.0f), a.act, a.clip_min, a.clip_max);
  }
}

struct KBlock {
  int64_t t0, t1, c0, c1;
};

std::vector<KBlock> k_blocks(int64_t taps, int64_t c, int64_t kc) {
  std::vector<KBlock> b;
  if (c <= kc) {
    int64_t tb = std::max<int64_t>(1, kc / c);
    const int64_t nb = (taps + tb - 1) / tb;
    tb = (taps + nb - 1) / nb;
    for (int64_t t = 0; t < taps; t += tb) b.push_back({t, std::min(taps, t + tb), 0, c});
  } else {
    const int64_t nch = (c + kc - 1) / kc;
    const int64_t csz = ((c + nch - 1) / nch + 15) / 16 * 16;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c0 = 0; c0 < c; c0 += csz) b.push_back({t, t + 1, c0, std::min(c, c0 + csz)});
  }
  return b;
}

thread_local std::vector<float> tl_zeros;
thread_local std::vector<const float*> tl_rows;

void conv_dense(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                ThreadPool* pool, ConvIsa isa) {
  const int64_t C = p.c, OC = p.oc, taps = p.kh * p.kw, K = taps * C;
  const int64_t oh = p.oh(), ow = p.ow(), M = p.n * oh * ow;
  const int64_t np = (OC + kConvPanel - 1) / kConvPanel;
  const std::vector<KBlock> blocks = k_blocks(taps, C, 512);
  int64_t max_taps = 0;
  for (const KBlock& b : blocks) max_taps = std::max(max_taps, b.t1 - b.t0);
  constexpr int64_t kChunk = 96;  // pixels per task: a multiple of every MR
  const int64_t nchunks = (M + kChunk - 1) / kChunk;
  parallel_for(pool, np * nchunks, 1, [&](int64_t tb, int64_t te) {
    if (tl_zeros.size() < size_t(C)) tl_zeros.assign(size_t(C), 0.0f);
    const float* zeros = tl_zeros.data();
    if (tl_rows.size() < size_t(max_taps * 16)) tl_rows.resize(size_t(max_taps * 16));
    const float** rows = tl_rows.data();
    int64_t iy0[kChunk], ix0[kChunk];
    const float* base[kChunk];
    for (int64_t task = tb; task < te; ++task) {
      const int64_t j = task / nchunks, q = task % nchunks;
      const int64_t m0 = q * kChunk, m1 = std::min(M, m0 + kChunk);
      for (int64_t m = m0; m < m1; ++m) {
        const int64_t img = m / (oh * ow), rem = m % (oh * ow), oy = rem / ow, ox = rem % ow;
        iy0[m - m0] = oy * p.sh - p.pad_t;
        ix0[m - m0] = ox * p.sw - p.pad_l;
        base[m - m0] = x + img * p.h * p.w * C;
      }
      const int64_t pw = conv_nhwc_panel_width(OC, j), ncols = std::min(pw, OC - j * kConvPanel);
      const float* panel = wp + j * kConvPanel * K;
      ConvUkrInfo u{conv_ukr_portable, 4, 16};
#ifdef TESSERA_CONV_X86
      if (isa == ConvIsa::avx512f)
        u = conv_ukr_avx512f(pw);
      else if (isa == ConvIsa::avx2)
        u = conv_ukr_avx2(pw);
#endif
      for (size_t bi = 0; bi < blocks.size(); ++bi) {
        const KBlock& b = blocks[bi];
        const bool last = bi + 1 == blocks.size();
        const float* wb = panel + (b.t0 * C + b.c0) * pw;
        for (int64_t mt = m0; mt < m1; mt += u.mr) {
          const int64_t mr = std::min(u.mr, m1 - mt);
          for (int64_t t = b.t0; t < b.t1; ++t) {
            const int64_t r = t / p.kw, s = t % p.kw;
            const float** rt = rows + (t - b.t0) * u.mr;
            for (int64_t i = 0; i < u.mr; ++i) {
              if (i >= mr) {
                rt[i] = zeros;
                continue;
              }
              const int64_t li = mt - m0 + i, iy = iy0[li] + r * p.dh, ix = ix0[li] + s * p.dw;
              rt[i] = (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) ? base[li] + (iy * p.w + ix) * C + b.c0
                                                                   : zeros;
            }
          }
          for (int64_t j0 = 0; j0 < ncols; j0 += u.nr) {
            const int64_t col = j * kConvPanel + j0;
            ConvTileEpilogue te_{ep.bias ? ep.bias + col : nullptr,
                                 ep.residual ? ep.residual + mt * OC + col : nullptr,
                                 OC,
                                 ep.act,
                                 ep.clip_min,
                                 ep.clip_max};
            u.fn(rows, b.t1 - b.t0, b.c1 - b.c0, wb + j0, pw, y + mt * OC + col, OC, mr,
                 std::min(u.nr, ncols - j0), bi > 0, last ? &te_ : nullptr);
          }
        }
      }
    }
  });
}

void conv_depthwise(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                    ThreadPool* pool, ConvIsa isa) {
  const int64_t oh = p.oh(), ow = p.ow(), C = p.c;
  void (*row)(const DwRowArgs&) = dw_row_portable;
#ifdef TESSERA_CONV_X86
  if (isa == ConvIsa::avx512f)
    row = dw_row_avx512f;
  else if (isa == ConvIsa::avx2)
    row = dw_row_avx2;
#else
  (void)isa;
#endif
  parallel_for(pool, p.n * oh, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / oh, oy = t % oh;
      DwRowArgs a{};
      a.x = x + img * p.h * p.w * C;
      a.h = p.h, a.w = p.w, a.c = C, a.wp = wp, a.kh = p.kh, a.kw = p.kw, a.sw = p.sw, a.dh = p.dh,
      a.dw = p.dw;
      a.iy0 = oy * p.sh - p.pad_t, a.ix0 = -p.pad_l, a.ox0 = 0, a.cnt = ow;
      a.y = y + t * ow * C;
      a.residual = ep.residual ? ep.residual + t * ow * C : nullptr;
      a.bias = ep.bias, a.act = ep.act, a.clip_min = ep.clip_min, a.clip_max = ep.clip_max;
      row(a);
    }
  });
}

}  // namespace

void conv2d_nhwc_f32(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                     ThreadPool* pool, ConvIsa isa) {
  if (!conv_isa_available(isa)) isa = ConvIsa::portable;
  if (p.is_depthwise())
    conv_depthwise(p, x, wp, ep, y, pool, isa);
  else
    conv_dense(p, x, wp, ep, y, pool, isa);
}

void global_avg_pool_nhwc_f32(const float* x, int64_t n, int64_t hw, int64_t c, float* y, ThreadPool* pool) {
  constexpr int64_t kBlock = 256;  // channels per task
  const int64_t nb = (c + kBlock - 1) / kBlock;
  parallel_for(pool, n * nb, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / nb, c0 = t % nb * kBlock, c1 = std::min(c, c0 + kBlock);
      float acc[kBlock] = {};
      const float* xi = x + img * hw * c;
      for (int64_t i = 0; i < hw; ++i)
        for (int64_t ch = c0; ch < c1; ++ch) acc[ch - c0] += xi[i * c + ch];
      const float inv = 1.0f / float(hw);
      for (int64_t ch = c0; ch < c1; ++ch) y[img * c + ch] = acc[ch - c0] * inv;
    }
  });
}

void pool2d_nhwc_f32(const PoolParams& pp, const float* x, float* y, ThreadPool* pool) {
  const Conv2dParams& p = pp.g;
  const int64_t oh = pp.oh, ow = pp.ow, C = p.c;
  parallel_for(pool, p.n * oh, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / oh, oy = t % oh;
      const float* xi = x + img * p.h * p.w * C;
      for (int64_t ox = 0; ox < ow; ++ox) {
        float* yo = y + (t * ow + ox) * C;
        for (int64_t ch = 0; ch < C; ++ch) yo[ch] = -std::numeric_limits<float>::infinity();
        for (int64_t r = 0; r < p.kh; ++r) {
          const int64_t iy = oy * p.sh - p.pad_t + r * p.dh;
          if (iy < 0 || iy >= p.h) continue;
          for (int64_t s = 0; s < p.kw; ++s) {
            const int64_t ix = ox * p.sw - p.pad_l + s * p.dw;
            if (ix < 0 || ix >= p.w) continue;
            const float* xp = xi + (iy * p.w + ix) * C;
            // NaN propagates: a NaN in x is taken, and a NaN in y is never replaced.
            for (int64_t ch = 0; ch < C; ++ch)
              yo[ch] = (xp[ch] > yo[ch] || xp[ch] != xp[ch]) ? xp[ch] : yo[ch];
          }
        }
      }
    }
  });
}

}  // namespace tessera::kernels::x86
