// f32 2-D convolution and pooling in NHWC (channels innermost), for conv regions
// the layout_nhwc pass converts (the graph stays NCHW at its borders).
//
// Dense convolution (group 1) is an implicit GEMM: M = output pixels, N = output
// channels, K = kh*kw*C. Weights are packed once (at session creation) into
// panels of up to conv_panel() output channels; a micro-kernel keeps an MR-pixel x
// (16*NV)-channel tile in registers and reads each input pixel's C channels
// straight from the NHWC tensor through a small table of row pointers (a row
// that falls in the padding points at a zero row), so nothing is im2col'ed.
//
// Packed weights (P = conv_panel()): panel j holds output channels [Pj, Pj + pw_j) with
// pw_j = min(P, round_up(OC - Pj, 16)); it is K x pw_j row-major, row
// k = (r*kw + s)*C + ci; columns at or past OC are zero. Panels follow each other.
//
// Depthwise (group == C == OC): weights packed as [kh*kw][C]; vectorized over channels.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/x86/conv2d.h"

namespace tessera::kernels::x86 {

enum class ConvIsa : uint8_t { portable, avx2, avx512f };
// The best ISA this CPU has (honours TESSERA_ISA).
ConvIsa conv_isa();
bool conv_isa_available(ConvIsa isa);

// Packed panel width: 64 output channels where the best ISA is AVX-512 (one 6 x 64 zmm tile reads a
// panel row), else 16 (AVX2's 6 x 16 tile reads its weights contiguously: strips of a 64-wide panel
// streamed from memory 12% slower on Zen 3). The convolution drivers hand out blocks of kConvBlock
// output channels (one panel, or four) either way.
int64_t conv_panel();
constexpr int64_t kConvBlock = 64;
int64_t conv_nhwc_panel_width(int64_t oc, int64_t panel);
size_t conv_nhwc_packed_floats(int64_t oc, int64_t k);
// w: [oc, c, kh, kw] (ONNX, group 1) -> out (conv_nhwc_packed_floats(oc, c*kh*kw) floats).
void conv_nhwc_pack_weights(const float* w, int64_t oc, int64_t c, int64_t kh, int64_t kw, float* out);
// Weight of output channel o at row k of a packing (reference kernels).
float conv_nhwc_packed_at(const float* packed, int64_t oc, int64_t k, int64_t o, int64_t row);
// w: [c, 1, kh, kw] -> out [kh*kw][c].
void dw_nhwc_pack_weights(const float* w, int64_t c, int64_t kh, int64_t kw, float* out);

// x [n, h, w, c], y [n, oh, ow, oc], residual like y. p.groups must be 1 (dense, wp packed as above),
// depthwise (wp packed by dw_nhwc_pack_weights) or grouped as conv_grouped_applies takes (wp packed by
// grouped_nhwc_pack_weights).
void conv2d_nhwc_f32(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep, float* y,
                     ThreadPool* pool, ConvIsa isa);
inline void conv2d_nhwc_f32(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep,
                            float* y, ThreadPool* pool) {
  conv2d_nhwc_f32(p, x, wp, ep, y, pool, conv_isa());
}

// The projection a pointwise -> depthwise pair may end with (an inverted-residual block's third conv): a
// 1x1 conv of the depthwise output (E -> oc channels), w packed as a dense 1x1 conv's (above), its epilogue's
// residual (if any) shaped as the final output and not aliasing the pair's input x.
struct ConvProjection {
  const float* w = nullptr;
  int64_t oc = 0;
  ConvEpilogue ep;
};

// A pointwise conv (pw: 1x1, stride 1, no padding, group 1; w1 packed as above, ep1 without a
// residual) feeding a depthwise conv (dw: its geometry over pw's output, c = oc = groups = pw.oc; w2
// packed by dw_nhwc_pack_weights; ep2 without a residual): y = dw(pw(x)), or proj(dw(pw(x))) with a
// projection. The intermediates exist only a band of rows at a time, in cache (an inverted-residual
// block's expansion, depthwise and projection convs). Without w1 (pw.c = pw.oc), y = proj(dw(x)): a
// depthwise-separable conv (MobileNetV1, an inverted-residual block without expansion). pw may instead be
// a stem conv over an NCHW x (conv_nchw_in_applies; its output is the depthwise conv's input, dw.h =
// pw.oh()): an image model's first conv and the depthwise conv after it, whose large map then stays in cache
// too.
void conv2d_pw_dw_nhwc_f32(const Conv2dParams& pw, const float* x, const float* w1, const ConvEpilogue& ep1,
                           const Conv2dParams& dw, const float* w2, const ConvEpilogue& ep2, float* y,
                           ThreadPool* pool, ConvIsa isa, const ConvProjection* proj = nullptr);
inline void conv2d_pw_dw_nhwc_f32(const Conv2dParams& pw, const float* x, const float* w1,
                                  const ConvEpilogue& ep1, const Conv2dParams& dw, const float* w2,
                                  const ConvEpilogue& ep2, float* y, ThreadPool* pool,
                                  const ConvProjection* proj = nullptr) {
  conv2d_pw_dw_nhwc_f32(pw, x, w1, ep1, dw, w2, ep2, y, pool, conv_isa(), proj);
}

// Winograd F(m x m, 3x3), m = 2 or 4, for 3x3 convs of stride 1 (any padding; a dilation runs as its
// phases' undilated convs over strided sub-grids):
// (m+2)^2 GEMMs of [tiles x C] x [C x OC] replace the 9*C-deep one (2.25x / 4x fewer multiplies).
// Weights U = G g G^T (computed in double) are packed like a dense packing with K = (m+2)^2 * C
// (row xi*C + ci). Grouped convs too (RegNet's and ResNeXt's 16-channel groups): each group's
// [tiles x cg] x [cg x og] GEMMs (cg = C / groups, og = OC / groups; wino_applies says which), U packed
// as [groups][(m+2)^2][cg][og] (ISA-independent: the kernel reads 16-column strips of a group's rows).
bool wino_applies(const Conv2dParams& p);
// The Winograd tile m (4 or 2) a conv that wino_applies to runs best with over `images` output maps of
// oh x ow (0 where unknown: counted as enough tiles), or 0 where the direct kernel is faster.
int wino_tile_for(const Conv2dParams& p, int64_t images, int64_t oh, int64_t ow);
size_t wino_packed_floats(int64_t oc, int64_t cg, int m, int64_t groups = 1);
// w: [oc, cg, 3, 3] (ONNX)
void wino_pack_weights(const float* w, int64_t oc, int64_t cg, int m, float* out, int64_t groups = 1);
// The 3x3 weight (o, ci, r, s) a packing holds (ci within o's group), recovered as g = L U L^T (L G = I).
float wino_weight_at(const float* packed, int64_t oc, int64_t cg, int m, int64_t o, int64_t ci, int64_t r,
                     int64_t s, int64_t groups = 1);
void conv2d_wino_nhwc_f32(const Conv2dParams& p, int m, const float* x, const float* up,
                          const ConvEpilogue& ep, float* y, ThreadPool* pool, ConvIsa isa);
inline void conv2d_wino_nhwc_f32(const Conv2dParams& p, int m, const float* x, const float* up,
                                 const ConvEpilogue& ep, float* y, ThreadPool* pool) {
  conv2d_wino_nhwc_f32(p, m, x, up, ep, y, pool, conv_isa());
}

// A dense conv of few input channels (an image model's stem: three colour planes) read in NCHW, written
// in NHWC, weights packed as for conv2d_nhwc_f32: the input needs no NHWC copy. Output pixels lie along
// the vector lanes, so each tap (ci, r, s) is one contiguous load from a row of the input plane, split by
// a horizontal stride of 2 into its even and odd columns once per row; a 16-pixel x 16-channel tile is
// transposed in registers as it is stored. No residual. Applies on AVX-512 only (the caller falls back
// to a Transpose and conv2d_nhwc_f32 elsewhere).
bool conv_nchw_in_applies(const Conv2dParams& p, ConvIsa isa);
void conv2d_nchw_in_f32(const Conv2dParams& p, const float* x, const float* wp, const ConvEpilogue& ep,
                        float* y, ThreadPool* pool, ConvIsa isa);

// Max / average pooling over NHWC. Pool geometry in Conv2dParams terms (oc = c,
// kh/kw the window; oh/ow may be given explicitly for ceil_mode).
struct PoolParams {
  Conv2dParams g;
  int64_t oh = 0, ow = 0;
  bool is_max = true;
  bool count_include_pad = false;
};
void pool2d_nhwc_f32(const PoolParams& p, const float* x, float* y, ThreadPool* pool, ConvIsa isa);
inline void pool2d_nhwc_f32(const PoolParams& p, const float* x, float* y, ThreadPool* pool) {
  pool2d_nhwc_f32(p, x, y, pool, conv_isa());
}

// MaxPool over NHWC u8 / s8 (an int8 region's: layout_nhwc), the padding ignored (pool_nhwc_8bit.cpp).
void maxpool2d_nhwc_8bit(const PoolParams& p, const void* x, bool is_signed, void* y, ThreadPool* pool);

// y[b][c] = mean over the h*w pixels of x[b][.][c] (x NHWC, y [n, c]).
void global_avg_pool_nhwc_f32(const float* x, int64_t n, int64_t hw, int64_t c, float* y, ThreadPool* pool);

// ---- micro-kernel interface (the ISA files) ----
struct ConvTileEpilogue {
  const float* bias;      // offset to the tile's first channel, or nullptr
  const float* residual;  // offset to the tile, rows of ldr, or nullptr
  int64_t ldr;
  Activation act;
  float clip_min, clip_max;
};
// A micro-kernel's first step: request the tile's output rows (read back on later K blocks, else written)
// and its residual rows into L1, so that the epilogue does not stall on L3 or memory for them. Short-K
// pointwise convs need it most: their K loop is about as long as that trip (ResNet-50's 56x56 64->256
// with its residual, output and residual streamed from memory: 1.35x; without a residual 1.2x).
template <int MR>
inline void prefetch_tile_rows(const float* y, int64_t ldy, int64_t mr, int64_t nr,
                               const ConvTileEpilogue* ep) {
  const float* res = ep ? ep->residual : nullptr;
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= mr) break;
    for (int64_t j = 0; j < nr; j += 16) {  // every 64-byte line the row's nr floats touch
      _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + j), _MM_HINT_T0);
      if (res) _mm_prefetch(reinterpret_cast<const char*>(res + i * ep->ldr + j), _MM_HINT_T0);
    }
    _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + nr - 1), _MM_HINT_T0);
    if (res) _mm_prefetch(reinterpret_cast<const char*>(res + i * ep->ldr + nr - 1), _MM_HINT_T0);
  }
}

