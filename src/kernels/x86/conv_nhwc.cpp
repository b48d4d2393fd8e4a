#include "kernels/x86/conv_nhwc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/roofline.h"

namespace tessera::kernels::x86 {

#if defined(__x86_64__) || defined(_M_X64)
#define TESSERA_CONV_X86 1
#endif

ConvIsa conv_isa() {
  const CpuFeatures& f = cpu_features();
#ifdef TESSERA_CONV_X86
  if (f.avx512_core()) return ConvIsa::avx512f;
  if (f.avx2 && f.fma) return ConvIsa::avx2;
#endif
  (void)f;
  return ConvIsa::portable;
}

bool conv_isa_available(ConvIsa isa) {
  return isa == ConvIsa::portable || (isa == ConvIsa::avx2 && conv_isa() != ConvIsa::portable) ||
         (isa == ConvIsa::avx512f && conv_isa() == ConvIsa::avx512f);
}

int64_t conv_panel() {
  static const int64_t p = conv_isa() == ConvIsa::avx512f ? 64 : 16;
  return p;
}

int64_t conv_nhwc_panel_width(int64_t oc, int64_t panel) {
  const int64_t rest = oc - panel * conv_panel();
  return std::min<int64_t>(conv_panel(), (rest + 15) / 16 * 16);
}

size_t conv_nhwc_packed_floats(int64_t oc, int64_t k) {
  const int64_t full = oc / conv_panel();
  return size_t(full * conv_panel() * k + (oc % conv_panel() ? conv_nhwc_panel_width(oc, full) * k : 0));
}

void conv_nhwc_pack_weights(const float* w, int64_t oc, int64_t c, int64_t kh, int64_t kw, float* out) {
  // Row `t * c + ci` of a panel holds tap t = r * kw + s of input channel ci for the panel's output
  // channels: a transpose. Copy a tile (the panel's channels x a block of input channels, all taps) out
  // of the weights row by row, then write whole panel rows from it: both sides stream, the tile
  // (~64 KiB) stays in L2.
  const int64_t taps = kh * kw, k = c * taps, np = (oc + conv_panel() - 1) / conv_panel();
  std::vector<float> tile;
  for (int64_t j = 0; j < np; ++j) {
    const int64_t pw = conv_nhwc_panel_width(oc, j);
    const int64_t cb = std::max<int64_t>(1, 16384 / (taps * pw));
    float* panel = out + j * conv_panel() * k;
    tile.resize(size_t(pw * cb * taps));
    for (int64_t c0 = 0; c0 < c; c0 += cb) {
      const int64_t c1 = std::min(c, c0 + cb), span = (c1 - c0) * taps;
      for (int64_t q = 0; q < pw; ++q) {
        const int64_t o = j * conv_panel() + q;
        float* tq = tile.data() + q * span;
        if (o < oc)
          std::copy(w + o * k + c0 * taps, w + o * k + c1 * taps, tq);
        else
          std::fill(tq, tq + span, 0.0f);
      }
      for (int64_t ci = c0; ci < c1; ++ci)
        for (int64_t t = 0; t < taps; ++t) {
          float* row = panel + (t * c + ci) * pw;
          const float* src = tile.data() + (ci - c0) * taps + t;
          for (int64_t q = 0; q < pw; ++q) row[q] = src[q * span];
        }
    }
  }
}

float conv_nhwc_packed_at(const float* packed, int64_t oc, int64_t k, int64_t o, int64_t row) {
  const int64_t j = o / conv_panel(), pw = conv_nhwc_panel_width(oc, j);
  return packed[j * conv_panel() * k + row * pw + (o - j * conv_panel())];
}

void dw_nhwc_pack_weights(const float* w, int64_t c, int64_t kh, int64_t kw, float* out) {
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t t = 0; t < kh * kw; ++t) out[t * c + ch] = w[ch * kh * kw + t];
}

bool dw3_rows_applies(const Conv2dParams& p) {
  return p.is_depthwise() && p.kh == p.kw && (p.kh == 3 || p.kh == 5 || p.kh == 7) && p.dh == 1 &&
         p.dw == 1 && (p.sw == 1 || p.sw == 2);
}

