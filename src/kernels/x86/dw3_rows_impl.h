// Depthwise K x K (K = 3, 5, 7) over rows (dw3_rows_avx512f / dw3_rows_avx2), written once for any vector
// ISA. Included only by the ISA files, which instantiate it with their vector traits and compile it with
// their flags. V supplies: vec, mask, kWidth (floats per vector), kTile (pixels per register tile: weights,
// sums and the input being used must fit the register file), load / store (full and masked), fma, add, max,
// min, set1, zero, tail_mask(n).
//
// Channel blocks of kWidth are the outer loop over a small group of output rows, so a block's input rows stay
// in L1 from one output row to the next; each input vector loaded feeds every output of the tile that uses it
// (at stride 1, K FMAs per load). 3x3: the block's 9 weight vectors live in registers; 5x5 and 7x7 (25 and 49
// vectors) load one kernel row's K weights per tile row from L1 (K loads against K x PX FMAs). EfficientNet's
// 5x5 and ConvNeXt's 7x7 had a kernel per output pixel, one input load per FMA: 55-64 GFLOP/s on Zen 4.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/vec_masked.h"

namespace tessera::kernels::x86::dw3 {

template <class V>
struct Epilogue {
  Activation act;
  typename V::vec lo, hi;
};

using vec::load;

template <class V, bool FULL>
inline __attribute__((always_inline)) void store(float* p, typename V::mask m, typename V::vec v,
                                                 const float* r, const Epilogue<V>& ep) {
  if (r) v = V::add(v, load<V, FULL>(r, m));
  if (ep.act == Activation::relu) v = V::max(v, V::zero());
  if (ep.act == Activation::clip) v = V::min(V::max(v, ep.lo), ep.hi);
  if (ep.act == Activation::silu) v = V::silu(v);
  if (ep.act == Activation::hardswish) v = V::hardswish(v);
  vec::store<V, FULL>(p, m, v);
}

// Keeps a loaded input vector in a register for the (up to 3) FMAs it feeds: GCC otherwise folds the load
// into each of them, and the tile ran bound by its loads (Zen 4, one 512-bit load a cycle; stride 1 from L2,
// 56 x 56 x 144: 68 -> 85 GFLOP/s, 14 x 14 x 576 72 -> 80-83; /tmp/w/dwb.cpp). Not under the SIMDe
// emulation, whose vectors are structs.
template <class T>
inline __attribute__((always_inline)) void in_register(T& v) {
#ifndef TESSERA_EMULATE_AVX512
  asm("" : "+v"(v));
#else
  (void)v;
#endif
}

// A channel block's K x K weight vectors: for K = 3 all nine in registers (loaded once per block), else a
// pointer into the packed weights ([K * K][ldw]), one kernel row loaded where it is used.
template <class V, int K, bool FULL>
struct Weights {
  typename V::vec v[9];
  const float* p = nullptr;
  int64_t ld = 0;
  typename V::mask m;
  Weights(const float* w, int64_t ldw, typename V::mask mask) : p(w), ld(ldw), m(mask) {
    if constexpr (K == 3)
#pragma GCC unroll 9
      for (int t = 0; t < 9; ++t) v[t] = load<V, FULL>(w + t * ldw, mask);
  }
  // kernel row r's K vectors
  inline __attribute__((always_inline)) void row(int r, typename V::vec* out) const {
#pragma GCC unroll 7
    for (int s = 0; s < K; ++s) {
      if constexpr (K == 3)
        out[s] = v[r * 3 + s];
      else
        out[s] = load<V, FULL>(p + (r * K + s) * ld, m);
    }
  }
};

// PX outputs of one row; ix = the input column of the first output's leftmost tap. Input column j of the
// tile feeds output (j - s) / S through weight s. CLIP: taps may fall outside the row [0, w) (skipped there)
// and only the first n outputs are stored — 5x5 and 7x7's edges and narrow rows, where one output at a time
// reloaded each kernel row's weights for K FMAs; else all taps lie inside and all PX are stored.
template <class V, int K, int S, int PX, bool FULL, bool CLIP = false>
inline __attribute__((always_inline)) void tile(const float* const* rows, int64_t ix, int64_t c, int64_t cy,
                                                const Weights<V, K, FULL>& w, typename V::vec b,
                                                typename V::mask m, float* yo, const float* ro,
                                                const Epilogue<V>& ep, int64_t width = 0, int64_t n = PX) {
  typename V::vec acc[PX];
#pragma GCC unroll 16
  for (int p = 0; p < PX; ++p) acc[p] = b;
#pragma GCC unroll 7
  for (int r = 0; r < K; ++r) {
    if (!rows[r]) continue;
    typename V::vec wr[K];
    w.row(r, wr);
    const float* q = rows[r] + ix * c;
#pragma GCC unroll 64
    for (int j = 0; j < (PX - 1) * S + K; ++j) {
      if (CLIP && (ix + j < 0 || ix + j >= width)) continue;
      typename V::vec v = load<V, FULL>(q + j * c, m);
      in_register(v);
#pragma GCC unroll 7
      for (int s = 0; s < K; ++s) {
        const int d = j - s;
        if (d >= 0 && d % S == 0 && d / S < PX) acc[d / S] = V::fma(v, wr[s], acc[d / S]);
      }
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < PX; ++p)
    if (!CLIP || p < n) store<V, FULL>(yo + p * cy, m, acc[p], ro ? ro + p * cy : nullptr, ep);
}

// One output whose taps may fall in the left or right padding.
template <class V, int K, bool FULL>
inline __attribute__((always_inline)) void edge(const float* const* rows, int64_t ix, int64_t w, int64_t c,
                                                const Weights<V, K, FULL>& wt, typename V::vec b,
                                                typename V::mask m, float* yo, const float* ro,
                                                const Epilogue<V>& ep) {
  typename V::vec acc = b;
#pragma GCC unroll 7
  for (int r = 0; r < K; ++r) {
    if (!rows[r]) continue;
    typename V::vec wr[K];
    wt.row(r, wr);
#pragma GCC unroll 7
    for (int s = 0; s < K; ++s)
      if (ix + s >= 0 && ix + s < w) acc = V::fma(load<V, FULL>(rows[r] + (ix + s) * c, m), wr[s], acc);
  }
  store<V, FULL>(yo, m, acc, ro, ep);
}

// Where input row iy lies in x, in rows (Dw3RowsArgs::ring).
inline int64_t row_at(const Dw3RowsArgs& a, int64_t iy) {
  return a.ring ? (a.ring_first + iy) % a.ring : iy;
}

// Rows a.oy0..a.oy1 for channels [cb, cb + kWidth) (masked by m when !FULL); outputs [xa, xb) are interior.
template <class V, int K, int S, bool FULL>
void block(const Dw3RowsArgs& a, int64_t cb, typename V::mask m, int64_t xa, int64_t xb,
           const Epilogue<V>& ep) {
  constexpr int PX = V::kTile;
  const int64_t c = a.ldx ? a.ldx : a.c, cy = a.ldy ? a.ldy : a.c, cw = a.ldw ? a.ldw : a.c;
  const Weights<V, K, FULL> wv(a.wp + cb, cw, m);
  const typename V::vec b = a.bias ? load<V, FULL>(a.bias + cb, m) : V::zero();
  for (int64_t oy = a.oy0; oy < a.oy1; ++oy) {
    const float* rows[K];
    for (int r = 0; r < K; ++r) {
      const int64_t iy = oy * a.sh - a.pad_t + r;
      rows[r] = iy >= 0 && iy < a.h ? a.x + row_at(a, iy) * a.w * c + cb : nullptr;
    }
    float* yr = a.y + oy * a.ow * cy + cb;
    const float* rr = a.residual ? a.residual + oy * a.ow * cy + cb : nullptr;
    auto at = [&](int64_t ox) { return rr ? rr + ox * cy : nullptr; };
    auto x0 = [&](int64_t ox) { return ox * S - a.pad_l; };
    int64_t ox = 0;
    if constexpr (K > 3) {
      // tiles of PX across the row, clipped where a tap falls outside (a 14-wide row: two tiles, where edge
      // outputs one by one and tiles of 2 ran 5x5 at 14 x 14 slower than a kernel per pixel)
      for (; ox < a.ow; ox += PX) {
        if (ox >= xa && ox + PX <= xb)
          tile<V, K, S, PX, FULL>(rows, x0(ox), c, cy, wv, b, m, yr + ox * cy, at(ox), ep);
        else
          tile<V, K, S, PX, FULL, true>(rows, x0(ox), c, cy, wv, b, m, yr + ox * cy, at(ox), ep, a.w,
                                        std::min<int64_t>(PX, a.ow - ox));
      }
      continue;
    }
    for (; ox < xa; ++ox) edge<V, K, FULL>(rows, x0(ox), a.w, c, wv, b, m, yr + ox * cy, at(ox), ep);
    for (; ox + PX <= xb; ox += PX)
      tile<V, K, S, PX, FULL>(rows, x0(ox), c, cy, wv, b, m, yr + ox * cy, at(ox), ep);
    if constexpr (PX >= 8)
      if (ox + PX / 2 <= xb) {
        tile<V, K, S, PX / 2, FULL>(rows, x0(ox), c, cy, wv, b, m, yr + ox * cy, at(ox), ep);
        ox += PX / 2;
      }
    if (ox + 2 <= xb) {
      tile<V, K, S, 2, FULL>(rows, x0(ox), c, cy, wv, b, m, yr + ox * cy, at(ox), ep);
      ox += 2;
    }
    for (; ox < a.ow; ++ox) edge<V, K, FULL>(rows, x0(ox), a.w, c, wv, b, m, yr + ox * cy, at(ox), ep);
  }
}

// The interior outputs [xa, xb) of a row: all K taps inside it.
template <int K, int S>
std::pair<int64_t, int64_t> interior(const Dw3RowsArgs& a) {
  const int64_t xa = std::min(a.ow, (a.pad_l + S - 1) / S);
  const int64_t last = a.w - K + a.pad_l;  // the largest ox * S whose taps end inside
  return {xa, last < 0 ? xa : std::clamp<int64_t>(last / S + 1, xa, a.ow)};
}

// Groups of `group` output rows, every channel block per group (one block's weights in registers for the
// group's rows, its input lines in L1 from one output row to the next).
template <class V, int K, int S>
void rows(const Dw3RowsArgs& a, int64_t group) {
  const Epilogue<V> ep{a.act, V::set1(a.clip_min), V::set1(a.clip_max)};
  const auto [xa, xb] = interior<K, S>(a);
  const int64_t cfull = a.c / V::kWidth * V::kWidth;
  for (int64_t r0 = a.oy0; r0 < a.oy1; r0 += group) {
    Dw3RowsArgs g = a;
    g.oy0 = r0, g.oy1 = std::min(a.oy1, r0 + group);
    for (int64_t cb = 0; cb < cfull; cb += V::kWidth)
      block<V, K, S, true>(g, cb, V::tail_mask(V::kWidth), xa, xb, ep);
    if (cfull < a.c) block<V, K, S, false>(g, cfull, V::tail_mask(int(a.c - cfull)), xa, xb, ep);
  }
}

// Every channel block per tile of outputs: a tile's input lines (K rows x its columns, all channels) are
// read from L2 once and used whole while in L1 (AVX2's 32-byte blocks take half a line each); each block's
// weight vectors are reloaded from L1 per tile.
template <class V, int K, int S, bool FULL>
inline __attribute__((always_inline)) void tile_blocks(const Dw3RowsArgs& a, const float* const* rows,
                                                       int64_t ix, int64_t cb0, int64_t cb1,
                                                       typename V::mask m, int px, float* yo, const float* ro,
                                                       const Epilogue<V>& ep) {
  constexpr int PX = V::kTile;
  const int64_t c = a.ldx ? a.ldx : a.c, cy = a.ldy ? a.ldy : a.c, cw = a.ldw ? a.ldw : a.c;
  for (int64_t cb = cb0; cb < cb1; cb += V::kWidth) {
    const Weights<V, K, FULL> wv(a.wp + cb, cw, m);
    const typename V::vec b = a.bias ? load<V, FULL>(a.bias + cb, m) : V::zero();
    const float* rc[K];
    for (int r = 0; r < K; ++r) rc[r] = rows[r] ? rows[r] + cb : nullptr;
    const float* r = ro ? ro + cb : nullptr;
    if (px == PX)
      tile<V, K, S, PX, FULL>(rc, ix, c, cy, wv, b, m, yo + cb, r, ep);
    else if (px == 2)
      tile<V, K, S, 2, FULL>(rc, ix, c, cy, wv, b, m, yo + cb, r, ep);
    else if (K == 3)
      edge<V, K, FULL>(rc, ix, a.w, c, wv, b, m, yo + cb, r, ep);
    else  // px = -n: the first n of a tile of PX, clipped
      tile<V, K, S, PX, FULL, true>(rc, ix, c, cy, wv, b, m, yo + cb, r, ep, a.w, -px);
  }
}

template <class V, int K, int S>
void rows_by_tile(const Dw3RowsArgs& a) {
  constexpr int PX = V::kTile;
  const Epilogue<V> ep{a.act, V::set1(a.clip_min), V::set1(a.clip_max)};
  const auto [xa, xb] = interior<K, S>(a);
  const int64_t cfull = a.c / V::kWidth * V::kWidth;
  const int64_t c = a.ldx ? a.ldx : a.c, cy = a.ldy ? a.ldy : a.c;
  const typename V::mask full = V::tail_mask(V::kWidth), tail = V::tail_mask(int(a.c - cfull));
  for (int64_t oy = a.oy0; oy < a.oy1; ++oy) {
    const float* rows[K];
    for (int r = 0; r < K; ++r) {
      const int64_t iy = oy * a.sh - a.pad_t + r;
      rows[r] = iy >= 0 && iy < a.h ? a.x + row_at(a, iy) * a.w * c : nullptr;
    }
    float* yr = a.y + oy * a.ow * cy;
    const float* rr = a.residual ? a.residual + oy * a.ow * cy : nullptr;
    auto step = [&](int64_t ox, int px) {
      const int64_t ix = ox * S - a.pad_l;
      float* yo = yr + ox * cy;
      const float* ro = rr ? rr + ox * cy : nullptr;
      tile_blocks<V, K, S, true>(a, rows, ix, 0, cfull, full, px, yo, ro, ep);
      if (cfull < a.c) tile_blocks<V, K, S, false>(a, rows, ix, cfull, a.c, tail, px, yo, ro, ep);
    };
    int64_t ox = 0;
    if constexpr (K > 3) {  // tiles of PX, clipped where a tap falls outside (see block)
      for (; ox < a.ow; ox += PX)
        step(ox, ox >= xa && ox + PX <= xb ? PX : -int(std::min<int64_t>(PX, a.ow - ox)));
      continue;
    }
    for (; ox < xa; ++ox) step(ox, 1);
    for (; ox + PX <= xb; ox += PX) step(ox, PX);
    for (; ox + 2 <= xb; ox += 2) step(ox, 2);
    for (; ox < a.ow; ++ox) step(ox, 1);
  }
}

// Two orders. By tile (all channels of a few outputs, then the next few) reads the input in address order,
// each line whole while it is in L1: on the Xeon (AVX-512 and AVX2) stride 2 and maps wider than 14 (in-
// process A/B, MobileNetV2 1-2% per run at one thread, 5% at two; alone, 112^2 x 64 1.3-1.8x, 28^2 x 128
// stride 2 1.5-1.6x). By block (one block's weights in registers for a group of rows) for small maps at
// stride 1, whose rows fit L1 anyway (7^2 x 960 1.3-1.9x faster than by tile), in groups of at least 64
// outputs (a block over the whole band left AVX2's 32-byte blocks' lines half written and re-read them:
// 112 x 112 x 32 8% slower). `blocks_outer`: every shape by block over the whole band, as Zen 4 runs
// AVX-512 best: from L2, 1.1-1.4x faster than by tile at both strides (56^2 x 144 stride 1 80 -> 102
// GFLOP/s, 112^2 x 96 stride 2 58 -> 66, 14^2 x 576 stride 2 37 -> 50; /tmp/w/dws2.cpp); with AVX2 there
// mixed (0.8-1.25x), so not there. Dw3RowsArgs::order overrides the choice (tests).
template <class V, int K>
void run_k(const Dw3RowsArgs& a, bool blocks_outer) {
  using Order = Dw3RowsArgs::Order;
  if (a.order != Order::tuned) blocks_outer = a.order == Order::by_block;
  if (blocks_outer) {
    if (a.sw == 1)
      rows<V, K, 1>(a, a.oy1 - a.oy0);
    else
      rows<V, K, 2>(a, a.oy1 - a.oy0);
  } else if (a.sw == 1 && a.ow <= 14 && a.order == Order::tuned) {
    rows<V, K, 1>(a, std::max<int64_t>(1, (64 + a.ow - 1) / a.ow));
  } else if (a.sw == 1) {
    rows_by_tile<V, K, 1>(a);
  } else {
    rows_by_tile<V, K, 2>(a);
  }
}

template <class V>
void run(const Dw3RowsArgs& a, bool blocks_outer) {
  if (a.k == 7)
    run_k<V, 7>(a, blocks_outer);
  else if (a.k == 5)
    run_k<V, 5>(a, blocks_outer);
  else
    run_k<V, 3>(a, blocks_outer);
}

}  // namespace tessera::kernels::x86::dw3