// Weights a tile prefetches into L2 while it computes (a streamed conv's next K block, conv_dense): from p,
// step bytes per K step (one input channel of one tap), as many lines a step as that spans, at most the
// panel's vectors; nothing where p is null. Paced over the K loop, the prefetches overlap the FMAs; issued
// in bursts before each tile, they stalled its loads (ResNet-50 7x7 convs at 83 GFLOP/s).
struct ConvPrefetch {
  const char* p = nullptr;
  int64_t step = 0;
};
// Lines prefetch_step<NV> issues per K step.
template <int NV>
int64_t prefetch_lines(const ConvPrefetch& pf) {
  return pf.p ? std::min<int64_t>((pf.step + 63) / 64, NV) : 0;
}
template <int NV>
[[gnu::always_inline]] inline void prefetch_step(const char*& p, int64_t step) {
  if (!p) return;
  const int64_t lines = prefetch_lines<NV>({p, step});
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
    if (j < lines) _mm_prefetch(p + 64 * j, _MM_HINT_T1);
  p += step;
}

// rows: [ntaps][MR] pointers, each to kc channels of one input pixel; w: (ntaps*kc) rows of ldw
// floats; computes y[i][j] (+)= sum over taps/channels for i < mr, j < nr (nr <= the kernel width),
// applying ep on the last K block (ep != nullptr), and prefetches pf's stream along its K loop.
using ConvUkr = void (*)(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw,
                         float* y, int64_t ldy, int64_t mr, int64_t nr, bool accumulate,
                         const ConvTileEpilogue* ep, ConvPrefetch pf);