namespace {

// Runs fn(begin, end) over [0, n) tasks of about equal work (`work` multiply-adds or element
// visits in all): on the calling thread when the work is small (under ~4 us), else as pool tasks taken
// dynamically: one per thread of 90% of its share, then a guided schedule (each task 1/(2 * threads) of
// what is left, down to ~2 us of work). The long contiguous runs let each core stream its input and output
// in order (at two threads, with 96-pixel tasks handed out alternately, the prefetchers restarted on every
// task: MobileNetV2's 112 x 112 pointwise convs ran 1.4-1.8x slower than in contiguous halves) and keep a
// streamed conv's weight panels on one core (a guided schedule from the start, whose second quarter went
// to either thread, split panels between the cores and re-read them: at two threads MobileNetV2 3.7% and
// ResNet-50 2.6% slower, in-process A/B on the Xeon; 75% first runs were 1-2% slower than 90, 95% equal);
// the small last ones keep the threads balanced when one wakes late or is preempted.
void run_tasks(ThreadPool* pool, int64_t n, double work, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t threads = pool ? pool->num_threads() : 1;
  if (threads <= 1 || n == 1 || work < double(1 << 17)) {
    fn(0, n);
    return;
  }
  const double per_task = std::max(work / double(n), 1.0);
  const int64_t min_per = std::clamp<int64_t>(int64_t(double(1 << 16) / per_task), 1, n);
  std::vector<int64_t> starts;  // task boundaries
  // each thread's first claim: 90% of its share, contiguous; the rest guided
  const int64_t first = std::max<int64_t>(1, n * 9 / (10 * threads));
  int64_t b = 0;
  for (int64_t t = 0; t < threads && b < n; ++t, b += first) starts.push_back(b);
  for (; b < n; b += std::max(min_per, (n - b + 2 * threads - 1) / (2 * threads))) starts.push_back(b);
  starts.push_back(n);
  pool->run(int64_t(starts.size()) - 1, [&](int64_t g) { fn(starts[size_t(g)], starts[size_t(g) + 1]); });
}

// Pixels per tile of the kernel that takes the full-width panels of a conv whose panels are `width` wide.
int64_t conv_main_mr(ConvIsa isa, int64_t width) {
#ifdef TESSERA_CONV_X86
  if (isa == ConvIsa::avx512f) return conv_ukr_avx512f(width).mr;
  if (isa == ConvIsa::avx2) return conv_ukr_avx2(width).mr;
#endif
  (void)isa, (void)width;
  return 4;  // conv_ukr_portable
}

float act1(float v, Activation act, float lo, float hi) {
  return activate(v, act, lo, hi);
}

// Portable micro-kernel: 4 pixels x 16 channels.
void conv_ukr_portable(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw,
                       float* y, int64_t ldy, int64_t mr, int64_t nr, bool accumulate,
                       const ConvTileEpilogue* ep,
                       ConvPrefetch /*pf: the reference tile prefetches nothing*/) {
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
  // sums not in y: the residual may live there (output_reusing); per thread, not a heap block per row
  thread_local std::vector<float> acc;
  if (acc.size() < size_t(c)) acc.resize(size_t(c));
  for (int64_t ox = a.ox0; ox < a.ox0 + a.cnt; ++ox) {
    float* yo = a.y + (ox - a.ox0) * c;
    for (int64_t ch = 0; ch < c; ++ch) acc[size_t(ch)] = a.bias ? a.bias[ch] : 0.0f;
    const int64_t ixb = ox * a.sw + a.ix0;
    for_each_dw_tap(a, ixb, [&](int64_t xo, int64_t wo) {
      for (int64_t ch = 0; ch < c; ++ch) acc[size_t(ch)] += a.x[xo + ch] * a.wp[wo + ch];
    });
    const float* ro = a.residual ? a.residual + (ox - a.ox0) * c : nullptr;
    for (int64_t ch = 0; ch < c; ++ch)
      yo[ch] = act1(acc[size_t(ch)] + (ro ? ro[ch] : 0.0f), a.act, a.clip_min, a.clip_max);
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
thread_local std::vector<float> tl_edge;

// One tile's pixels for the row-table builders: each pixel's top-left input position and image base, the
// rows it has (mr of ld), and the K block's taps [t0, t1) from channel c0.
struct TileRows {
  const int64_t* iy0;
  const int64_t* ix0;
  const float* const* base;
  int64_t mr, ld, t0, t1, c0;
};

// A tile whose mr == ld pixels lie in one output row with every tap of kernel extent (ey, ex) inside the
// image (the common case): pixel i's input at tap offset o is first + i * step + o. Returns first, or
// nullptr when the tile is not such a tile.
const float* interior_tile(const TileRows& tr, const Conv2dParams& p, int64_t c, int64_t ey, int64_t ex,
                           int64_t* step) {
  if (tr.mr != tr.ld) return nullptr;
  const int64_t n = tr.mr, iy = tr.iy0[0], ix = tr.ix0[0];
  if (tr.base[n - 1] != tr.base[0] || tr.iy0[n - 1] != iy || tr.ix0[n - 1] != ix + (n - 1) * p.sw)
    return nullptr;
  if (iy < 0 || iy + ey > p.h || ix < 0 || tr.ix0[n - 1] + ex > p.w) return nullptr;
  *step = p.sw * c;
  return tr.base[0] + (iy * p.w + ix) * c + tr.c0;
}

// Output pixels [m0, m1): each one's top-left input position (iy0, ix0, before padding) and image base. Apart
// from the driver's lambda, which captures the geometry by reference: every store here could alias it, and
// GCC reloaded it per pixel (8% of a stem conv).
void pixel_origins(const Conv2dParams& p, const float* x, int64_t m0, int64_t m1, int64_t* __restrict iy0,
                   int64_t* __restrict ix0, const float** __restrict base) {
  const int64_t oh = p.oh(), ow = p.ow(), sh = p.sh, sw = p.sw, pt = p.pad_t, pl = p.pad_l;
  const int64_t image = p.h * p.w * p.c;
  int64_t img = m0 / (oh * ow), oy = m0 % (oh * ow) / ow, ox = m0 % ow;
  for (int64_t m = 0; m < m1 - m0; ++m) {
    iy0[m] = oy * sh - pt;
    ix0[m] = ox * sw - pl;
    base[m] = x + img * image;
    if (++ox == ow) {
      ox = 0;
      if (++oy == oh) oy = 0, ++img;
    }
  }
}

// The row table of a tile, rows[(t - t0) * ld + i]: pixel i's input at tap t, or `zeros` outside the image.
// Separate functions with the geometry in locals: inside the driver's lambda every pointer stored to the
// table could alias the captured values, and each was reloaded per row (a third of a stem conv's time).
// Pixel-outer: a pixel's position is worked out once, its taps are then an add and a bounds test each.
void fill_taps(const TileRows& tr, const Conv2dParams& p, int64_t c, const float* zeros,
               const float** __restrict rows) {
  const int64_t h = p.h, w = p.w, kw = p.kw, dh = p.dh, dw = p.dw, nt = tr.t1 - tr.t0, ld = tr.ld;
  int64_t step;
  if (const float* first = interior_tile(tr, p, c, (p.kh - 1) * dh + 1, (kw - 1) * dw + 1, &step)) {
    for (int64_t t = tr.t0; t < tr.t1; ++t) {
      const float* q = first + (t / kw * dh * w + t % kw * dw) * c;
      for (int64_t i = 0; i < ld; ++i) rows[(t - tr.t0) * ld + i] = q + i * step;
    }
    return;
  }
  for (int64_t i = 0; i < ld; ++i) {
    if (i >= tr.mr) {
      for (int64_t t = 0; t < nt; ++t) rows[t * ld + i] = zeros;
      continue;
    }
    const int64_t iy0 = tr.iy0[i], ix0 = tr.ix0[i];
    const float* px = tr.base[i] + tr.c0;
    for (int64_t t = tr.t0; t < tr.t1; ++t) {
      const int64_t iy = iy0 + t / kw * dh, ix = ix0 + t % kw * dw;
      rows[(t - tr.t0) * ld + i] = iy >= 0 && iy < h && ix >= 0 && ix < w ? px + (iy * w + ix) * c : zeros;
    }
  }
}

// Row-tap form (one "tap" per kernel row, its kw * c inputs contiguous): a row that crosses the left or
// right padding is copied with zeros into `edge` ([taps][16][cc]). Two passes: each pixel's first row and
// whether its rows lie inside left to right, then the table tap by tap from those locals (in one pass GCC
// reloaded the geometry around every store to the table: 7 cycles an entry, a quarter of a stem conv).
void fill_row_taps(const TileRows& tr, const Conv2dParams& p, int64_t c, int64_t cc, const float* zeros,
                   float* __restrict edge, const float** __restrict rows) {
  const int64_t h = p.h, w = p.w, kw = p.kw, dh = p.dh, ld = tr.ld, tstep = dh * w * c;
  int64_t step;
  if (const float* first = interior_tile(tr, p, c, (p.kh - 1) * dh + 1, kw, &step)) {
    for (int64_t t = tr.t0; t < tr.t1; ++t)
      for (int64_t i = 0; i < ld; ++i) rows[(t - tr.t0) * ld + i] = first + t * tstep + i * step;
    return;
  }
  const float* base[16];
  int64_t iy0[16], off[16];  // pixel i's first input row, and its offset in floats at tap 0
  bool inside[16];
  for (int64_t i = 0; i < ld; ++i) {
    const bool live = i < tr.mr;
    const int64_t ix = live ? tr.ix0[i] : 0;
    base[i] = live ? tr.base[i] : zeros;
    iy0[i] = live ? tr.iy0[i] : -(int64_t(1) << 30);  // rows past mr: every tap outside
    off[i] = live ? (iy0[i] * w + ix) * c : 0;
    inside[i] = ix >= 0 && ix + kw <= w;
  }
  for (int64_t t = tr.t0; t < tr.t1; ++t) {
    const float** rt = rows + (t - tr.t0) * ld;
    for (int64_t i = 0; i < ld; ++i) {
      const int64_t iy = iy0[i] + t * dh;
      if (iy < 0 || iy >= h) {
        rt[i] = zeros;
      } else if (inside[i]) {
        rt[i] = base[i] + (off[i] + t * tstep);
      } else {
        const int64_t ix = tr.ix0[i];
        const float* row = base[i] + iy * w * c;
        float* e = edge + ((t - tr.t0) * 16 + i) * cc;
        for (int64_t s = 0; s < kw; ++s) {
          const int64_t xs = ix + s;
          if (xs >= 0 && xs < w)
            std::memcpy(e + s * c, row + xs * c, size_t(c) * sizeof(float));
          else
            std::memset(e + s * c, 0, size_t(c) * sizeof(float));
        }
        rt[i] = e;
      }
    }
  }
}

// The packed weights of the conv a caller runs next on this thread (the same K, `oc` output channels): the
// last K block's tiles prefetch their first K block into L2, as a streamed conv does for its own next panels.
struct ConvNextWeights {
  const float* w = nullptr;
  int64_t oc = 0;
};

// A pointwise conv of few pixels at one thread runs as the prepacked GEMM it is (M pixels x C -> OC): its
// whole packed panels (64 wide, all K rows each) are a prepacked B of one K block (PackedB::view), and the
// GEMM's small-M path streams weights that come from L3 or memory better than the conv's panel loop does; a
// narrower last panel (OC not a multiple of 64, stored 16/32/48 wide) is read as stored (PackedB::view's
// last_nr) in the same product — as a second GEMM of its own it cost a fork-join and a pass over A: Zen 5,
// 49 x 400 x 400 with weights from L3 (/tmp/w/gtail.cpp, medians of 31) 75.8 -> 74.6 us at one
// thread, 44.7-46.2
// -> 43.1-43.4 at two; RegNetX-400MF at one thread 1.9% faster (in-process A/B). Measured on
// Zen 4 (49 pixels, one thread; weights from memory / in cache): 160 -> 960 161 -> 141 / 140 -> 136 us,
// 320 -> 1280 437 -> 380 / 366 -> 354, 512 -> 2048 1126 -> 956 / 934 -> 896; MobileNetV2's 7 x 7 x 320 ->
// 1280 conv 413 -> 364 us and its 7 x 7 blocks' expansions 4% (1.6% of a run). On Zen 5 with the last panel
// split off: RegNetX-400MF's 23 7 x 7 x 400 -> 400 convs (six panels and 16 columns) 87 -> ~73 us each, the
// model 4.97 -> 4.60-4.71 ms (tessera bench, alternating). Not for deeper K (960 -> 320 from memory 279 ->
// 291: one K block of 960 rows) or, under 64 pixels, two threads (320 -> 1280: 184 -> 202 us; RegNetX on Zen
// 5 equal). Larger maps, up to kPointwiseGemmMaxPixels, on full-width FMA cores where the weights pass what
// the conv keeps in L2 (kKeptWeightBytes: its loop then streams each panel per chunk of pixels, the GEMM
// prefetches the next block into L2 and each tile's panel into L1). Zen 5, one thread, chains of 24 convs
// whose weights come from L3 (tessera profile, conv time, conv loop -> GEMM): 14 x 14 x 320 -> 320 4.0-4.2
// -> 3.9-4.1 ms, 384 -> 384 6.1-6.5 -> 5.8-6.1, 448 -> 448 at 12 x 12 6.3 -> 5.9, at 9 x 9 3.9 -> 3.3, 400 ->
// 400 at 10 x 10 3.5 -> 3.2-3.4, 20 x 20 x 320 8.6-8.7 -> 8.5; 28 x 28 x 320 equal (16.0). Weights within
// kKeptWeightBytes keep the conv loop (14 x 14 x 256 -> 256 2.5 -> 2.6 ms, 160 -> 160 0.96 -> 1.05).
// At two threads too (the GEMM splits the rows): 14 x 14 x 320 2.10 -> 1.97 ms, 448 at 12 x 12 2.97 ->
// 2.87, 384 at 14 x 14 2.92 -> 2.85. (On Zen 4 maps of 196+ pixels were equal or faster in the conv loop.)
constexpr int64_t kKeptWeightBytes = int64_t(256) << 10, kPointwiseGemmMaxPixels = 512;
bool pointwise_as_gemm(const Conv2dParams& p, ThreadPool* pool, ConvIsa isa, const ConvNextWeights* next) {
  const int64_t M = p.n * p.h * p.w;
  const bool one_thread = !pool || pool->num_threads() == 1;
  const bool larger = M >= 64 && M < kPointwiseGemmMaxPixels && fma512_full_width() &&
                      p.c * p.oc * int64_t(sizeof(float)) > kKeptWeightBytes;
  // strided 1 x 1 convs too (a downsampling shortcut): their pixels are gathered into rows first
  const bool one_by_one =
      p.kh == 1 && p.kw == 1 && p.pad_t == 0 && p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0;
  return ((M < 64 && one_thread) || larger) && p.c <= 512 && !next && isa == ConvIsa::avx512f && one_by_one &&
         p.groups == 1 && p.oc >= conv_panel() && PackedB::native_nr() == conv_panel();
}

// The fraction of a conv's (output pixel, tap) pairs whose input pixel lies inside the image.
double live_tap_fraction(const Conv2dParams& p) {
  auto axis = [](int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pad) {
    int64_t live = 0;
    for (int64_t t = 0; t < k; ++t) {  // outputs o with 0 <= o * s - pad + t * d < in
      const int64_t off = t * d - pad, lo = off >= 0 ? 0 : (-off + s - 1) / s;
      const int64_t hi = off >= in ? 0 : std::min(out, (in - 1 - off) / s + 1);
      live += std::max<int64_t>(0, hi - lo);
    }
    return double(live) / double(std::max<int64_t>(1, k * out));
  };
  return axis(p.h, p.oh(), p.kh, p.sh, p.dh, p.pad_t) * axis(p.w, p.ow(), p.kw, p.sw, p.dw, p.pad_l);
}

void conv_dense(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                ThreadPool* pool, ConvIsa isa, const ConvNextWeights* next = nullptr) {
  const int64_t C = p.c, OC = p.oc, taps = p.kh * p.kw, K = taps * C;
  const int64_t oh = p.oh(), ow = p.ow(), M = p.n * oh * ow;
  if (pointwise_as_gemm(p, pool, isa, next)) {
    if (!p.is_pointwise()) {
      // Strided: the pixels the outputs read, gathered into rows (M x C floats, a few hundred KiB at most:
      // M < kPointwiseGemmMaxPixels, C <= 512), then the GEMM over them. Zen 5, one thread, in the model
      // (tessera profile): RegNetY-800MF's 14 x 14 x 320 -> 7 x 7 x 784 shortcut 154 -> 115 us, ResNet-18's
      // 14 x 14 x 256 -> 7 x 7 x 512 92 -> 83; ResNet-50's 28 x 28 x 512 -> 14 x 14 x 1024 equal.
      thread_local AlignedScratch tl_gather;
      float* rows = tl_gather.get(size_t(M * C));
      for (int64_t img = 0, m = 0; img < p.n; ++img)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox, ++m)
            std::memcpy(rows + m * C, x + ((img * p.h + oy * p.sh) * p.w + ox * p.sw) * C,
                        size_t(C) * sizeof(float));
      Conv2dParams q = p;
      q.h = oh, q.w = ow, q.sh = q.sw = 1;
      conv_dense(q, rows, wp, ep, y, pool, isa, next);
      return;
    }
    GemmEpilogue ge;
    ge.bias = ep.bias, ge.residual = ep.residual, ge.ldr = OC, ge.act = ep.act;
    ge.clip_min = ep.clip_min, ge.clip_max = ep.clip_max;
    const int64_t P = conv_panel(), last = (OC - 1) / P;
    // all panels in one product, the last (rows of conv_nhwc_panel_width floats) as narrow as it is stored
    const int64_t last_nr = conv_nhwc_panel_width(OC, last);
    sgemm_packed(M, x, C, false, PackedB::view(wp, C, OC, C, P, nullptr, last_nr), y, OC, ge, pool);
    return;
  }
  // Tasks cover blocks of 64 output channels; a block is one panel (AVX-512) or four 16-wide ones
  // (AVX2, portable), which a tile walks one after the other while its input rows are in L1.
  const int64_t P = conv_panel(), np = (OC + kConvBlock - 1) / kConvBlock;
  const int64_t last_panel = (OC - 1) / P, last_pw = conv_nhwc_panel_width(OC, last_panel);  // others: P wide
  // Few channels (a stem): one "tap" per kernel row, its kw*C inputs contiguous in NHWC
  // (the packing's K order is (r, s, ci)); a row that crosses the left/right padding is
  // copied with zeros into a per-thread buffer.
  const bool row_taps = p.dw == 1 && p.kw > 1 && C * p.kw <= 64;
  const int64_t tt = row_taps ? p.kh : taps, cc = row_taps ? p.kw * C : C;
  const bool pointwise = p.is_pointwise();  // input rows are the output pixels' rows
  // K blocks of at least 512 rows, as many as keep a panel's block within 64 KiB (streamed from L2 per tile):
  // 1024 for AVX2's 16-wide panels (MobileNetV2's 576- and 960-deep convs in one block: 3% faster in all,
  // ResNet-50 1%), 512 for AVX-512's 64-wide ones.
  // Weights past 256 KiB stream from memory each run (chunk_major below is false). On Intel K blocks of 128
  // rows, so the next block's prefetch (below) goes out in small slices per tile instead of bursts of
  // hundreds of lines — ResNet-50 2.4-4% and ResNet-18 3.7% faster than 512-row blocks (in-process A/B on a
  // Xeon, one and two threads; 256 rows: equal). On AMD 512, as kept weights: each K block reads and writes
  // the tiles' outputs once more, and Zen 4 keeps up with the bursts (alternating runs on the Zen 4 VM,
  // 128 -> 512: ResNet-18 2.4% faster at one thread and 3.9% at two, ResNet-50 0.9-1% and 3.6%, MobileNetV2
  // 0.8% at two; 256 in between, 1024 0.4% slower than 512 on ResNet-50).
  const bool streamed = next || K * OC * int64_t(sizeof(float)) > kKeptWeightBytes;
  const int64_t streamed_kc = cpu_features().amd ? 512 : 128;
  const std::vector<KBlock> blocks =
      k_blocks(tt, cc, streamed ? streamed_kc : std::max<int64_t>(512, (64 << 10) / (P * 4)));
  int64_t max_taps = 0;
  for (const KBlock& b : blocks) max_taps = std::max(max_taps, b.t1 - b.t0);
  // Dilated convs whose taps often fall wholly in the padding (DeepLab's atrous pyramid: rate 24 on a 28 x 28
  // map reads the input at 18% of its pixel-tap pairs, rate 36 at 11%): each tile runs only its taps that
  // read the input for some pixel, in runs of consecutive taps, instead of multiplying rows of zeros.
  const bool sparse_taps = !row_taps && !pointwise && live_tap_fraction(p) < 0.75;
  // Over several K blocks the blocks accumulate onto the residual in y from the first (one block adds it
  // as it stores, element by element, which y aliasing it does not disturb). With the residual in y's own
  // buffer (output_reusing) the first block would otherwise overwrite it before the last adds it; a
  // residual elsewhere is copied into y first, so that a run gives the same bits either way (the first
  // run of a session, before its memory plan, has no aliasing).
  const bool res_in_y = ep.residual && (blocks.size() > 1 || sparse_taps);  // (sparse: runs of taps, ditto)
  if (res_in_y && ep.residual != y) std::memcpy(y, ep.residual, size_t(M * OC) * sizeof(float));
  const float* const residual = res_in_y ? nullptr : ep.residual;
  // Pixels per task: 96 (a multiple of every MR) at one thread. Over several, tasks go out in a guided
  // schedule (run_tasks), so a task is also the smallest piece a thread can take at the end of the conv:
  // - weights that stay in L2 (chunk_major): a whole number of the main kernel's tiles worth ~2^18
  //   multiply-adds (~5 us). MobileNetV2's 14 x 14 convs had tasks of 25 pixels (~13 us, and a 1-pixel
  //   remainder tile each) and at two threads waited 8-9% of their time for the last one: 5-8% faster;
  // - larger weights, streamed per task: chunks as large as still give each thread a few tasks (a late,
  //   small map: 49 pixels x 5 panels made 5 tasks for 2 threads) — splitting the pixels evenly adds no
  //   tiles there (49 = 25 + 24 takes as many 6-pixel tiles as 49), and finer chunks re-streamed the
  //   weights (ResNet-50's 14 -> 7 conv with 6-pixel tasks: 7% slower).
  constexpr int64_t kMaxChunk = 96;
  const bool chunk_major = !streamed;
  int64_t kChunk = kMaxChunk;
  if (const int64_t threads = pool ? pool->num_threads() : 1; threads > 1) {
    if (chunk_major) {
      const int64_t mr = conv_main_mr(isa, std::min(P, OC));
      const double tile_work = double(mr) * double(std::min(OC, kConvBlock)) * double(K);
      kChunk = mr * std::clamp<int64_t>(int64_t(std::ceil(double(1 << 18) / tile_work)), 1, kMaxChunk / mr);
    } else {
      const int64_t parts = std::min((4 * threads + np - 1) / np, (M + 5) / 6);
      kChunk = std::clamp<int64_t>((M + parts - 1) / std::max<int64_t>(parts, 1), 6, kMaxChunk);
    }
  }
  if (!chunk_major) {
    // as many chunks as that, of equal size: 196 pixels as 66 + 66 + 64, not 96 + 96 + 4 (a 4-pixel task
    // re-read its panel's weights for one remainder tile): ResNet-50 1.2-1.7% faster at two threads
    const int64_t n = (M + kChunk - 1) / kChunk, mr = conv_main_mr(isa, std::min(P, OC));
    kChunk = std::min(kMaxChunk, ((M + n - 1) / n + mr - 1) / mr * mr);
  }
  const int64_t nchunks = (M + kChunk - 1) / kChunk;
  run_tasks(pool, np * nchunks, double(M) * double(K) * double(OC), [&](int64_t tb, int64_t te) {
    if (tl_zeros.size() < size_t(cc)) tl_zeros.assign(size_t(cc), 0.0f);
    const float* zeros = tl_zeros.data();
    // room for the row tables of a chunk's whole tiles (ConvUkrInfo::tiles) and their edge copies
    const int64_t max_tiles = kMaxChunk / 6 + 1, edge_per_tile = max_taps * 16 * cc;
    if (tl_rows.size() < size_t(max_taps * 16 * max_tiles)) tl_rows.resize(size_t(max_taps * 16 * max_tiles));
    const float** rows = tl_rows.data();
    if (row_taps && tl_edge.size() < size_t(edge_per_tile * max_tiles))
      tl_edge.resize(size_t(edge_per_tile * max_tiles));
    float* edge = tl_edge.data();
    int64_t iy0[kMaxChunk], ix0[kMaxChunk];
    const float* base[kMaxChunk];
    for (int64_t task = tb; task < te; ++task) {
      // Small weights stay in cache: walk all panels of a chunk before the next chunk, so each
      // output row is written while it is in cache; large weights: all chunks of a panel.
      const int64_t j = chunk_major ? task % np : task / nchunks,
                    q = chunk_major ? task / np : task % nchunks;
      const int64_t m0 = q * kChunk, m1 = std::min(M, m0 + kChunk);
      if (!pointwise) {
        pixel_origins(p, x, m0, m1, iy0, ix0, base);
      }
      const int64_t ncols = std::min(kConvBlock, OC - j * kConvBlock);
      ConvUkrInfo u{conv_ukr_portable, 4, 16};
#ifdef TESSERA_CONV_X86
      if (isa == ConvIsa::avx512f)
        u = conv_ukr_avx512f(std::min(P, ncols));
      else if (isa == ConvIsa::avx2)
        u = conv_ukr_avx2(ncols);
#endif
      // AVX2 over 16-wide panels: columns past the block's last multiple of 16, when at most 8 (OC = 24, 40
      // ...)
      const int64_t tail8 = isa == ConvIsa::avx2 && P == 16 && ncols > 16 && ncols % 16 <= 8 ? ncols % 16 : 0;
      for (size_t bi = 0; bi < blocks.size(); ++bi) {
        const KBlock& b = blocks[bi];
        const bool last = bi + 1 == blocks.size();
        const int64_t row0 = b.t0 * cc + b.c0;  // the block's first row of K
        // tiles of k.mr pixels over the block's columns [j_begin, j_end)
        auto tiles = [&](const ConvUkrInfo& k, int64_t j_begin, int64_t j_end) {
          // The column spans of a tile row, the same for every tile: each span's first output column, width
          // and weights. One call walks a tile row's whole panels where the kernel can
          // (ConvUkrInfo::panels); the last panel may be narrower than P.
          struct Span {
            int64_t col, width, ldw;
            const float* w;
          };
          Span spans[kConvBlock / 8];
          int64_t nspans = 0;
          const bool multi_panel = k.panels && k.nr == P && blocks.size() == 1;
          const int64_t full_end = last_pw == P ? j_end : std::min(j_end, last_panel * P - j * kConvBlock);
          for (int64_t j0 = j_begin, span = 0; j0 < j_end; j0 += span) {
            const int64_t col = j * kConvBlock + j0, pj = col / P, pw = pj < last_panel ? P : last_pw;
            span = std::min(k.nr, j_end - j0);
            if (multi_panel && j0 + k.nr <= full_end) span = (full_end - j0) / k.nr * k.nr;
            spans[nspans++] = {col, span, pw, wp + pj * P * K + row0 * pw + col % P};
          }
          // Weights streamed from memory: a tile of this block computes from cache after the
          // first, so each tile prefetches a slice of the next block's weights, of each of the task's panels
          // (after the last block, the next task's panels' first block), into L2 — the first tile of a block
          // then no longer waits on memory while the others leave it idle. ResNet-18 at one and two threads
          // 4-7% faster, ResNet-50 2.5-4% (in-process A/B on a Xeon; its 7 x 7 x 512 convs stream 9.4 MB
          // each). The micro-kernel spreads its slice over its K loop (ConvPrefetch): 7-10% faster again
          // than the same slices issued before each tile.
          struct Prefetch {
            const char* p;
            int64_t bytes, per_tile;
          } pf[kConvBlock / 8];
          int64_t npf = 0;
          if (streamed && j_begin == 0) {
            const int64_t ntiles = (m1 - m0 + k.mr - 1) / k.mr;  // the fast path's and the rest
            const int64_t pj0 = j * kConvBlock / P, pj1 = (j * kConvBlock + ncols - 1) / P + 1;
            const KBlock& nb = last ? blocks[0] : blocks[bi + 1];
            // after the last block: the next task's (the same panels for the next chunk of pixels, else the
            // next panels)
            const bool next_panels = last && q + 1 == nchunks;
            const int64_t pa = next_panels ? pj1 : pj0,
                          pb = next_panels ? std::min(pj1 + pj1 - pj0, last_panel + 1) : pj1;
            auto add = [&](const float* w, int64_t pw) {
              const int64_t bytes = (nb.t1 - nb.t0) * (nb.c1 - nb.c0) * pw * int64_t(sizeof(float));
              pf[npf++] = {reinterpret_cast<const char*>(w + (nb.t0 * cc + nb.c0) * pw), bytes,
                           ntiles > 0 ? (bytes / ntiles + 63) / 64 * 64 : 0};
            };
            for (int64_t pj = pa; pj < pb; ++pj) add(wp + pj * P * K, pj < last_panel ? P : last_pw);
            if (next_panels && next && npf == 0)
              for (int64_t pj = 0; pj * P < next->oc; ++pj)
                add(next->w + pj * P * K, conv_nhwc_panel_width(next->oc, pj));
          }
          // the next slice of panel i's stream, for a tile of `steps` K steps
          auto slice = [&](int64_t i, int64_t steps) -> ConvPrefetch {
            if (i >= npf || pf[i].bytes <= 0) return {};
            Prefetch& f = pf[i];
            const int64_t nbytes = std::min(f.per_tile, f.bytes);
            const ConvPrefetch s{f.p, (nbytes + steps - 1) / steps};
            f.p += nbytes, f.bytes -= nbytes;
            return s;
          };
          auto burst = [&](int64_t i) {  // a slice at once, where no micro-kernel call takes it
            const ConvPrefetch s = slice(i, 1);
            for (int64_t o = 0; o < s.step; o += 64) __builtin_prefetch(s.p + o, 0, 2);  // prefetcht1
          };
          const int64_t steps = (b.t1 - b.t0) * (b.c1 - b.c0);
          // One K block: the whole tiles of every span of whole panels in one call per span.
          int64_t fast_end = m0;  // spans of whole panels are done for the rows before this
          bool all_fast = false;
          if (k.tiles && blocks.size() == 1 && !sparse_taps && ep.act != Activation::gelu_erf &&
              ep.act != Activation::gelu_tanh) {
            const int64_t nt = (m1 - m0) / k.mr, ntaps = b.t1 - b.t0;
            fast_end = m0 + nt * k.mr;
            if (!pointwise)  // the row tables of all nt tiles, one after another
              for (int64_t t = 0; t < nt; ++t) {
                const int64_t o = t * k.mr;
                const TileRows tr{iy0 + o, ix0 + o, base + o, k.mr, k.mr, b.t0, b.t1, b.c0};
                if (row_taps)
                  fill_row_taps(tr, p, C, cc, zeros, edge + t * edge_per_tile, rows + t * ntaps * k.mr);
                else
                  fill_taps(tr, p, C, zeros, rows + t * ntaps * k.mr);
              }
            all_fast = true;
            for (int64_t si = 0; si < nspans; ++si) {
              const Span& sp = spans[si];
              if (!k.tiles_take(sp.width, sp.ldw)) {
                all_fast = false;
                continue;
              }
              const ConvTileEpilogue te{ep.bias ? ep.bias + sp.col : nullptr,
                                        residual ? residual + m0 * OC + sp.col : nullptr,
                                        OC,
                                        ep.act,
                                        ep.clip_min,
                                        ep.clip_max};
              if (nt > 0 && npf == 0)
                k.tiles(pointwise ? nullptr : rows, x + m0 * C, C, nt, ntaps, b.c1 - b.c0, sp.w, sp.ldw * K,
                        sp.width / k.nr, y + m0 * OC + sp.col, OC, te, {});
              for (int64_t t = 0; t < nt && npf > 0; ++t) {  // streamed weights: a tile per call, paced
                burst(si);
                ConvTileEpilogue tt = te;
                if (tt.residual) tt.residual += t * k.mr * OC;
                k.tiles(pointwise ? nullptr : rows + t * ntaps * k.mr, x + (m0 + t * k.mr) * C, C, 1, ntaps,
                        b.c1 - b.c0, sp.w, sp.ldw * K, sp.width / k.nr, y + (m0 + t * k.mr) * OC + sp.col, OC,
                        tt, {});
              }
            }
          }
          // Where this loop covers the whole chunk, its rows go in balanced tiles (49 pixels:
          // 6+6+6+6+5+5+5+5+5, not eight 6-row tiles and a 1-row one, whose K loop waits on its FMAs'
          // latency): ResNet-18 and -50 0.1-0.6% faster at one thread, 0.1-1.8% at two (their 7 x 7 layers;
          // in-process A/B, Xeon).
          const int64_t first = all_fast ? fast_end : m0, nrows = m1 - first;
          const int64_t ngroups = (nrows + k.mr - 1) / k.mr;
          const bool balance = fast_end == m0;
          for (int64_t g = 0, mt = first, mr = 0; g < ngroups; ++g, mt += mr) {
            mr = balance ? nrows / ngroups + (g < nrows % ngroups) : std::min(k.mr, m1 - mt);
            for (int64_t i = nspans; i < npf; ++i) burst(i);  // panels past this call's spans (AVX2's tail8)
            const TileRows tr{iy0 + (mt - m0), ix0 + (mt - m0), base + (mt - m0), mr, k.mr, b.t0, b.t1, b.c0};
            if (pointwise)
              for (int64_t i = 0; i < k.mr; ++i) rows[i] = i < mr ? x + (mt + i) * C + b.c0 : zeros;
            else if (row_taps)
              fill_row_taps(tr, p, C, cc, zeros, edge, rows);
            else
              fill_taps(tr, p, C, zeros, rows);
            const ConvUkr fn = k.for_rows(mr);
            // the block's taps as runs [a, b) to compute: all of them, or (sparse_taps) those that read the
            // input for one of the tile's pixels — at least one, which writes the tile where no other does
            const int64_t ntaps = b.t1 - b.t0, kc = b.c1 - b.c0;
            int64_t run_a[64], run_b[64], nruns = 0;
            if (sparse_taps && ntaps <= 64) {
              for (int64_t t = 0; t < ntaps; ++t) {
                bool live = false;
                for (int64_t i = 0; i < mr && !live; ++i) live = rows[t * k.mr + i] != zeros;
                if (!live) continue;
                if (nruns > 0 && run_b[nruns - 1] == t)
                  run_b[nruns - 1] = t + 1;
                else
                  run_a[nruns] = t, run_b[nruns++] = t + 1;
              }
              // a tile that reads nothing: skipped where earlier blocks wrote it and a later one finishes it
              if (nruns == 0 && (bi == 0 && !res_in_y)) run_a[0] = 0, run_b[0] = 1, nruns = 1;
              if (nruns == 0 && last) run_a[0] = 0, run_b[0] = 1, nruns = 1;
            } else {
              run_a[0] = 0, run_b[0] = ntaps, nruns = 1;
            }
            for (int64_t si = 0; si < nspans; ++si) {
              const Span& sp = spans[si];
              if (mt < fast_end && k.tiles_take(sp.width, sp.ldw)) continue;  // done above
              ConvTileEpilogue te_{ep.bias ? ep.bias + sp.col : nullptr,
                                   residual ? residual + mt * OC + sp.col : nullptr,
                                   OC,
                                   ep.act,
                                   ep.clip_min,
                                   ep.clip_max};
              const ConvPrefetch pfs = slice(si, steps);
              for (int64_t ri = 0; ri < nruns; ++ri)
                fn(rows + run_a[ri] * k.mr, run_b[ri] - run_a[ri], kc, sp.w + run_a[ri] * kc * sp.ldw, sp.ldw,
                   y + mt * OC + sp.col, OC, mr, sp.width, bi > 0 || res_in_y || ri > 0,
                   last && ri + 1 == nruns ? &te_ : nullptr, ri == 0 ? pfs : ConvPrefetch{});
            }
          }
        };
        if (tail8 > 0) {  // a last panel of at most 8 columns: 12 x 8 tiles, not 6 x 16 ones half wasted
          tiles(u, 0, ncols - tail8);
          tiles(conv_ukr_avx2(8), ncols - tail8, ncols);
        } else {
          tiles(u, 0, ncols);
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
  if (isa != ConvIsa::portable && dw3_rows_applies(p)) {
    void (*rows_fn)(const Dw3RowsArgs&) = isa == ConvIsa::avx512f ? dw3_rows_avx512f : dw3_rows_avx2;
    // Bands of output rows whose input rows (~128 KiB) stay in L2 while the channel blocks sweep them.
    const int64_t band =
        std::max<int64_t>(1, ((int64_t(128) << 10) / int64_t(sizeof(float) * p.w * C) - (p.kh - 1)) / p.sh);
    run_tasks(pool, p.n * oh, double(p.n * oh * ow) * double(C * 9), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e;) {
        const int64_t img = t / oh, oy0 = t % oh, oy1 = std::min({oh, oy0 + band, oy0 + (e - t)});
        Dw3RowsArgs a{x + img * p.h * p.w * C,
                      p.h,
                      p.w,
                      C,
                      wp,
                      p.sh,
                      p.sw,
                      p.pad_t,
                      p.pad_l,
                      oy0,
                      oy1,
                      ow,
                      y + img * oh * ow * C,
                      ep.residual ? ep.residual + img * oh * ow * C : nullptr,
                      ep.bias,
                      ep.act,
                      ep.clip_min,
                      ep.clip_max};
        a.k = p.kh;
        rows_fn(a);
        t += oy1 - oy0;
      }
    });
    return;
  }
#else
  (void)isa;
#endif
  run_tasks(pool, p.n * oh, double(p.n * oh * ow) * double(C * p.kh * p.kw), [&](int64_t b, int64_t e) {
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

namespace {

// ---- Winograd F(m x m, 3x3) ----
// Input B^T (alpha x alpha), kernel G (alpha x 3), output A^T (m x alpha), alpha = m + 2,
// and L (3 x alpha) with L G = I.
struct WinoMats {
  int m, alpha;
  double bt[6][6], g[6][3], at[4][6], l[3][6];
};
constexpr WinoMats kWino2{2,
                          4,
                          {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                          {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
                          {{1, 1, 1, 0}, {0, 1, -1, -1}},
                          {{1, 0, 0, 0}, {0, 1, -1, 0}, {0, 0, 0, 1}}};
constexpr WinoMats kWino4{
    4,
    6,
    {{4, 0, -5, 0, 1, 0},
     {0, -4, -4, 1, 1, 0},
     {0, 4, -4, -1, 1, 0},
     {0, -2, -1, 2, 1, 0},
     {0, 2, -1, -2, 1, 0},
     {0, 4, 0, -5, 0, 1}},
    {{1.0 / 4, 0, 0},
     {-1.0 / 6, -1.0 / 6, -1.0 / 6},
     {-1.0 / 6, 1.0 / 6, -1.0 / 6},
     {1.0 / 24, 1.0 / 12, 1.0 / 6},
     {1.0 / 24, -1.0 / 12, 1.0 / 6},
     {0, 0, 1}},
    {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
    {{4, 0, 0, 0, 0, 0}, {-4, -6, 0, 0, 0, -1}, {0, 0, 0, 0, 0, 1}}};

const WinoMats& wino_mats(int m) {
  return m == 4 ? kWino4 : kWino2;
}

// Portable transforms: the matrices applied in float, one channel at a time.
template <int M>
void wino_in_portable(const float* const* src, int64_t c, float* v, int64_t stride) {
  constexpr int A = M + 2;
  const WinoMats& w = wino_mats(M);
  for (int64_t ci = 0; ci < c; ++ci) {
    float d[A][A], t[A][A];
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) d[i][j] = src[i * A + j][ci];
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) {
        float s = 0;
        for (int k = 0; k < A; ++k)
          if (w.bt[i][k] != 0) s += float(w.bt[i][k]) * d[k][j];
        t[i][j] = s;
      }
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) {
        float s = 0;
        for (int k = 0; k < A; ++k)
          if (w.bt[j][k] != 0) s += t[i][k] * float(w.bt[j][k]);
        v[(i * A + j) * stride + ci] = s;
      }
  }
}

template <int M>
void wino_out_portable(const float* mp, int64_t mstride, int64_t n, const WinoOut& o) {
  constexpr int A = M + 2;
  const WinoMats& w = wino_mats(M);
  for (int64_t j = 0; j < n; ++j) {
    float d[A][A], t[M][A];
    for (int i = 0; i < A; ++i)
      for (int q = 0; q < A; ++q) d[i][q] = mp[(i * A + q) * mstride + j];
    for (int i = 0; i < M; ++i)
      for (int q = 0; q < A; ++q) {
        float s = 0;
        for (int k = 0; k < A; ++k)
          if (w.at[i][k] != 0) s += float(w.at[i][k]) * d[k][q];
        t[i][q] = s;
      }
    const float b = o.bias ? o.bias[j] : 0.0f;
    for (int i = 0; i < M; ++i)
      for (int q = 0; q < M; ++q) {
        float* yp = o.y[i * M + q];
        if (!yp) continue;
        float s = 0;
        for (int k = 0; k < A; ++k)
          if (w.at[q][k] != 0) s += t[i][k] * float(w.at[q][k]);
        const float* rp = o.res[i * M + q];
        yp[j] = act1(s + b + (rp ? rp[j] : 0.0f), o.act, o.clip_min, o.clip_max);
      }
  }
}

void wino_group_gemm_portable(const WinoGroupGemm& a) {
  for (int64_t g = 0; g < a.ng; ++g)
    for (int64_t r = 0; r < a.rows; ++r) {
      float* m = a.m + r * a.ldm + g * a.og;
      std::fill(m, m + a.og, 0.0f);
      for (int64_t k = 0; k < a.cg; ++k) {
        const float x = a.v[r * a.ldv + g * a.cg + k];
        const float* w = a.w + g * a.wstep + k * a.ldw;
        for (int64_t j = 0; j < a.og; ++j) m[j] += x * w[j];
      }
    }
}

thread_local AlignedScratch tl_wino_v, tl_wino_m;

}  // namespace

bool wino_applies(const Conv2dParams& p) {
  if (p.kh != 3 || p.kw != 3 || p.sh != 1 || p.sw != 1 || p.dh < 1 || p.dw < 1 || p.groups < 1 ||
      p.c % p.groups != 0 || p.oc % p.groups != 0)
    return false;
  if (p.groups == 1) return true;
  // Groups of at least 8 inputs and whole 16-lane blocks of outputs: the GEMMs' K and the tile kernels'
  // width (narrower groups are the transforms' work more than the GEMMs').
  return !p.is_depthwise() && p.c / p.groups >= 8 && (p.oc / p.groups) % 16 == 0;
}

// F(4x4, 3x3): 2.5x-3.3x over direct on 56..14 maps with the weights in cache; F(2x2, 3x3) below 8 x 8,
// where F(4x4) computes as much padding. In a model the transformed weights (36/9 or 16/9 of the filter)
// stream from memory each run and feed one row per tile: with few tiles the GEMMs are bound by that stream
// (T/2 FLOP per weight byte against a core's ridge of 5-13) while the direct conv reuses each weight for
// every pixel. So Winograd only from kWinoMinTiles tiles per conv: F(4x4) on ResNet's 28 x 28 and 56 x 56
// convs (49, 196 tiles), F(2x2) on its 14 x 14 ones (49 tiles; F(4x4) would have 16), none on 7 x 7 (16
// tiles of F(2x2)) — F(4x4) on 14 x 14 and 7 x 7 made ResNet-18 1.2-1.3x and ResNet-50 1.1-1.15x slower on
// a Xeon (AVX-512, ridge 12.5; in-process A/B at one and two threads); F(2x2) on 14 x 14 made them 4-6%
// faster (ResNet-50 at one thread 0.963, at two 0.94-0.955; ResNet-18 0.938 / 0.964-0.989).
int wino_tile_for(const Conv2dParams& p, int64_t images, int64_t oh, int64_t ow) {
  constexpr int64_t kWinoMinTiles = 32;
  if (!wino_applies(p)) return 0;
  const bool known = oh > 0 && ow > 0;
  // Dilated: the phases' sub-grids (dh x dw maps of oh / dh x ow / dw) count, each needing 4 x 4 outputs or
  // more: a dilation near the map's size (DeepLab's atrous pyramid, rates 12-36 on 28 x 28) leaves most taps
  // in the padding, which the direct kernel skips and Winograd would compute.
  if (p.dh > 1 || p.dw > 1) {
    if (!known) return 0;
    images = std::max<int64_t>(images, 1) * p.dh * p.dw;
    oh = (oh + p.dh - 1) / p.dh, ow = (ow + p.dw - 1) / p.dw;
    if (oh < 4 || ow < 4) return 0;
  }
  // Grouped: a block's transformed weights are its own few groups' (36 KiB a 16-channel group as F(4x4)),
  // read from L2 whatever the tile count, so the tile with fewer points (tiles x (m+2)^2: the GEMMs' rows
  // and the transforms' work) wins wherever it halves the direct conv's multiplies. F(4x4) on RegNetY-800MF's
  // 28 x 28 x 144, 14 x 14 x 320 and 7 x 7 x 784 convs (9, 20, 49 groups of 16): 1.7x, 1.5x, 1.3x the
  // direct kernel's speed in the model; F(2x2) at 14 x 14 1.35x, at 7 x 7 1.2x (Zen 4).
  // Full-width FMA cores (Zen 5) halve the GEMMs' time but not the transforms', and F(4x4) transforms 36
  // points per tile against F(2x2)'s 16: there F(4x4) needs at most 0.65x F(2x2)'s points — 28 x 28 and
  // 7 x 7 maps (0.56x) keep it, 14 x 14 ones (0.73x: four of the 16 tiles half padding) take F(2x2). Zen 5,
  // conv_bench at one thread: 14 x 14 x 320 / 20 groups F(4x4) 106 us, F(2x2) 85, direct 101; ResNeXt's 14 x
  // 14 x 512 / 32 170 vs 136. RegNetY-800MF 2.5% faster at one thread and 1.5-4% at two, ResNeXt-50 0.5-2%,
  // RegNetX-400MF -1..+1.5% (tessera bench, alternating). And there, as for dense convs, only from
  // kWinoMinTiles tiles: a 7 x 7 map's 4 tiles of F(4x4) read each transformed weight (4x the filter) 4
  // times, the direct kernel each weight 49 times, and in a model the weights come from L3. Zen 5, one
  // thread, in the model (tessera profile): RegNetX-400MF's 7 x 7 x 400 / 25 convs 51 -> 34 us,
  // RegNetY-800MF's 7 x 7 x 784 100 -> 83, ResNeXt-50's 7 x 7 x 1024 / 32 275 -> 240; their 14 x 14 convs
  // stay faster as F(2x2) (49 tiles; RegNetY's 14 x 14 layers 3.19 ms against 3.33 direct).
  if (p.groups > 1) {
    if (!known) return 4;
    auto map_tiles = [&](int64_t m) { return ((oh + m - 1) / m) * ((ow + m - 1) / m); };
    auto points = [&](int64_t m) { return map_tiles(m) * (m + 2) * (m + 2); };
    const bool full = fma512_full_width();
    // Maps the packed-map direct kernel takes (16 channels a group, at most 14 wide, stride 1) run direct
    // there: 14 x 14 x 320 in 20 groups 86 us against F(2x2)'s 113, 14 x 14 x 160 42 against 50, with the
    // weights cycling through L3 (Zen 5, /tmp/w/wd.cpp, medians of 41; in cache 85 / 96 and 42 / 49).
    if (full && conv_isa() == ConvIsa::avx512f && grouped_map_applies(p)) return 0;
    const int m = double(points(4)) <= (full ? 0.65 : 1.0) * double(points(2)) ? 4 : 2;
    if (full && std::max<int64_t>(images, 1) * map_tiles(m) < kWinoMinTiles) return 0;
    return 2 * points(m) <= 9 * oh * ow ? m : 0;
  }
  auto tiles = [&](int64_t m) {
    return known ? std::max<int64_t>(images, 1) * ((oh + m - 1) / m) * ((ow + m - 1) / m) : kWinoMinTiles;
  };
  const int m = known && oh >= 8 && ow >= 8 && tiles(4) >= kWinoMinTiles ? 4 : 2;
  return tiles(m) >= kWinoMinTiles ? m : 0;
}

size_t wino_packed_floats(int64_t oc, int64_t cg, int m, int64_t groups) {
  const int64_t nx = (m + 2) * (m + 2);
  return groups > 1 ? size_t(nx * cg * oc) : conv_nhwc_packed_floats(oc, nx * cg);
}

void wino_pack_weights(const float* w, int64_t oc, int64_t c, int m, float* out, int64_t groups) {
  // U[o][ci][xi] as an [oc][c][alpha][alpha] tensor (c: a group's inputs), then each group's dense packing
  // with alpha^2 "taps".
  const WinoMats& wm = wino_mats(m);
  const int A = wm.alpha;
  std::vector<float> u(size_t(oc * c * A * A));
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t ci = 0; ci < c; ++ci) {
      const float* g = w + (o * c + ci) * 9;
      double gg[6][3];  // G g
      for (int a = 0; a < A; ++a)
        for (int s = 0; s < 3; ++s)
          gg[a][s] = wm.g[a][0] * g[0 * 3 + s] + wm.g[a][1] * g[1 * 3 + s] + wm.g[a][2] * g[2 * 3 + s];
      for (int a = 0; a < A; ++a)
        for (int b = 0; b < A; ++b)
          u[size_t((o * c + ci) * A * A + a * A + b)] =
              float(gg[a][0] * wm.g[b][0] + gg[a][1] * wm.g[b][1] + gg[a][2] * wm.g[b][2]);
    }
  if (groups == 1) {
    conv_nhwc_pack_weights(u.data(), oc, c, A, A, out);
    return;
  }
  const int64_t og = oc / groups;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t xi = 0; xi < A * A; ++xi)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t o = 0; o < og; ++o)
          out[((g * A * A + xi) * c + ci) * og + o] = u[size_t(((g * og + o) * c + ci) * A * A + xi)];
}

float wino_weight_at(const float* packed, int64_t oc, int64_t c, int m, int64_t o, int64_t ci, int64_t r,
                     int64_t s, int64_t groups) {
  const WinoMats& wm = wino_mats(m);
  const int A = wm.alpha;
  const int64_t og = oc / groups;
  auto u_at = [&](int64_t xi) {
    return groups == 1 ? conv_nhwc_packed_at(packed, oc, A * A * c, o, xi * c + ci)
                       : packed[((o / og * A * A + xi) * c + ci) * og + o % og];
  };
  double g = 0;
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < A; ++b) {
      const double cf = wm.l[r][a] * wm.l[s][b];
      if (cf != 0) g += cf * u_at(a * A + b);
    }
  return float(g);
}

void conv2d_wino_nhwc_f32(const Conv2dParams& p, int mt_, const float* x, const float* up,
                          const ConvEpilogue& ep, float* y, ThreadPool* pool, ConvIsa isa) {
  if (!conv_isa_available(isa)) isa = ConvIsa::portable;
  const int MT = mt_ == 4 ? 4 : 2, A = MT + 2, NX = A * A;
  const int64_t C = p.c, OC = p.oc, oh = p.oh(), ow = p.ow();
  // A dilated conv is dh x dw undilated ones, one per phase (oy mod dh, ox mod dw) over the sub-grid of its
  // inputs dh rows and dw columns apart (space-to-batch): a tile reads its (m+2)^2 pixels and writes its m^2
  // outputs at those strides, so nothing is copied. Tiles go phase by phase within an image.
  const int64_t dh = p.dh, dw = p.dw, gh = (oh + dh - 1) / dh, gw = (ow + dw - 1) / dw;
  const int64_t th = (gh + MT - 1) / MT, tw = (gw + MT - 1) / MT, per_phase = th * tw,
                per_img = dh * dw * per_phase, ntiles = p.n * per_img;
  // tile t: its image, phase and position on the phase's sub-grid
  auto tile_at = [&](int64_t t, int64_t& img, int64_t& py, int64_t& px, int64_t& ty, int64_t& tx) {
    img = t / per_img;
    const int64_t ph = t % per_img / per_phase, q = t % per_phase;
    py = ph / dw, px = ph % dw, ty = q / tw, tx = q % tw;
  };
  const int64_t threads = pool ? pool->num_threads() : 1;
  // Tasks take a block of output channels over a group of tiles. Dense: block j is weight panel j, and
  // reads every input channel (the group's transformed input V serves all its blocks). Grouped: block j is
  // up to gpb whole conv groups (about kConvBlock channels), and reads only their input channels (V per
  // task); each conv group's GEMMs are cg deep over its og columns of the products M. Small maps (a few tile
  // groups) take smaller blocks, enough tasks to go round the threads four times, the groups spread evenly
  // over the blocks: RegNetX's 14 x 14 x 160 conv (10 groups, 16 tiles) made blocks of 4, 4 and 2 groups,
  // three tasks for two threads.
  const int64_t G = p.groups, cg = C / G, og = OC / G, P = conv_panel();
  const bool grouped = G > 1;
  const int64_t tile_groups = (ntiles + (MT == 4 ? 24 : 48) - 1) / (MT == 4 ? 24 : 48);  // grouped, below
  const int64_t np = grouped ? std::clamp<int64_t>((4 * threads + tile_groups - 1) / tile_groups,
                                                   (G + std::max<int64_t>(1, kConvBlock / og) - 1) /
                                                       std::max<int64_t>(1, kConvBlock / og),
                                                   G)
                             : (OC + P - 1) / P;
  const int64_t gpb = grouped ? (G + np - 1) / np : 1;  // groups in the largest block
  const int64_t K = NX * C;                             // dense
  const int64_t mw_max = grouped ? gpb * og : P;        // M's row width (a block's columns)
  const int64_t vc_max = grouped ? gpb * cg : C;        // V's row width (a block's input channels)
  // Tiles per task (a multiple of every MR). A task streams its panel's transformed weights (NX x C x 64
  // floats) once for its T tiles, so each group of tiles streams all of them. Where they reach half of L2
  // they come from L3 or memory for every group, so groups then take as many tiles as keep their
  // transformed input V and products M (NX x T x (C + 64) floats) within three quarters of L2: ResNet's
  // 28 x 28 x 128 convs (2.4 MB of weights, 49 tiles) read them once instead of five times — in the model
  // 0.67-0.70 -> 0.63-0.64 ms with half of L2 (two groups), and 0.9% more of ResNet-18 and -50 at one thread
  // with all 49 tiles in one (Xeon, in-process A/B; ResNet-18 1.2-2.4% faster in all, ResNet-50 0.5-1.4%);
  // its 14 x 14 x 256 ones as F(2x2) (4 MiB) in 24-tile groups ran 24 + 24 + 1 tiles of 49, the weights
  // streamed three times: in one group ResNet-50 4-4.5% faster at one thread. Weights that stay in L2
  // (56 x 56 x 64: 590 KB) keep 12-tile tasks (24 for F(2x2)), fewer while there are under 4 tasks per
  // thread: their larger V and M made them 8% slower.
  const int64_t weight_bytes = NX * cg * OC * int64_t(sizeof(float));
  const int64_t l2 = int64_t(cpu_features().l2_bytes);
  // Group q holds tiles [g0(q), g0(q + 1)): T each, or (big weights) near-equal groups starting at whole MR
  // tiles. `by_thread`: where the panels are too few to go round the threads twice, the groups are a
  // multiple of the threads and each thread takes its own groups over every panel, up front. Claimed one by
  // one, the (group, panel) tasks had both threads transform and multiply parts of both groups, 30 + 19
  // tiles of a 49-tile map: ResNet's 28 x 28 x 128 convs (two panels) ran at 1.5x their one-thread speed at
  // two threads, 0.40-0.44 -> 0.34-0.37 ms now (Xeon); each thread one panel over all 49 tiles instead: the
  // conv alone 3% faster, but its output channels then lie in the other core's cache for the next conv's
  // pixels: ResNet-18 0.4-0.8% slower, ResNet-50 equal. With two panels or more per thread (the 14 x 14 x
  // 256 convs' four) the threads take panels over all tiles instead and stream the weights once between
  // them, not once each: ResNet-50 at two threads 1.7-3.1% faster, ResNet-18 0.3-1.3%.
  int64_t T = MT == 4 ? 12 : 24, ngroups = 0;
  bool by_thread = false;
  // (a grouped block's weights are its own: a fraction of the whole)
  const bool big_weights = !grouped && weight_bytes >= l2 / 2;
  if (big_weights) {
    const int64_t cap =
        std::max<int64_t>(6, l2 * 3 / 4 / (NX * (C + conv_panel()) * int64_t(sizeof(float))) / 6 * 6);
    ngroups = (ntiles + cap - 1) / cap;
    const int64_t per_thread = (ngroups + threads - 1) / threads * threads;
    // groups of at least one whole tile, panels too few for two per thread
    if (threads > 1 && per_thread * 6 <= ntiles && ngroups * np < 2 * threads) {
      ngroups = per_thread;
      by_thread = true;
    } else if (ngroups * np < 2 * threads) {
      ngroups = std::min((ntiles + 5) / 6, (2 * threads + np - 1) / np);
    }
  } else if (grouped) {
    // Near-equal groups of at most 24 tiles (F(2x2): 48): a block's V and M hold only its ~64 channels, and
    // the group GEMMs split a group's tiles into near-equal strips. Enough tasks to go round the threads.
    ngroups = tile_groups;
    while (ngroups * np < 4 * threads && 6 * (ngroups + 1) <= ntiles) ++ngroups;
  } else {
    while (T > 6 && ((ntiles + T - 1) / T) * np < 4 * threads) T -= 6;
    ngroups = (ntiles + T - 1) / T;
  }
  auto g0 = [&](int64_t q) {
    return q >= ngroups  ? ntiles
           : big_weights ? std::min(ntiles, (q * ntiles / ngroups + 3) / 6 * 6)
           : grouped     ? q * ntiles / ngroups
                         : q * T;
  };
  if (big_weights || grouped) {  // T: the largest group (the buffers' row count)
    T = 1;
    for (int64_t q = 0; q < ngroups; ++q) T = std::max(T, g0(q + 1) - g0(q));
  }
  const std::vector<KBlock> blocks = k_blocks(1, C, 512);
  void (*win)(const float* const*, int64_t, float*, int64_t) =
      MT == 4 ? wino_in_portable<4> : wino_in_portable<2>;
  void (*wout)(const float*, int64_t, int64_t, const WinoOut&) =
      MT == 4 ? wino_out_portable<4> : wino_out_portable<2>;
  void (*group_gemm)(const WinoGroupGemm&) = wino_group_gemm_portable;
#ifdef TESSERA_CONV_X86
  if (isa == ConvIsa::avx512f) {
    win = MT == 4 ? wino43_in_avx512f : wino23_in_avx512f;
    wout = MT == 4 ? wino43_out_avx512f : wino23_out_avx512f;
    group_gemm = wino_group_gemm_avx512f;
  } else if (isa == ConvIsa::avx2) {
    win = MT == 4 ? wino43_in_avx2 : wino23_in_avx2;
    wout = MT == 4 ? wino43_out_avx2 : wino23_out_avx2;
    group_gemm = wino_group_gemm_avx2;
  }
#endif
  auto body = [&](int64_t tb, int64_t te) {
    if (tl_zeros.size() < size_t(C)) tl_zeros.assign(size_t(C), 0.0f);
    const float* zeros = tl_zeros.data();
    float* V = tl_wino_v.get(size_t(NX * T * vc_max));
    float* M = tl_wino_m.get(size_t(NX * T * mw_max));
    int64_t have = -1;  // the tiles (dense: group; grouped: task) whose transformed input V holds
    for (int64_t task = tb; task < te; ++task) {
      const int64_t q = task / np, j = task % np;
      const int64_t t0 = g0(q), nt = g0(q + 1) - t0;
      if (nt <= 0) continue;
      // block j: output channels [col, col + ncols) from input channels [c0, c0 + vc)
      const int64_t gb = j * G / np,
                    ng = grouped ? (j + 1) * G / np - gb : 1;  // grouped: groups [gb, gb + ng)
      const int64_t col = grouped ? gb * og : j * P;
      const int64_t ncols_blk = grouped ? ng * og : std::min(P, OC - col);
      const int64_t c0 = grouped ? gb * cg : 0, vc = grouped ? ng * cg : C;
      const int64_t mw = grouped ? ng * og : conv_nhwc_panel_width(OC, j);
      if (have != (grouped ? task : q)) {
        for (int64_t tl = 0; tl < nt; ++tl) {
          int64_t img, py, px, ty, tx;
          tile_at(t0 + tl, img, py, px, ty, tx);
          const float* xi = x + img * p.h * p.w * C;
          const float* src[36];
          for (int r = 0; r < A; ++r)
            for (int s = 0; s < A; ++s) {
              const int64_t iy = py + dh * (ty * MT + r) - p.pad_t, ix = px + dw * (tx * MT + s) - p.pad_l;
              src[r * A + s] =
                  (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) ? xi + (iy * p.w + ix) * C + c0 : zeros;
            }
          win(src, vc, V + tl * vc, T * vc);
        }
        have = grouped ? task : q;
      }
      if (grouped) {
        // each point's GEMMs over the block's groups (the packing: group, point, input, output)
        for (int xi = 0; xi < NX; ++xi)
          group_gemm(WinoGroupGemm{V + xi * T * vc, vc, up + (gb * NX + xi) * cg * og, og, NX * cg * og,
                                   M + xi * T * mw, mw, nt, ng, cg, og});
      } else {
        const int64_t pw = mw, ncols = ncols_blk;
        const float* panel = up + j * P * K;
        ConvUkrInfo u{conv_ukr_portable, 4, 16};
#ifdef TESSERA_CONV_X86
        if (isa == ConvIsa::avx512f)
          u = conv_ukr_avx512f(ncols);
        else if (isa == ConvIsa::avx2)
          u = conv_ukr_avx2(ncols);
#endif
        const float* rows[16];
        // Whole tiles of one K block over a whole panel: the tile kernel, its rows C floats apart in V (the
        // general kernel's row table and call per tile: ResNet's Winograd convs 5-6% slower, ResNet-18 and
        // -50 0.6-1.5% in all; Xeon, in-process A/B)
        const bool whole = u.tiles && blocks.size() == 1 && u.tiles_take(ncols, pw);
        const int64_t wt = whole ? nt / u.mr : 0;
        // Weights from L3 or memory (big_weights): the tiles of each point xi prefetch the next point's C x
        // pw block into L2 (the last point's: the next panel's first, which follows in memory), paced over
        // their K loops, so that only a conv's first block waits on memory. Xeon, weights cold: 14 x 14 x 256
        // as F(2x2) 0.96 -> 0.74 ms, 28 x 28 x 128 as F(4x4) 0.55 -> 0.43 (one thread; two: 0.52 -> 0.42,
        // 0.30 -> 0.22); in-process A/B ResNet-50 3.6-4.9% faster at one and two threads, ResNet-18 4.4-7.2%.
        // Weights that stay in L2 (56 x 56 x 64: 590 KB) gain nothing from it (0.49 ms either way).
        const float* panel_end = up + std::min(np, j + 2) * P * K;
        for (int xi = 0; xi < NX; ++xi)
          for (size_t bi = 0; bi < blocks.size(); ++bi) {
            const KBlock& b = blocks[bi];
            const float* wb = panel + (xi * C + b.c0) * pw;
            ConvPrefetch next{};
            if (big_weights && wt > 0) {
              const float* nb = panel + ((xi + 1) * C + b.c0) * pw;
              const int64_t bytes = std::min<int64_t>(C * pw, panel_end - nb) * int64_t(sizeof(float));
              if (bytes > 0)
                next = {reinterpret_cast<const char*>(nb),
                        std::max<int64_t>(1, bytes / (wt * (ncols / u.nr) * C))};
            }
            if (wt > 0)
              u.tiles(nullptr, V + xi * T * C, C, wt, 1, C, wb, pw * K, ncols / u.nr, M + xi * T * pw, pw,
                      ConvTileEpilogue{nullptr, nullptr, 0, Activation::none, 0.0f, 0.0f}, next);
            for (int64_t mt = wt * u.mr; mt < nt; mt += u.mr) {
              const int64_t mr = std::min(u.mr, nt - mt);
              for (int64_t i = 0; i < u.mr; ++i) rows[i] = i < mr ? V + (xi * T + mt + i) * C + b.c0 : zeros;
              for (int64_t j0 = 0; j0 < ncols; j0 += u.nr)
                u.for_rows(mr)(rows, 1, b.c1 - b.c0, wb + j0, pw, M + (xi * T + mt) * pw + j0, pw, mr,
                               std::min(u.nr, ncols - j0), bi > 0, nullptr, {});
            }
          }
      }
      for (int64_t tl = 0; tl < nt; ++tl) {
        int64_t img, py, px, ty, tx;
        tile_at(t0 + tl, img, py, px, ty, tx);
        WinoOut o{};
        o.bias = ep.bias ? ep.bias + col : nullptr;
        o.act = ep.act, o.clip_min = ep.clip_min, o.clip_max = ep.clip_max;
        for (int i = 0; i < MT; ++i)
          for (int k = 0; k < MT; ++k) {
            const int64_t oy = py + dh * (ty * MT + i), ox = px + dw * (tx * MT + k);
            const bool in = oy < oh && ox < ow;
            const int64_t off = ((img * oh + oy) * ow + ox) * OC + col;
            o.y[i * MT + k] = in ? y + off : nullptr;
            o.res[i * MT + k] = in && ep.residual ? ep.residual + off : nullptr;
          }
        wout(M + tl * mw, T * mw, ncols_blk, o);
      }
    }
  };
  if (by_thread)
    pool->run(threads,
              [&](int64_t t) { body(ngroups * np * t / threads, ngroups * np * (t + 1) / threads); });
  else
    run_tasks(pool, ngroups * np, double(ntiles) * NX * double(cg) * double(OC), body);
}

bool grouped_map_applies(const Conv2dParams& p) {
  const int64_t ow = p.ow();
  return p.groups > 1 && p.c == 16 * p.groups && p.oc == 16 * p.groups && p.kh == 3 && p.kw == 3 &&
         p.dh == 1 && p.dw == 1 && p.sh == 1 && p.sw == 1 && p.pad_t <= 1 && p.pad_l <= 1 && p.pad_b <= 1 &&
         p.pad_r <= 1 && p.w + p.pad_l + p.pad_r <= kGroupMapCols && p.h <= 32 && ow <= 14;
}

size_t grouped_map_floats(const Conv2dParams& p) {
  return size_t((p.h + 6) * kGroupMapCols * 16);
}

bool conv_grouped_applies(const Conv2dParams& p) {
  if (p.groups <= 1 || p.is_depthwise() || p.c % p.groups != 0 || p.oc % p.groups != 0) return false;
  const int64_t ci = p.c / p.groups, co = p.oc / p.groups;
  return (ci == co && (ci == 2 || ci == 4 || ci == 8)) || co % 16 == 0;
}

size_t grouped_nhwc_packed_floats(const Conv2dParams& p) {
  return size_t((p.oc + 15) / 16 * p.kh * p.kw * (p.c / p.groups) * 16);
}

void grouped_nhwc_pack_weights(const float* w, const Conv2dParams& p, float* out) {
  const int64_t taps = p.kh * p.kw, ci = p.c / p.groups, nb = (p.oc + 15) / 16;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t j = 0; j < ci; ++j)
        for (int64_t o = 0; o < 16; ++o) {
          const int64_t oc = b * 16 + o;
          out[((b * taps + t) * ci + j) * 16 + o] = oc < p.oc ? w[(oc * ci + j) * taps + t] : 0.0f;
        }
}

float grouped_nhwc_packed_at(const float* wp, const Conv2dParams& p, int64_t o, int64_t ci, int64_t tap) {
  return wp[((o / 16 * p.kh * p.kw + tap) * (p.c / p.groups) + ci) * 16 + o % 16];
}

namespace {

// The portable grouped row: each output channel's sum over its group's input channels, from the packed
// weights.
void grouped_row_portable(const GroupedRowArgs& a, const float*) {
  const int64_t taps = a.kh * a.kw;
  const int64_t o0 = a.blk0 * 16, o1 = a.blk1 < 0 ? a.oc : std::min(a.oc, a.blk1 * 16);
  for (int64_t ox = 0; ox < a.ow; ++ox)
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t in0 = o / a.cpg_out * a.cpg_in;
      const float* wo = a.wp + o / 16 * taps * a.cpg_in * 16 + o % 16;
      float s = a.bias ? a.bias[o] : 0.0f;
      for (int64_t r = 0; r < a.kh; ++r) {
        const int64_t iy = a.iy0 + r * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t q = 0; q < a.kw; ++q) {
          const int64_t ix = ox * a.sw + a.ix0 + q * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          const float* xp = a.x + (iy * a.w + ix) * a.c + in0;
          const float* wt = wo + (r * a.kw + q) * a.cpg_in * 16;
          for (int64_t j = 0; j < a.cpg_in; ++j) s += xp[j] * wt[j * 16];
        }
      }
      if (a.residual) s += a.residual[ox * a.oc + o];
      a.y[ox * a.oc + o] = activate(s, a.act, a.clip_min, a.clip_max);
    }
}

void conv_grouped(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                  ThreadPool* pool, ConvIsa isa) {
  if (!conv_grouped_applies(p))
    throw std::invalid_argument("conv_grouped: groups the NHWC kernels do not take");
  const int64_t oh = p.oh(), ow = p.ow();
  void (*row)(const GroupedRowArgs&, const float*) = grouped_row_portable;
#ifdef TESSERA_CONV_X86
  if (isa == ConvIsa::avx512f)
    row = grouped_row_avx512f;
  else if (isa == ConvIsa::avx2)
    row = grouped_row_avx2;
#else
  (void)isa;
#endif
  const int64_t ci = p.c / p.groups, co = p.oc / p.groups;
  // Rows of fewer than 7 pixels (tiles too short to cover the FMA latency) go in bands of rows whose pixels
  // the tiles take as one run (the broadcast kind, vector ISAs); the pixels' own window origins cost the band
  // tile some speed. Measured against rows cut 4 + 2 + 1 (Zen 4, /tmp/w/gc.cpp, one thread, in cache):
  // 7 x 7 x 784 in 49 groups 0.171 -> 0.146 ms, 14 x 14 x 784 at stride 2 0.157 -> 0.137, 7 x 7 x 1024 in 32
  // groups 0.365 -> 0.285. A row of 7 is one tile of 7 since rows are cut evenly, which beats the band on
  // Zen 5 (/tmp/w/gc2.cpp, best of 31): 16 channels a group 7 x 7 x 400 41 -> 31 us, 7 x 7 x 784 75 -> 55,
  // 14 x 14 x 784 at stride 2 79 -> 63; 32 a group (7 x 7 x 1024) equal. Rows of 14 were 7-25% slower in
  // bands.
  constexpr int64_t kBandPixels = 32;
  const bool band = row != grouped_row_portable && co % 16 == 0 && ow < 7;
  const int64_t rows = band ? std::min(oh, (kBandPixels + ow - 1) / ow) : 1, bands = (oh + rows - 1) / rows;
  // Software prefetch of the next band's input rows (vector ISAs): each block reads its group's line(s) of
  // every pixel, block after block, which the hardware prefetchers do not follow. RegNetY's 112 x 112 x 64
  // stride-2 conv with its input out of cache (as a model leaves it) ran 2.3x slower than in cache.
  // tiles: about how many tile calls a band makes (blocks, two at a time where a group has 32+ outputs, times
  // the row's tiles of up to 8 pixels), so the prefetches end about halfway through the band.
  const bool prefetch = row != grouped_row_portable;
#ifdef TESSERA_CONV_X86
  // 16 channels a group on maps at most 14 wide (RegNet's 7 x 7 and 14 x 14 stages), AVX-512: a group at a
  // time over the whole map from a zero-bordered copy of its input (grouped_map_avx512f), 14 sums a tile and
  // every tap a constant offset, the next group's weights prefetched. Zen 5, one thread, weights cycling
  // through L3 (/tmp/w/gc.cpp, medians of 41, the row kernel -> this): 7 x 7 x 400 in 25 groups 34.0 ->
  // 28.6 us, 7 x 7 x 784 65.7 -> 54.9, 14 x 14 x 160 53.5 -> 42.5, 14 x 14 x 320 107 -> 83; in the models
  // (tessera profile) RegNetY-800MF's 14 x 14 x 320 convs 105 -> 83 us (from Winograd F(2x2), see
  // wino_tile_for), RegNetX-400MF's 14 x 14 x 160 53-57 -> 42-43. Not at stride 2 (14 x 14 x 400 -> 7 x 7 as
  // two 7-pixel rows a tile: 36.5 -> 39.4 us, slower than the row kernel's).
  if (isa == ConvIsa::avx512f && grouped_map_applies(p)) {
    const size_t map_floats = grouped_map_floats(p);
    run_tasks(pool, p.n * p.groups, double(p.n * oh * ow) * double(p.oc * ci * 9), [&](int64_t b, int64_t e) {
      thread_local AlignedScratch tl_map;
      float* map = tl_map.get(map_floats);
      std::memset(map, 0, map_floats * sizeof(float));  // the border, which the groups' interiors never touch
      for (int64_t t = b; t < e; ++t) {
        const int64_t img = t / p.groups, g = t % p.groups;
        GroupMapArgs a{};
        a.x = x + img * p.h * p.w * p.c, a.h = p.h, a.w = p.w, a.c = p.c, a.in0 = g * 16;
        a.wp = wp + g * kGroupMapWeights, a.bias = ep.bias ? ep.bias + g * 16 : nullptr;
        a.y = y + img * oh * ow * p.oc + g * 16;
        a.residual = ep.residual ? ep.residual + img * oh * ow * p.oc + g * 16 : nullptr;
        a.oh = oh, a.ow = ow, a.oc = p.oc, a.pad_t = p.pad_t, a.pad_l = p.pad_l;
        a.act = ep.act, a.clip_min = ep.clip_min, a.clip_max = ep.clip_max, a.map = map;
        a.next_wp = t + 1 < e && g + 1 < p.groups ? a.wp + kGroupMapWeights : nullptr;
        grouped_map_avx512f(a);
      }
    });
    return;
  }
#endif
  // Small maps go block-major: each group's blocks take every output row in turn (the group's input, its
  // line(s) of every pixel, stays in L1), and meanwhile the next group's weights are prefetched into L2, a
  // slice a tile. In a model the weights come from L3 or memory (a run streams all of them), where a group's
  // 9 KiB (16 channels a group) stalled every tile of the row-major order. Zen 5, one thread, weights cycling
  // through L3 (/tmp/w/gc.cpp, medians of 41, row-major -> this): 7 x 7 x 400 in 25 groups 48.5 -> 34.6 us,
  // 7 x 7 x 784 90 -> 66, 14 x 14 x 160 60 -> 52, 14 x 14 x 320 122 -> 108; weights in cache 32 -> 33. The
  // order alone (no prefetch) changed nothing.
  const int64_t group_lines = (ci * int64_t(sizeof(float)) + 63) / 64 * p.h * p.w;
  const bool block_major = !band && row != grouped_row_portable && group_lines * 64 <= (24 << 10);
  if (block_major) {
    const int64_t bpg =
        std::max<int64_t>(1, co / 16);  // blocks a group (the permute kind: 16 channels a block)
    const int64_t nblk = (p.oc + 15) / 16, units = (nblk + bpg - 1) / bpg;
    run_tasks(pool, p.n * units, double(p.n * oh * ow) * double(p.oc * ci * p.kh * p.kw),
              [&](int64_t b, int64_t e) {
                const size_t nz = size_t(std::max<int64_t>(16, ci));
                if (tl_zeros.size() < nz) tl_zeros.assign(nz, 0.0f);
                for (int64_t t = b; t < e; ++t) {
                  const int64_t img = t / units, u = t % units;
                  GroupedRowArgs a{};
                  a.x = x + img * p.h * p.w * p.c;
                  a.h = p.h, a.w = p.w, a.c = p.c, a.wp = wp, a.oc = p.oc, a.cpg_in = ci, a.cpg_out = co;
                  a.permute = co % 16 != 0;
                  a.kh = p.kh, a.kw = p.kw, a.sw = p.sw, a.dh = p.dh, a.dw = p.dw, a.ix0 = -p.pad_l,
                  a.ow = ow;
                  a.rows = 1, a.sh = p.sh;
                  a.bias = ep.bias, a.act = ep.act, a.clip_min = ep.clip_min, a.clip_max = ep.clip_max;
                  a.blk0 = u * bpg, a.blk1 = std::min(nblk, (u + 1) * bpg);
                  // the next group's weights, spread over this group's tiles
                  LinePrefetch pf;
                  if (t + 1 < e && u + 1 < units) {
                    const int64_t blk_floats = p.kh * p.kw * ci * 16;
                    pf.next = reinterpret_cast<const char*>(wp + a.blk1 * blk_floats);
                    pf.end = reinterpret_cast<const char*>(wp + std::min(nblk, a.blk1 + bpg) * blk_floats);
                    pf.per_tile = ((pf.end - pf.next) / 64) / (oh * ((ow + 7) / 8) * bpg) + 1;
                    a.prefetch = &pf;
                  }
                  for (int64_t oy = 0; oy < oh; ++oy) {
                    const int64_t first = img * oh + oy;
                    a.iy0 = oy * p.sh - p.pad_t;
                    a.y = y + first * ow * p.oc;
                    a.residual = ep.residual ? ep.residual + first * ow * p.oc : nullptr;
                    row(a, tl_zeros.data());
                  }
                }
              });
    return;
  }
  const int64_t tiles =
      std::max<int64_t>(1, (p.oc + 15) / 16 / (co % 32 == 0 ? 2 : 1)) * ((rows * ow + 7) / 8);
  run_tasks(
      pool, p.n * bands, double(p.n * oh * ow) * double(p.oc * ci * p.kh * p.kw), [&](int64_t b, int64_t e) {
        const size_t nz = size_t(std::max<int64_t>(16, ci));
        if (tl_zeros.size() < nz) tl_zeros.assign(nz, 0.0f);
        for (int64_t t = b; t < e; ++t) {
          const int64_t img = t / bands, oy = t % bands * rows, first = img * oh + oy;
          GroupedRowArgs a{};
          a.x = x + img * p.h * p.w * p.c;
          a.h = p.h, a.w = p.w, a.c = p.c, a.wp = wp, a.oc = p.oc, a.cpg_in = ci, a.cpg_out = co;
          a.permute = co % 16 != 0;
          a.kh = p.kh, a.kw = p.kw, a.sw = p.sw, a.dh = p.dh, a.dw = p.dw;
          a.iy0 = oy * p.sh - p.pad_t, a.ix0 = -p.pad_l, a.ow = ow;
          a.rows = std::min(rows, oh - oy), a.sh = p.sh;
          a.y = y + first * ow * p.oc;
          a.residual = ep.residual ? ep.residual + first * ow * p.oc : nullptr;
          a.bias = ep.bias, a.act = ep.act, a.clip_min = ep.clip_min, a.clip_max = ep.clip_max;
          // the input rows the next band reads and this one does not, spread over this band's tiles,
          LinePrefetch pf;
          const int64_t reach = (p.kh - 1) * p.dh, last = a.iy0 + (a.rows - 1) * p.sh + reach;
          const int64_t next0 = a.iy0 + rows * p.sh, r0 = std::max({last + 1, next0, int64_t(0)}),
                        r1 = std::min(next0 + (rows - 1) * p.sh + reach, p.h - 1);
          if (prefetch && t + 1 < e && oy + rows < oh && r0 <= r1) {  // (the next band is this thread's)
            const int64_t row_bytes = p.w * p.c * int64_t(sizeof(float));
            pf.next = reinterpret_cast<const char*>(a.x) + r0 * row_bytes;
            pf.end = reinterpret_cast<const char*>(a.x) + (r1 + 1) * row_bytes;
            pf.per_tile = ((pf.end - pf.next) / 64 + tiles - 1) / tiles + 1;
            // and the output rows it writes (partial lines, block by block: each one's read first)
            pf.wnext = reinterpret_cast<char*>(a.y + a.rows * ow * p.oc);
            pf.wend = reinterpret_cast<char*>(a.y + std::min(2 * rows, oh - oy) * ow * p.oc);
            a.prefetch = &pf;
          }
          row(a, tl_zeros.data());
        }
      });
}

}  // namespace

void conv2d_nhwc_f32(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                     ThreadPool* pool, ConvIsa isa) {
  if (!conv_isa_available(isa)) isa = ConvIsa::portable;
  if (p.is_depthwise())
    conv_depthwise(p, x, wp, ep, y, pool, isa);
  else if (p.groups > 1)
    conv_grouped(p, x, wp, ep, y, pool, isa);
  else
    conv_dense(p, x, wp, ep, y, pool, isa);
}

// Up to 36 taps (3 x 3 over 3 or 4 channels). The tile's transpose and epilogue are worth it there: the
// kernel runs about as fast as the NHWC direct conv and the image needs no Transpose (MobileNetV2 2.3%
// faster at one thread, 1.7% at two; Xeon, sessions A/B in one process). ResNet's 7 x 7 stem (147 taps)
// runs 12% slower here than in conv2d_nhwc_f32, more than its input's Transpose costs (ResNet-18 3%).
bool conv_nchw_in_applies(const Conv2dParams& p, ConvIsa isa) {
#ifdef TESSERA_CONV_X86
  return isa == ConvIsa::avx512f && conv_isa_available(isa) && p.groups == 1 && p.c >= 1 && p.c <= 4 &&
         p.dh == 1 && p.dw == 1 && (p.sw == 1 || p.sw == 2) && p.kh * p.kw * p.c <= 36;
#else
  (void)p, (void)isa;
  return false;
#endif
}

#ifdef TESSERA_CONV_X86
namespace {

// Output rows [oy0, oy1) of image img of conv2d_nchw_in_f32 (p applies), row oy at y + (oy - oy0) * OW * OC,
// in bands of kBand rows whose input rows (a few KiB each) are split into phase rows once per band.
void nchw_in_rows(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, int64_t img,
                  int64_t oy0, int64_t oy1, float* y) {
  constexpr int64_t kBand = 4;
  const int64_t C = p.c, OC = p.oc, H = p.h, W = p.w, OW = p.ow(), S = p.sw;
  const int64_t K = p.kh * p.kw * C, P = conv_panel();
  // A phase row holds the columns of the input row that output columns 0, 1, ... read at one tap
  // offset; tap s reads phase s % S from column s / S on, up to the next multiple of 16 output columns.
  const int64_t len = (OW + 15) / 16 * 16 + (p.kw - 1) / S + 1, per_row = C * S * len;
  thread_local AlignedScratch tl_phase;
  thread_local std::vector<const float*> tl_taps;
  tl_taps.resize(size_t(K));
  const float** taps = tl_taps.data();
  auto input_rows = [&](int64_t a, int64_t b) {  // the input rows output rows [a, b) read
    const int64_t lo = std::clamp<int64_t>(a * p.sh - p.pad_t, 0, H);
    return std::pair{lo, std::clamp<int64_t>((b - 1) * p.sh - p.pad_t + p.kh, lo, H)};
  };
  for (int64_t b0 = oy0; b0 < oy1; b0 += kBand) {
    const int64_t b1 = std::min(oy1, b0 + kBand);
    const auto [iy_lo, iy_hi] = input_rows(b0, b1);
    float* buf = tl_phase.get(size_t((iy_hi - iy_lo) * per_row + len));
    float* zero = buf + (iy_hi - iy_lo) * per_row;  // the rows in the padding
    std::memset(zero, 0, size_t(len) * sizeof(float));
    for (int64_t iy = iy_lo; iy < iy_hi; ++iy)
      for (int64_t ci = 0; ci < C; ++ci)
        nchw_phase_rows_avx512f(x + ((img * C + ci) * H + iy) * W, W, p.pad_l, S, len,
                                buf + (iy - iy_lo) * per_row + ci * S * len);
    // The next band's input rows, for reading, while this band computes: the input is cold when a run
    // starts (MobileNetV2's stem took 0.36 ms in the model against 0.26 with the cache warm).
    if (b1 < p.oh()) {
      const auto [ny_lo, ny_hi] = input_rows(b1, std::min(p.oh(), b1 + kBand));
      for (int64_t ci = 0; ci < C; ++ci) {
        const char* rows = reinterpret_cast<const char*>(x + ((img * C + ci) * H + ny_lo) * W);
        for (int64_t off = 0; off < (ny_hi - ny_lo) * W * int64_t(sizeof(float)); off += 64)
          __builtin_prefetch(rows + off, 0, 3);
      }
    }
    for (int64_t oy = b0; oy < b1; ++oy) {
      for (int64_t r = 0; r < p.kh; ++r) {
        const int64_t iy = oy * p.sh - p.pad_t + r;
        for (int64_t q = 0; q < p.kw; ++q)
          for (int64_t ci = 0; ci < C; ++ci)
            taps[(r * p.kw + q) * C + ci] =
                iy >= 0 && iy < H ? buf + (iy - iy_lo) * per_row + (ci * S + q % S) * len + q / S : zero;
      }
      // Blocks of 32 channels in the NHWC kernel (two FMAs per broadcast, no transpose: RegNet's 3 -> 32
      // stem 151 -> 134 us warm, 3 -> 24 140 -> 130 on Zen 5); 16 or fewer in the transposing one (3 -> 16:
      // 83 us there against 97).
      for (int64_t oc0 = 0; oc0 < OC; oc0 += 32) {
        const int64_t j = oc0 / P;
        NchwInRowArgs a{};
        a.taps = taps, a.ntaps = K;
        a.w = wp + j * P * K + oc0 % P, a.ldw = conv_nhwc_panel_width(OC, j);
        a.ow = OW, a.y = y + (oy - oy0) * OW * OC + oc0, a.ldy = OC, a.nc = std::min<int64_t>(32, OC - oc0);
        a.bias = ep.bias ? ep.bias + oc0 : nullptr;
        a.act = ep.act, a.clip_min = ep.clip_min, a.clip_max = ep.clip_max;
        if (a.nc > 16)
          conv_nchw_in_row_nhwc_avx512f(a);
        else
          conv_nchw_in_row_avx512f(a);
      }
    }
  }
}

}  // namespace
#endif

void conv2d_nchw_in_f32(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep,
                        float* y, ThreadPool* pool, ConvIsa isa) {
#ifdef TESSERA_CONV_X86
  if (!conv_nchw_in_applies(p, isa) || ep.residual)
    throw std::invalid_argument("conv2d_nchw_in_f32: not a stem conv on AVX-512");
  const int64_t OH = p.oh(), OW = p.ow();
  // Tasks of 4 output rows.
  constexpr int64_t kTask = 4;
  const int64_t nbands = (OH + kTask - 1) / kTask;
  run_tasks(pool, p.n * nbands, double(p.n * OH * OW) * double(p.kh * p.kw * p.c * p.oc),
            [&](int64_t tb, int64_t te) {
              for (int64_t task = tb; task < te; ++task) {
                const int64_t img = task / nbands, oy0 = task % nbands * kTask,
                              oy1 = std::min(OH, oy0 + kTask);
                nchw_in_rows(p, x, wp, ep, img, oy0, oy1, y + (img * OH + oy0) * OW * p.oc);
              }
            });
#else
  (void)p, (void)x, (void)wp, (void)ep, (void)y, (void)pool, (void)isa;
  throw std::invalid_argument("conv2d_nchw_in_f32: not built for x86");
#endif
}

// Each task owns a band of output rows of one image and walks it `step` rows at
// a time: the pointwise conv fills the intermediate rows the step needs into a
// per-thread buffer (keeping the rows the previous step already made), then the
// depthwise conv reads them there. Only a task's first step recomputes rows
// (the halo it shares with the band above), so one thread computes each
// intermediate row once. Measured against the two convs apart on MobileNetV2's
// pairs: equal at one thread; at two, 1.2-1.4x on the 112 to 28 pixel maps.
// A projection runs on each step's depthwise output rows as they are made (a
// per-thread buffer of those rows), so that output never goes to memory either.
#ifdef TESSERA_CONV_X86
namespace {

// part[m][o] (+)= sum over k < kc of d[m * ldd + k] * W[k0 + k][o] for m < rows, o < oc, W a pointwise conv's
// packed weights (K rows): the projection over a slice of its input channels, without an epilogue.
void project_k_slice(const float* d, int64_t ldd, int64_t rows, int64_t k0, int64_t kc, const float* w,
                     int64_t K, int64_t oc, float* part, bool accumulate, ConvIsa isa) {
  const int64_t P = conv_panel();
  const float* r[16];
  for (int64_t col = 0; col < oc; col += P) {
    const int64_t pj = col / P, pw = conv_nhwc_panel_width(oc, pj), ncols = std::min(P, oc - col);
    const ConvUkrInfo u = isa == ConvIsa::avx512f ? conv_ukr_avx512f(ncols) : conv_ukr_avx2(ncols);
    for (int64_t j0 = 0; j0 < ncols; j0 += u.nr) {  // AVX2 walks a 64-wide panel in strips
      const int64_t nr = std::min(u.nr, ncols - j0);
      const float* wj = w + pj * P * K + k0 * pw + j0;
      for (int64_t m = 0; m < rows; m += u.mr) {
        const int64_t mr = std::min(u.mr, rows - m);
        for (int64_t i = 0; i < mr; ++i) r[i] = d + (m + i) * ldd;
        u.for_rows(mr)(r, 1, kc, wj, pw, part + m * oc + col + j0, oc, mr, nr, accumulate, nullptr, {});
      }
    }
  }
}

}  // namespace
#endif

void conv2d_pw_dw_nhwc_f32(const Conv2dParams& pw, const float* x, const float* w1, const ConvEpilogue& ep1,
                           const Conv2dParams& dw, const float* w2, const ConvEpilogue& ep2, float* y,
                           ThreadPool* pool, ConvIsa isa, const ConvProjection* proj) {
  if (!conv_isa_available(isa)) isa = ConvIsa::portable;
  const int64_t n = pw.n, H = dw.h, W = dw.w, C = pw.c, E = dw.c, OH = dw.oh(), OW = dw.ow();
  if (n <= 0 || OH <= 0 || OW <= 0) return;
  const bool expand = w1 != nullptr;  // else the depthwise conv reads x (C = E)
  // A stem conv over an NCHW x instead of a pointwise one (conv2d_nchw_in_f32): its output rows are made a
  // band at a time the same way, and its output map (MobileNetV2's 112 x 112 x 32: 1.6 MB, past L2) never
  // goes to memory and back.
  const bool stem = expand && !pw.is_pointwise();
  if (stem && (!conv_nchw_in_applies(pw, isa) || ep1.residual))
    throw std::invalid_argument("conv2d_pw_dw_nhwc_f32: the producer is neither pointwise nor a stem conv");
  // Rows [r0, r1) of image img's intermediate (the producer's output) at out.
  auto produce = [&](int64_t img, int64_t r0, int64_t r1, float* out) {
#ifdef TESSERA_CONV_X86
    if (stem) return nchw_in_rows(pw, x, w1, ep1, img, r0, r1, out);
#endif
    Conv2dParams q = pw;
    q.n = 1, q.h = r1 - r0;
    conv_dense(q, x + (img * H + r0) * W * C, w1, ep1, out, nullptr, isa);
  };
  // The projection of depthwise output rows [oy0, oy1) of image img, read at d (OW * E floats a row).
  auto project = [&](const float* d, int64_t img, int64_t oy0, int64_t oy1, ThreadPool* tp) {
    Conv2dParams q;
    q.n = 1, q.h = oy1 - oy0, q.w = OW, q.c = E, q.oc = proj->oc;
    ConvEpilogue e3 = proj->ep;
    const int64_t at = (img * OH + oy0) * OW * proj->oc;
    if (e3.residual) e3.residual += at;
    conv_dense(q, d, proj->w, e3, y + at, tp, isa);
  };
  // Paths that make whole depthwise maps: through a scratch map when a projection follows.
  auto depthwise_maps = [&]() -> float* {
    thread_local AlignedScratch tl_dmap;
    return proj ? tl_dmap.get(size_t(n * OH * OW * E)) : y;
  };
  const int64_t row = W * E;  // floats per intermediate row
  auto first_row = [&](int64_t oy) { return std::clamp<int64_t>(oy * dw.sh - dw.pad_t, 0, H); };
  auto end_row = [&](int64_t oy1) {
    return std::clamp<int64_t>((oy1 - 1) * dw.sh - dw.pad_t + (dw.kh - 1) * dw.dh + 1, 0, H);
  };
  // output rows per step: as many as keep their intermediate rows within half of L2 (the input rows and
  // the output stream through the rest; all of a 512 KiB L2 made MobileNetV2's large maps 2-5% slower)
  const int64_t budget =
      std::max<int64_t>(1, int64_t(cpu_features().l2_bytes) / 2 / int64_t(sizeof(float)) / row);
  int64_t step = 1;
  while (step < OH && (step * dw.sh + (dw.kh - 1) * dw.dh + 1) <= budget) ++step;
  // With a projection, also no more than keep the depthwise output rows (which the projection reads back
  // at once) within an eighth of L2: MobileNetV2 2-2.7% faster at one thread than at the pair's step (its
  // 56 x 56 x 144 block 11%), 0.7-1.9% at two; a sixteenth or a fourth, 1-1.5% (Xeon, in-process A/B).
  // Not where the pair's and the projection's weights (C x E and E x OC floats) outweigh the depthwise output
  // map (OH x OW x E): each step streams all the weights again, from L3 as a model leaves them, and the late
  // blocks' maps are small. Zen 5, one thread, weights cycling through L3 (/tmp/w/pwdw.cpp, medians of 31):
  // 7 x 7 x 160 -> 960 -> 160 177 -> 157 us (two steps -> one), 7 x 7 x 112 -> 672 -> 160 97 -> 93,
  // 14 x 14 x 112 -> 672 -> 112 305 -> 297 (five steps -> two); in cache 9%, 4% and 2% too.
  const bool big_weights = proj && C + proj->oc > OH * OW;
  if (proj && !big_weights)
    step = std::clamp<int64_t>(int64_t(cpu_features().l2_bytes) / 8 / int64_t(sizeof(float)) / (OW * E), 1,
                               step);
  const int64_t threads = pool ? pool->num_threads() : 1;
  // Bands per image: one per image when the images keep the threads busy; else one per thread, as long as
  // the halo rows each band boundary recomputes (kh - sh, dilated) stay under 1/3 of a band's input rows
  // (two per thread recomputed more: MobileNetV2's 56 x 56 and 28 x 28 pairs 3-9% slower at two threads;
  // 1/6 sent its 14 x 14 pairs to the channel blocks below, 10-18% slower than bands there: MobileNetV2
  // 2-3% at two threads, in-process A/B on the Xeon). A smaller map (7 x 7) over several threads splits
  // better by channels (below); where the depthwise kernel
  // cannot take a block of channels, run the two convs one after the other (each threaded over pixels and
  // channels) through a scratch intermediate.
  const int64_t halo = std::max<int64_t>(0, (dw.kh - 1) * dw.dh + 1 - dw.sh);
  int64_t bands = 1;
  if (threads > 1 && n < threads) {
    bands = threads <= OH && (OH / threads) * dw.sh >= 3 * halo ? threads : 0;
#ifdef TESSERA_CONV_X86
    if (bands == 0 && expand && !stem && isa != ConvIsa::portable && dw3_rows_applies(dw) && !ep1.residual) {
      // Blocks of channels instead: the depthwise conv needs only its own channels of the intermediate,
      // so a task makes one block's intermediate for the whole image (in L2) and convolves it there.
      // MobileNetV2's 14 x 14 pairs at two threads: 10% faster than the two convs apart, 7 x 7: 3.5%.
      const int64_t nb = (E + kConvBlock - 1) / kConvBlock, K = C;
      // Block t's output rows [oy0, oy1) of image t / nb: the intermediate rows they read, then those rows
      // into out (row oy0, the block's first channel; rows ldo * OW floats apart, pixels ldo).
      auto block_rows = [&](int64_t t, int64_t oy0, int64_t oy1, bool more, float* out, int64_t ldo) {
        const int64_t img = t / nb, c0 = t % nb * kConvBlock, ce = std::min(kConvBlock, E - c0);
        const int64_t lo = std::clamp<int64_t>(oy0 * dw.sh - dw.pad_t, 0, H),
                      hi = std::clamp<int64_t>((oy1 - 1) * dw.sh - dw.pad_t + dw.kh, lo, H);
        thread_local AlignedScratch tl_block;
        float* mid = tl_block.get(size_t((hi - lo) * W * ce));
        Conv2dParams q = pw;
        q.n = 1, q.h = hi - lo, q.oc = ce;
        ConvEpilogue e1 = ep1;
        if (e1.bias) e1.bias += c0;
        const int64_t c1 = c0 + kConvBlock;  // the next block, when this thread runs it next
        const ConvNextWeights nw{w1 + c1 * K, std::min(kConvBlock, E - c1)};
        conv_dense(q, x + (img * H + lo) * W * C, w1 + c0 * K, e1, mid, nullptr, isa,
                   more && c1 < E ? &nw : nullptr);
        Dw3RowsArgs a{};
        a.x = mid, a.h = hi - lo, a.w = W, a.c = ce, a.wp = w2 + c0, a.ldy = ldo, a.ldw = E;
        a.sh = dw.sh, a.sw = dw.sw, a.pad_t = lo - (oy0 * dw.sh - dw.pad_t), a.pad_l = dw.pad_l;
        a.oy0 = 0, a.oy1 = oy1 - oy0, a.ow = OW;
        a.y = out;
        a.residual = ep2.residual ? ep2.residual + (img * OH + oy0) * OW * E + c0 : nullptr;  // ldo == E
        a.bias = ep2.bias ? ep2.bias + c0 : nullptr;
        a.act = ep2.act, a.clip_min = ep2.clip_min, a.clip_max = ep2.clip_max;
        a.k = dw.kh;
        (isa == ConvIsa::avx512f ? dw3_rows_avx512f : dw3_rows_avx2)(a);
      };
      // Blocks that do not go evenly round the threads (the last nb % threads) are split into a band of rows
      // per thread, each making its rows' intermediate (a row or two of halo twice): MobileNetV2's 576
      // channels are 9 blocks, and one thread ran 5 while the other waited after 4.
      const int64_t blocks = n * nb, split = threads > 1 && OH >= 2 * threads ? blocks % threads : 0;
      const int64_t whole = blocks - split;
      if (proj && !ep2.residual) {
        // With a projection: a fixed slice of the blocks per task (whole / threads consecutive blocks, then
        // its band of each split block), projected by the task into a partial output of its own (the
        // projection over the slice's channels, K rows of its weights); the partials are added in task
        // order once all are done, so the bits do not depend on which thread ran what. As a second pass
        // over the whole depthwise maps (split by pixels and panels), the projection read every pixel's
        // channels from both threads' blocks, and the maps' lines went between the cores every run. On the
        // Zen 4 VM, whose two vCPUs at times sit on cores that share no L3 (a 256 KiB hand-over between
        // them: 9.8 us against 3.8), MobileNetV2's 7 x 7 x 960 blocks at two threads 248 -> 162 us then
        // (-> 320: 310 -> 236) and 170 -> 150 us (231 -> 217) otherwise: the model 5% and 1% faster.
        const int64_t OCp = proj->oc, M = n * OH * OW;
        thread_local AlignedScratch tl_parts;
        float* const parts = tl_parts.get(size_t(threads * M * OCp));
        auto task = [&](int64_t tp) {
          float* const part = parts + tp * M * OCp;
          thread_local AlignedScratch tl_d;
          thread_local std::vector<uint8_t> tl_done;
          tl_done.assign(size_t(n), 0);  // images whose rows of `part` hold a sum
          const int64_t b0 = whole * tp / threads, b1 = whole * (tp + 1) / threads;
          // runs of the slice's blocks within one image: their depthwise rows side by side, then projected
          for (int64_t t = b0; t < b1;) {
            const int64_t img = t / nb, te = std::min(b1, (img + 1) * nb);
            const int64_t c0 = t % nb * kConvBlock, c1 = std::min(E, (te - 1) % nb * kConvBlock + kConvBlock);
            float* d = tl_d.get(size_t(OH * OW * (c1 - c0)));
            for (int64_t u = t; u < te; ++u)
              block_rows(u, 0, OH, u + 1 < te, d + (u % nb * kConvBlock - c0), c1 - c0);
            project_k_slice(d, c1 - c0, OH * OW, c0, c1 - c0, proj->w, E, OCp, part + img * OH * OW * OCp,
                            tl_done[size_t(img)] != 0, isa);
            tl_done[size_t(img)] = 1;
            t = te;
          }
          // this task's band of each split block
          const int64_t oy0 = OH * tp / threads, oy1 = OH * (tp + 1) / threads;
          for (int64_t blk = whole; blk < blocks && oy0 < oy1; ++blk) {
            const int64_t img = blk / nb, c0 = blk % nb * kConvBlock, ce = std::min(kConvBlock, E - c0);
            float* const rows = part + img * OH * OW * OCp;
            if (!tl_done[size_t(img)]) {
              std::memset(rows, 0, size_t(OH * OW * OCp) * sizeof(float));
              tl_done[size_t(img)] = 1;
            }
            float* d = tl_d.get(size_t((oy1 - oy0) * OW * ce));
            block_rows(blk, oy0, oy1, false, d, ce);
            project_k_slice(d, ce, (oy1 - oy0) * OW, c0, ce, proj->w, E, OCp, rows + oy0 * OW * OCp, true,
                            isa);
          }
          for (int64_t img = 0; img < n; ++img)  // images this task had no blocks of add nothing
            if (!tl_done[size_t(img)])
              std::memset(part + img * OH * OW * OCp, 0, size_t(OH * OW * OCp) * sizeof(float));
        };
        pool->run(threads, task);
        // y = the partials in task order + bias + residual, then the activation
        const ConvEpilogue& e3 = proj->ep;
        const int64_t total = M * OCp;  // (threads >= 2 on this path)
        binary_f32(BinaryOp::add, parts, Bcast::full, parts + total, Bcast::full, y, 1, total, nullptr);
        for (int64_t tp = 2; tp < threads; ++tp)
          binary_f32(BinaryOp::add, y, Bcast::full, parts + tp * total, Bcast::full, y, 1, total, nullptr);
        if (e3.bias) binary_f32(BinaryOp::add, y, Bcast::full, e3.bias, Bcast::row, y, M, OCp, nullptr);
        if (e3.residual)
          binary_f32(BinaryOp::add, y, Bcast::full, e3.residual, Bcast::full, y, 1, total, nullptr);
        gemm_apply_activation(e3.act, e3.clip_min, e3.clip_max, y, total, nullptr);
        return;
      }
      float* const ydw = depthwise_maps();
      auto to_maps = [&](int64_t t, int64_t oy0) {
        return ydw + (t / nb * OH + oy0) * OW * E + t % nb * kConvBlock;
      };
      // Runs of blocks per thread (run_tasks), so that each block's conv prefetches the weights of the block
      // its thread runs next (they stream from memory, as the whole conv's would): MobileNetV2 0.6% faster
      // at two threads (in-process A/B on the Xeon).
      run_tasks(pool, whole + split * threads, double(n * H * W) * double(C * E), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          if (t < whole) {
            block_rows(t, 0, OH, t + 1 < e && t + 1 < whole, to_maps(t, 0), E);
          } else {
            const int64_t part = (t - whole) % threads, blk = whole + (t - whole) / threads;
            const int64_t oy0 = OH * part / threads;
            block_rows(blk, oy0, OH * (part + 1) / threads, false, to_maps(blk, oy0), E);
          }
        }
      });
      if (proj) project(ydw, 0, 0, n * OH, pool);
      return;
    }
#endif
    if (bands == 0) {
      thread_local AlignedScratch tl_mid;
      const float* mid = x;
      if (expand) {
        float* m = tl_mid.get(size_t(n * H * row));
        if (stem)
          conv2d_nchw_in_f32(pw, x, w1, ep1, m, pool, isa);
        else
          conv_dense(pw, x, w1, ep1, m, pool, isa);
        mid = m;
      }
      float* const ydw = depthwise_maps();
      conv_depthwise(dw, mid, w2, ep2, ydw, pool, isa);
      if (proj) project(ydw, 0, 0, n * OH, pool);
      return;
    }
  }
  const int64_t per_band = (OH + bands - 1) / bands;
  auto task = [&](int64_t t) {
    const int64_t img = t / bands, oy_a = (t % bands) * per_band, oy_b = std::min(OH, oy_a + per_band);
    if (oy_a >= oy_b) return;
    thread_local AlignedScratch tl_band, tl_dout;
    const int64_t ring_rows = (std::min(OH, step) - 1) * dw.sh + (dw.kh - 1) * dw.dh + 1;
    float* buf = expand ? tl_band.get(size_t(ring_rows * row)) : nullptr;
    float* dout = proj ? tl_dout.get(size_t(std::min(OH, step) * OW * E)) : nullptr;
    const float* ximg = x + img * H * W * C;
    // The intermediate rows stay where they were made, row iy at buf + (iy % ring_rows) * row, when the
    // depthwise kernel reads rows through a ring (dw3); else rows [lo, hi) are at buf, the ones the next
    // step reads again moved to its front (MobileNetV2: 0.7% of a run in that memmove).
    bool ring = false;
#ifdef TESSERA_CONV_X86
    ring = expand && isa != ConvIsa::portable && dw3_rows_applies(dw);
#endif
    int64_t lo = 0, hi = 0;  // intermediate rows [lo, hi) are in buf
    for (int64_t oy0 = oy_a; oy0 < oy_b; oy0 += step) {
      const int64_t oy1 = std::min(oy_b, oy0 + step), nlo = first_row(oy0), nhi = end_row(oy1);
      const float* src = ximg + nlo * W * C;  // the depthwise conv's input rows [nlo, nhi)
      if (expand) {
        int64_t have = nlo;  // rows [nlo, have) already in buf
        if (hi > nlo && nlo >= lo) {
          if (!ring) std::memmove(buf, buf + (nlo - lo) * row, size_t((hi - nlo) * row) * sizeof(float));
          have = hi;
        }
        if (!ring) {
          if (nhi > have) produce(img, have, nhi, buf + (have - nlo) * row);
        } else {
          while (have < nhi) {  // up to the ring's end, then from its start
            const int64_t at = have % ring_rows, end = std::min(nhi, have + ring_rows - at);
            produce(img, have, end, buf + at * row);
            have = end;
          }
        }
        lo = nlo, hi = nhi;
        src = buf;
      }
      Conv2dParams q = dw;
      q.n = 1, q.h = nhi - nlo;
      q.pad_t = nlo - (oy0 * dw.sh - dw.pad_t);
      q.pad_b = std::max<int64_t>(0, (oy1 - oy0 - 1) * dw.sh + (dw.kh - 1) * dw.dh + 1 - q.h - q.pad_t);
      float* const yd = proj ? dout : y + (img * OH + oy0) * OW * E;
      ConvEpilogue e2 = ep2;  // (a residual is shaped as the depthwise output: this step's rows)
      if (e2.residual) e2.residual += (img * OH + oy0) * OW * E;
      if (ring) {
#ifdef TESSERA_CONV_X86
        Dw3RowsArgs a{};
        a.x = buf, a.h = q.h, a.w = W, a.c = E, a.wp = w2;
        a.sh = dw.sh, a.sw = dw.sw, a.pad_t = q.pad_t, a.pad_l = dw.pad_l;
        a.oy0 = 0, a.oy1 = oy1 - oy0, a.ow = OW, a.y = yd;
        a.residual = e2.residual, a.bias = e2.bias;
        a.act = e2.act, a.clip_min = e2.clip_min, a.clip_max = e2.clip_max;
        a.ring = ring_rows, a.ring_first = nlo % ring_rows;
        a.k = dw.kh;
        (isa == ConvIsa::avx512f ? dw3_rows_avx512f : dw3_rows_avx2)(a);
#endif
      } else {
        conv_depthwise(q, src, w2, e2, yd, nullptr, isa);
      }
      if (proj) project(dout, img, oy0, oy1, nullptr);
    }
  };
  if (pool && n * bands > 1)
    pool->run(n * bands, task);
  else
    for (int64_t t = 0; t < n * bands; ++t) task(t);
}

namespace {

// The portable max_pool_taps: a NaN in x is taken, and a NaN in y is never replaced.
void max_pool_taps_portable(const float* const* taps, int64_t ntaps, int64_t c, float* y) {
  for (int64_t ch = 0; ch < c; ++ch) y[ch] = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < ntaps; ++i) {
    const float* xp = taps[i];
    for (int64_t ch = 0; ch < c; ++ch) y[ch] = (xp[ch] > y[ch] || xp[ch] != xp[ch]) ? xp[ch] : y[ch];
  }
}

void avg_pool_taps_portable(const float* const* taps, int64_t ntaps, int64_t c, float scale, float* y) {
  for (int64_t ch = 0; ch < c; ++ch) y[ch] = 0.0f;
  for (int64_t i = 0; i < ntaps; ++i)
    for (int64_t ch = 0; ch < c; ++ch) y[ch] += taps[i][ch];
  for (int64_t ch = 0; ch < c; ++ch) y[ch] *= scale;
}

using AvgTapsFn = void (*)(const float* const*, int64_t, int64_t, float, float*);
AvgTapsFn avg_taps_for(ConvIsa isa) {
#ifdef TESSERA_CONV_X86
  if (isa == ConvIsa::avx512f) return avg_pool_taps_avx512f;
  if (isa == ConvIsa::avx2) return avg_pool_taps_avx2;
#endif
  (void)isa;
  return avg_pool_taps_portable;
}

}  // namespace