// Whole tiles in one call, one K block (no accumulation): ntiles tiles of mr consecutive output pixels
// over npanels consecutive full panels nr wide (panel j's weights at w + j * wstep), y rows of ldy, ep
// applied. Tile t's inputs: its row table at rows + t * ntaps * mr (as ConvUkr's, ld = mr), or, with rows
// null (pointwise, ntaps 1), pixel i's kc channels at x + (t * mr + i) * ldx. Short-K convs (MobileNet's
// 16- to 32-deep expansions, a stem's 27) spent as long per tile on the call, the driver's row table and
// the kernel's set-up as in the K loop. pf's stream is prefetched along the K loops, one step per K step,
// continuing from tile to tile.
using ConvTiles = void (*)(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles,
                           int64_t ntaps, int64_t kc, const float* w, int64_t wstep, int64_t npanels,
                           float* y, int64_t ldy, const ConvTileEpilogue& ep, ConvPrefetch pf);
struct ConvUkrInfo {
  ConvUkr fn;
  int64_t mr, nr;
  const ConvUkr* rem = nullptr;  // rem[m], 0 < m < mr: a kernel for exactly m rows (row table stride mr)
  // The kernels also take nr > this nr over consecutive panels exactly nr wide when the K block is the whole
  // K: the next panel's weights start ldw * ntaps * kc floats after this one's (one call per tile row).
  bool panels = false;
  ConvTiles tiles = nullptr;  // where the ISA has one
  int64_t tiles_ldw = 0;      // the panel width `tiles` reads its weights at; 0: nr (24 columns: 32)
  ConvUkr for_rows(int64_t m) const { return rem && m < mr ? rem[m] : fn; }
  // A span of `width` columns from a panel `ldw` wide goes to `tiles` (whole tiles, all of K in one block)
  bool tiles_take(int64_t width, int64_t ldw) const {
    return tiles && width % nr == 0 && ldw == (tiles_ldw ? tiles_ldw : nr);
  }
};
// For AVX-512: one kernel per width of the panel's columns (16, 24, 32, 48, 64); AVX2: 8 wide for at most
// 8 columns, else 16 wide (the driver walks wider blocks in strips of the kernel's width);
// portable: 16 wide.
ConvUkrInfo conv_ukr_avx512f(int64_t width);
ConvUkrInfo conv_ukr_avx2(int64_t width);