void global_avg_pool_nhwc_f32(const float* x, int64_t n, int64_t hw, int64_t c, float* y, ThreadPool* pool) {
  // Each pixel a tap of the average pool's kernel: channels in blocks of up to four vectors summed in
  // registers over the pixels in order (the same sums as the scalar loop it replaced, bit for bit, which kept
  // 256 sums in memory). Zen 5 (/tmp/w/gap.cpp, in cache, medians of 31), one / two threads: 14 x 14 x 320
  // 3.5-3.8 -> 2.5-2.7 / 2.4-2.6 -> 1.7-1.8 us, 7 x 7 x 784 2.4 -> 1.4 / 2.9 -> 1.7, 112 x 112 x 32 28-30 ->
  // 22 / 23-24 -> 9.2, 56 x 56 x 64 12 -> 8.1 / 9.3 -> 4.4, 56 x 56 x 24 5.9 -> 5.0 / 24.6 -> 3.0.
  const AvgTapsFn avg_taps = avg_taps_for(conv_isa());
  // pixels [i0, i1) of image img, channels [c0, c1): their sums times scale into out[0, c1 - c0)
  auto sum_pixels = [&](int64_t img, int64_t i0, int64_t i1, int64_t c0, int64_t c1, float scale,
                        float* out) {
    thread_local std::vector<const float*> taps;
    taps.resize(size_t(i1 - i0));
    for (int64_t i = i0; i < i1; ++i) taps[size_t(i - i0)] = x + (img * hw + i) * c + c0;
    avg_taps(taps.data(), i1 - i0, c1 - c0, scale, out);
  };
  auto channels = [&](int64_t img, int64_t c0, int64_t c1) {
    sum_pixels(img, 0, hw, c0, c1, 1.0f / float(hw), y + img * c + c0);
  };
  // Over several threads: one contiguous range of channels per thread, in order — as the conv before it
  // (panel-major tasks, each thread's first claim a contiguous run) left its output, so that each thread
  // mostly reads what its own core wrote. MobileNetV2's 7 x 7 x 1280 at two threads ran inline on the
  // caller, half of it from the other core: 17 us against 6 at one thread.
  const int64_t threads = pool ? pool->num_threads() : 1;
  const int64_t parts = std::min<int64_t>(threads, c / 64);
  if (threads > 1 && parts <= 1 && n == 1 && hw >= 64 * threads && hw * c >= (1 << 14)) {
    // Few channels over a large map (EfficientNet's squeeze-and-excitation pools, 112 x 112 x 32): a band of
    // pixels per thread, as the convs before such maps split their rows, into partial sums added in thread
    // order (one thread summed all of it: 112 x 112 x 32 took as long at two threads as at one).
    const int64_t nb = threads;
    thread_local AlignedScratch tl_part;
    float* part = tl_part.get(size_t(nb * c));
    pool->run(nb, [&](int64_t t) {
      const int64_t i0 = hw * t / nb, i1 = hw * (t + 1) / nb;
      sum_pixels(0, i0, i1, 0, c, 1.0f, part + t * c);
    });
    const float inv = 1.0f / float(hw);
    for (int64_t ch = 0; ch < c; ++ch) {
      float sum = 0.0f;
      for (int64_t t = 0; t < nb; ++t) sum += part[t * c + ch];
      y[ch] = sum * inv;
    }
    return;
  }
  if (parts <= 1 || n * hw * c < (1 << 14)) {
    for (int64_t img = 0; img < n; ++img) channels(img, 0, c);
    return;
  }
  pool->run(parts, [&](int64_t p) {
    const int64_t c0 = c * p / parts / 16 * 16, c1 = p + 1 == parts ? c : c * (p + 1) / parts / 16 * 16;
    for (int64_t img = 0; img < n; ++img) channels(img, c0, c1);
  });
}

void pool2d_nhwc_f32(const PoolParams& pp, const float* x, float* y, ThreadPool* pool, ConvIsa isa) {
  if (!conv_isa_available(isa)) isa = ConvIsa::portable;
  const Conv2dParams& p = pp.g;
  const int64_t oh = pp.oh, ow = pp.ow, C = p.c;
  void (*max_taps)(const float* const*, int64_t, int64_t, float*) = max_pool_taps_portable;
  void (*avg_taps)(const float* const*, int64_t, int64_t, float, float*) = avg_pool_taps_portable;
#ifdef TESSERA_CONV_X86
  if (isa == ConvIsa::avx512f)
    max_taps = max_pool_taps_avx512f, avg_taps = avg_pool_taps_avx512f;
  else if (isa == ConvIsa::avx2)
    max_taps = max_pool_taps_avx2, avg_taps = avg_pool_taps_avx2;
#endif
  run_tasks(pool, p.n * oh, double(p.n * oh * ow) * double(C * p.kh * p.kw), [&](int64_t b, int64_t e) {
    thread_local std::vector<const float*> taps;
    taps.resize(size_t(p.kh * p.kw));
    for (int64_t t = b; t < e; ++t) {
      const int64_t img = t / oh, oy = t % oh;
      const float* xi = x + img * p.h * p.w * C;
      for (int64_t ox = 0; ox < ow; ++ox) {
        float* yo = y + (t * ow + ox) * C;
        int64_t n = 0;  // the window's taps inside the image (padding is skipped, not -inf or 0)
        for (int64_t r = 0; r < p.kh; ++r) {
          const int64_t iy = oy * p.sh - p.pad_t + r * p.dh;
          if (iy < 0 || iy >= p.h) continue;
          for (int64_t s = 0; s < p.kw; ++s) {
            const int64_t ix = ox * p.sw - p.pad_l + s * p.dw;
            if (ix >= 0 && ix < p.w) taps[size_t(n++)] = xi + (iy * p.w + ix) * C;
          }
        }
        if (pp.is_max) {
          max_taps(taps.data(), n, C, yo);
        } else {
          // count_include_pad divides by the whole window (ceil_mode 0: every position is in the padded
          // input); else by the taps inside (none: 0 / 0, NaN, as the reference)
          const int64_t div = pp.count_include_pad ? p.kh * p.kw : n;
          avg_taps(taps.data(), n, C, div ? 1.0f / float(div) : std::numeric_limits<float>::quiet_NaN(), yo);
        }
      }
    }
  });
}

}  // namespace tessera::kernels::x86