// Depthwise rows: y[ox][c] for ox < cnt of one output row: channels vectorized.
struct DwRowArgs {
  const float* x;  // image base [h][w][c]
  int64_t h, w, c;
  const float* wp;                       // [taps][c]
  int64_t kh, kw, sw, dh, dw, iy0, ix0;  // iy0 = oy*sh - pad_t, ix0 = -pad_l
  int64_t ox0, cnt;                      // output columns
  float* y;                              // output row at ox0 (stride c)
  const float* residual;                 // like y, or nullptr
  const float* bias;
  Activation act;
  float clip_min, clip_max;
};
void dw_row_avx512f(const DwRowArgs& a);
// Max pooling of one output pixel: y[ch] = max over its ntaps input pixels (pool_impl.h).
void max_pool_taps_avx512f(const float* const* taps, int64_t ntaps, int64_t c, float* y);
void max_pool_taps_avx2(const float* const* taps, int64_t ntaps, int64_t c, float* y);
// Average pooling of one output pixel: y[ch] = scale * the sum over its ntaps input pixels.
void avg_pool_taps_avx512f(const float* const* taps, int64_t ntaps, int64_t c, float scale, float* y);
void avg_pool_taps_avx2(const float* const* taps, int64_t ntaps, int64_t c, float scale, float* y);

// Grouped convs (groups > 1, not depthwise) in NHWC, grouped_impl.h: output channels in blocks of 16, the
// weights of block b, tap t, input slot j at wp[((b * taps + t) * cpg_in + j) * 16 + o] = w[16 b + o][j][t]
// (0 past OC). conv_grouped_applies: C / groups = OC / groups in {2, 4, 8} (a block reads its own 16 input
// channels, permuted per slot), or OC / groups a multiple of 16 (a block within one group, its inputs
// broadcast).
bool conv_grouped_applies(const Conv2dParams& p);
size_t grouped_nhwc_packed_floats(const Conv2dParams& p);
void grouped_nhwc_pack_weights(const float* w, const Conv2dParams& p,
                               float* out);  // w [oc][c/groups][kh][kw]
float grouped_nhwc_packed_at(const float* wp, const Conv2dParams& p, int64_t o, int64_t ci, int64_t tap);

// Software prefetch spread over a row's tiles: `per_tile` cache lines from `next` each call, until `end`.
// A grouped block reads one or two lines of each input pixel (its group's channels), every block a
// different line, a pattern the hardware prefetchers miss; the conv prefetches the next row's new input
// rows while it computes this one.
struct LinePrefetch {
  const char* next = nullptr;
  const char* end = nullptr;
  int64_t per_tile = 0;
  char* wnext = nullptr;  // lines the next band writes, prefetched for writing, as many a tile
  char* wend = nullptr;
  void step() {
    for (int64_t i = 0; i < per_tile && next < end; ++i, next += 64) __builtin_prefetch(next, 0, 1);
    for (int64_t i = 0; i < per_tile && wnext < wend; ++i, wnext += 64) __builtin_prefetch(wnext, 1, 1);
  }
};

struct GroupedRowArgs {
  const float* x;  // image base [h][w][c]
  int64_t h, w, c;
  const float* wp;                       // packed weights, all blocks
  int64_t oc, cpg_in, cpg_out;           // cpg_in: also the weight slots a block has per tap
  bool permute;                          // C / groups = OC / groups < 16, else a block lies in one group
  int64_t kh, kw, sw, dh, dw, iy0, ix0;  // iy0 = oy*sh - pad_t, ix0 = -pad_l
  int64_t ow;                            // output columns
  int64_t rows = 1, sh = 1;  // output rows from iy0's (the broadcast kind; rows sh input rows apart)
  float* y;                  // output row (stride oc), `rows` rows one after another
  const float* residual;     // like y, or nullptr
  const float* bias;
  Activation act;
  float clip_min, clip_max;
  LinePrefetch* prefetch = nullptr;  // stepped once a tile (vector ISAs), or nullptr
  int64_t blk0 = 0, blk1 = -1;  // the blocks of 16 output channels computed: [blk0, blk1), -1: to the last
};
// zeros: max(16, cpg_in) zeros, read for taps outside the image
void grouped_row_avx512f(const GroupedRowArgs& a, const float* zeros);

// One group of a grouped 3x3 conv (16 input and 16 output channels, stride and dilation 1, padding up to 1)
// over a whole small map (grouped_map_applies), AVX-512: the group's input lines are first copied into
// `map`, a zero-bordered grid kGroupMapCols pixels wide, so every tap of every pixel of a tile is a constant
// offset from one pointer and the tile holds 14 sums (two rows of 7 pixels, or one of 14).
struct GroupMapArgs {
  const float* x;         // image base [h][w][c]
  int64_t h, w, c, in0;   // in0: the group's first input channel
  const float* wp;        // the group's packed weights (9 taps x 16 slots x 16)
  const float* bias;      // the group's 16, or nullptr
  float* y;               // output image base [oh][ow][oc], at the group's first output channel
  const float* residual;  // like y, or nullptr
  int64_t oh, ow, oc, pad_t, pad_l;
  Activation act;
  float clip_min, clip_max;
  float* map;            // grouped_map_floats, its border zero (the interior is the group's)
  const float* next_wp;  // the next group's weights, prefetched into L2 over the tiles, or nullptr
};
inline constexpr int64_t kGroupMapCols = 16, kGroupMapWeights = 9 * 16 * 16;  // a group's packed floats
bool grouped_map_applies(const Conv2dParams& p);
size_t grouped_map_floats(const Conv2dParams& p);
void grouped_map_avx512f(const GroupMapArgs& a);
void grouped_row_avx2(const GroupedRowArgs& a, const float* zeros);

// Calls f(x_off, w_off) for each tap of output column ixb's window (ixb = ox * sw + ix0) that falls inside
// the image: channel 0 of its input pixel at a.x + x_off, of its weights at a.wp + w_off.
template <typename F>
inline void for_each_dw_tap(const DwRowArgs& a, int64_t ixb, F&& f) {
  for (int64_t r = 0; r < a.kh; ++r) {
    const int64_t iy = a.iy0 + r * a.dh;
    if (iy < 0 || iy >= a.h) continue;
    for (int64_t q = 0; q < a.kw; ++q) {
      const int64_t ix = ixb + q * a.dw;
      if (ix >= 0 && ix < a.w) f((iy * a.w + ix) * a.c, (r * a.kw + q) * a.c);
    }
  }
}

// Depthwise 3x3, dilation 1, horizontal stride 1 or 2 (MobileNet's and EfficientNet's): output rows
// [oy0, oy1) of one image, all columns, 16-channel blocks outermost so that a block's input rows stay in
// L1 from one output row to the next. A block's 9 weight vectors live in registers and each input vector
// loaded feeds every output of the 8-pixel tile that uses it (3 FMAs at stride 1): 0.42 loads per FMA
// instead of the 1.25 of dw_row.
struct Dw3RowsArgs {
  const float* x;  // image [h][w][c]
  int64_t h, w, c;
  const float* wp;  // [k * k][c]
  int64_t sh, sw, pad_t, pad_l;
  int64_t oy0, oy1, ow;
  float* y;               // image output [oh][ow][c]
  const float* residual;  // like y, or nullptr
  const float* bias;
  Activation act;
  float clip_min, clip_max;
  // pixel strides (floats) of x, of y and residual, and between the weights' taps; 0: c. A block of
  // channels of wider tensors is c channels at offsets into them.
  int64_t ldx = 0, ldy = 0, ldw = 0;
  // x's rows kept in a ring of `ring` rows (0: none): row iy at x + ((ring_first + iy) % ring) * w * ldx.
  int64_t ring = 0, ring_first = 0;
  // The loop order (dw3_rows_impl.h, dw3::run): tuned picks the measured best for the CPU; tests run each.
  enum class Order : uint8_t { tuned, by_block, by_tile } order = Order::tuned;
  int64_t k = 3;  // the kernel's side: 3, 5 or 7
};
// Depthwise k x k (k = 3, 5, 7), dilation 1, stride 1 or 2 (the name from when it took 3 x 3 alone).
bool dw3_rows_applies(const Conv2dParams& p);
void dw3_rows_avx512f(const Dw3RowsArgs& a);
void dw3_rows_avx2(const Dw3RowsArgs& a);

// Winograd transforms, c channels each: src = the (m+2)^2 input pixels of a tile (row-major;
// a zero row where outside the image) -> v[xi * stride + ci]; m[xi * mstride + j] -> the
// m x m outputs y[k] (nullptr: outside the output), + bias, + res[k], activation.
struct WinoOut {
  const float* bias;
  const float* res[16];
  float* y[16];
  Activation act;
  float clip_min, clip_max;
};
// The GEMMs of one Winograd point over ng conv groups: m[r][g * og + j] = sum over k < cg of
// v[r][g * cg + k] * (w + g * wstep)[k * ldw + j], for r < rows and j < og (a multiple of 16). The rows
// (tiles) in strips of 12 (AVX-512) or 6 (AVX2) whose sums stay in registers over the group's inputs: the
// general tile kernels, called per group and point on 16-column panels, spent as long in their set-up,
// the short last tile and the driver as in their FMAs (RegNetY's 14 x 14 x 320, 20 groups of 16).
struct WinoGroupGemm {
  const float* v;
  int64_t ldv;
  const float* w;
  int64_t ldw, wstep;
  float* m;
  int64_t ldm, rows, ng, cg, og;
};
void wino_group_gemm_avx512f(const WinoGroupGemm& a);
void wino_group_gemm_avx2(const WinoGroupGemm& a);
void wino23_in_avx512f(const float* const* src, int64_t c, float* v, int64_t stride);
void wino23_out_avx512f(const float* m, int64_t mstride, int64_t n, const WinoOut& o);
void wino43_in_avx512f(const float* const* src, int64_t c, float* v, int64_t stride);
void wino43_out_avx512f(const float* m, int64_t mstride, int64_t n, const WinoOut& o);
void wino23_in_avx2(const float* const* src, int64_t c, float* v, int64_t stride);
void wino23_out_avx2(const float* m, int64_t mstride, int64_t n, const WinoOut& o);
void wino43_in_avx2(const float* const* src, int64_t c, float* v, int64_t stride);
void wino43_out_avx2(const float* m, int64_t mstride, int64_t n, const WinoOut& o);
void dw_row_avx2(const DwRowArgs& a);

// One output row of conv2d_nchw_in_f32 for a block of up to 16 output channels: taps[t] is the phase
// row tap t (packed-weight row t) reads, at the row's output column 0 (read to the next multiple of 16
// columns); w the block's first weight column, row t at w + t * ldw (16 columns, zero past the last
// channel); y[ox * ldy + o] for o < nc.
struct NchwInRowArgs {
  const float* const* taps;
  int64_t ntaps;
  const float* w;
  int64_t ldw;
  int64_t ow;
  float* y;
  int64_t ldy, nc;
  const float* bias;  // nc values, or nullptr
  Activation act;
  float clip_min, clip_max;
};
void conv_nchw_in_row_avx512f(const NchwInRowArgs& a);
// The same for 17 to 32 output channels (nc; w's rows 32 columns wide, zero past the last channel).
void conv_nchw_in_row_nhwc_avx512f(const NchwInRowArgs& a);
// The `stride` phase rows of one input row (w floats, pad_l zeros to its left, zeros past its end):
// out[p * len + j] = row[j * stride + p - pad_l].
void nchw_phase_rows_avx512f(const float* row, int64_t w, int64_t pad_l, int64_t stride, int64_t len,
                             float* out);

}  // namespace tessera::kernels::x86
