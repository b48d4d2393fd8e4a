// Grouped convolution over NHWC rows (grouped_row_avx512f / grouped_row_avx2), written once for any vector
// ISA: ResNeXt's and RegNet's 3x3 convs of 4 to 64 channels a group, which the dense kernels would compute
// as block-diagonal matrices (2-16x the work) and im2col per group leaves at a third of peak. Included only
// by the ISA files after dw3_rows_impl.h (its Epilogue and store); V adds to dw3's traits ivec,
// group_base(cpg), plus(i, j) and permute(v, i).
//
// Output channels go in blocks of 16 (one zmm, two ymm), a block's weights packed per tap as `slots`
// vectors of 16 (conv_nhwc.h, grouped_nhwc_pack_weights):
//   permute (C / groups = OC / groups = cpg in {2, 4, 8}): the block's 16 outputs read the block's own 16
//     input channels; slot j feeds lane o the input lane (o / cpg) * cpg + j, one permute of the loaded input
//     vector per slot (a group never crosses a ymm half, so AVX2 permutes each half alone);
//   broadcast (OC / groups a multiple of 16): the block lies in one group; slot j broadcasts the group's
//     input channel j, as the dense direct kernels do.
// A tile is PX output pixels of one row: their sums stay in registers across all taps and slots, so each
// weight vector loaded feeds PX FMAs; taps outside the image read zeros.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/vec_masked.h"

namespace tessera::kernels::x86::grouped {

// PX output pixels from column ox of NB blocks from blk (NB > 1: blocks of one group, broadcast). Taps
// outside the image read `zeros` (at least max(16, cpg_in) floats), so the row's edge pixels go in tiles too.
// BAND: ox counts the pixels of a.rows rows one after another, so a tile may span rows (each pixel its own
// input row).
// SL: the slots (a group's inputs) as a constant, 0 where a.cpg_in says: the broadcast kind's slot loop then
// unrolls, its inputs and weights at constant offsets from the pixels' pointers (with a loop index the
// pointers of an 8-pixel tile spilled to the stack; 16 slots: 77 -> 89% of peak, RegNetY's stride-2 convs).
template <class V, int PX, int NB, bool PERMUTE, bool FULL, bool BAND = false, int SL = 0>
inline __attribute__((always_inline)) void tile(const GroupedRowArgs& a, int64_t ox, int64_t blk,
                                                const float* zeros, const dw3::Epilogue<V>& ep) {
  constexpr int W = V::kWidth, S = 16 / W;
  const int64_t c = a.c, cb = blk * 16, slots = SL ? SL : a.cpg_in, taps = a.kh * a.kw;
  // the input channels the block reads: its own 16 (permute), or its group's (broadcast)
  const int64_t in0 = PERMUTE ? cb : cb / a.cpg_out * a.cpg_in;
  const float* wb = a.wp + blk * taps * slots * 16;
  typename V::mask m[S];  // the lanes of the last block (permute: C = OC) past the channels are left out
#pragma GCC unroll 2
  for (int s = 0; s < S; ++s) m[s] = V::tail_mask(int(std::clamp<int64_t>(a.oc - cb - s * W, 0, W)));
  typename V::vec acc[PX][NB][S];
#pragma GCC unroll 2
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
    for (int s = 0; s < S; ++s) {
      const typename V::vec bv = a.bias ? vec::load<V, FULL>(a.bias + cb + b * 16 + s * W, m[s]) : V::zero();
#pragma GCC unroll 8
      for (int p = 0; p < PX; ++p) acc[p][b][s] = bv;
    }
  typename V::ivec base{};
  if constexpr (PERMUTE) base = V::group_base(int(a.cpg_in));
  int64_t iy_p[PX], ix_p[PX];  // BAND: each pixel's window origin
  if constexpr (BAND)
#pragma GCC unroll 8
    for (int p = 0; p < PX; ++p)
      iy_p[p] = a.iy0 + (ox + p) / a.ow * a.sh, ix_p[p] = (ox + p) % a.ow * a.sw + a.ix0;
  // A tile whose windows all lie inside the row takes its pointers unchecked: the per-pixel checks' branches
  // at every tap cost 10% of the FMA rate (/tmp/w/bc7.cpp on Zen 5: 211 -> 188 GFLOP/s).
  const bool inside =
      !BAND && ox * a.sw + a.ix0 >= 0 && (ox + PX - 1) * a.sw + a.ix0 + (a.kw - 1) * a.dw < a.w;
  for (int64_t r = 0; r < a.kh; ++r) {
    const int64_t iy = a.iy0 + r * a.dh;
    if (!BAND && (iy < 0 || iy >= a.h)) continue;
    const float* xr = a.x + iy * a.w * c + in0;
    for (int64_t q = 0; q < a.kw; ++q) {
      const float* wt = wb + (r * a.kw + q) * slots * 16;
      const float* xp[PX];
      if (inside) {
#pragma GCC unroll 8
        for (int p = 0; p < PX; ++p) xp[p] = xr + ((ox + p) * a.sw + a.ix0 + q * a.dw) * c;
      } else {
#pragma GCC unroll 8
        for (int p = 0; p < PX; ++p) {
          if constexpr (BAND) {
            const int64_t y = iy_p[p] + r * a.dh, x = ix_p[p] + q * a.dw;
            xp[p] = y >= 0 && y < a.h && x >= 0 && x < a.w ? a.x + (y * a.w + x) * c + in0 : zeros;
          } else {
            const int64_t ix = (ox + p) * a.sw + a.ix0 + q * a.dw;
            xp[p] = ix >= 0 && ix < a.w ? xr + ix * c : zeros;
          }
        }
      }
      if constexpr (PERMUTE) {
        typename V::vec xv[PX][S];
#pragma GCC unroll 8
        for (int p = 0; p < PX; ++p)
#pragma GCC unroll 2
          for (int s = 0; s < S; ++s) xv[p][s] = vec::load<V, FULL>(xp[p] + s * W, m[s]);
        for (int64_t j = 0; j < slots; ++j) {
          const typename V::ivec idx = V::plus(base, int(j));
#pragma GCC unroll 2
          for (int s = 0; s < S; ++s) {
            const typename V::vec wv = V::load(wt + j * 16 + s * W);
#pragma GCC unroll 8
            for (int p = 0; p < PX; ++p) acc[p][0][s] = V::fma(V::permute(xv[p][s], idx), wv, acc[p][0][s]);
          }
        }
      } else {
#pragma GCC unroll 32
        for (int64_t j = 0; j < slots; ++j) {
          typename V::vec wv[NB][S];
#pragma GCC unroll 2
          for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
            for (int s = 0; s < S; ++s) wv[b][s] = V::load(wt + b * taps * slots * 16 + j * 16 + s * W);
#pragma GCC unroll 8
          for (int p = 0; p < PX; ++p) {
            const typename V::vec xb = V::set1(xp[p][j]);
#pragma GCC unroll 2
            for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
              for (int s = 0; s < S; ++s) acc[p][b][s] = V::fma(xb, wv[b][s], acc[p][b][s]);
          }
        }
      }
    }
  }
  float* yo = a.y + ox * a.oc + cb;
  const float* ro = a.residual ? a.residual + ox * a.oc + cb : nullptr;
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p)
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
      for (int s = 0; s < S; ++s) {
        const int64_t off = p * a.oc + b * 16 + s * W;
        dw3::store<V, FULL>(yo + off, m[s], acc[p][b][s], ro ? ro + off : nullptr, ep);
      }
}

// The permute kind with a window 3 wide (dilation 1) at stride SW, one vector a block (AVX-512): each input
// vector of the tile's row is permuted once per slot and feeds the (up to 3) pixels whose window holds it,
// instead of once per pixel and tap (the permutes, not the FMAs, bounded the plain tile: 50-59 GFLOP/s).
template <class V, int PX, int SW, bool FULL>
inline __attribute__((always_inline)) void tile3(const GroupedRowArgs& a, int64_t ox, int64_t blk,
                                                 const float* zeros, const dw3::Epilogue<V>& ep) {
  constexpr int NP = (PX - 1) * SW + 3;  // input columns the tile reads
  const int64_t c = a.c, cb = blk * 16, slots = a.cpg_in;
  const float* wb = a.wp + blk * a.kh * 3 * slots * 16;
  const typename V::mask m = V::tail_mask(int(std::min<int64_t>(a.oc - cb, 16)));
  typename V::vec acc[PX];
  const typename V::vec bv = a.bias ? vec::load<V, FULL>(a.bias + cb, m) : V::zero();
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p) acc[p] = bv;
  const typename V::ivec base = V::group_base(int(a.cpg_in));
  const int64_t ix0 = ox * SW + a.ix0;
  for (int64_t r = 0; r < a.kh; ++r) {
    const int64_t iy = a.iy0 + r * a.dh;
    if (iy < 0 || iy >= a.h) continue;
    const float* xr = a.x + iy * a.w * c + cb;
    typename V::vec xv[NP];
#pragma GCC unroll 20
    for (int n = 0; n < NP; ++n) {
      const int64_t ix = ix0 + n;
      xv[n] = vec::load<V, FULL>(ix >= 0 && ix < a.w ? xr + ix * c : zeros, m);
    }
    const float* wt = wb + r * 3 * slots * 16;
    for (int64_t j = 0; j < slots; ++j) {
      const typename V::ivec idx = V::plus(base, int(j));
      const typename V::vec w0 = V::load(wt + j * 16), w1 = V::load(wt + (slots + j) * 16),
                            w2 = V::load(wt + (2 * slots + j) * 16);
#pragma GCC unroll 20
      for (int n = 0; n < NP; ++n) {
        const typename V::vec pv = V::permute(xv[n], idx);
        // pixel p reads column p * SW + q at tap q
        if (n % SW == 0 && n / SW < PX) acc[n / SW] = V::fma(pv, w0, acc[n / SW]);
        if (n >= 1 && (n - 1) % SW == 0 && (n - 1) / SW < PX)
          acc[(n - 1) / SW] = V::fma(pv, w1, acc[(n - 1) / SW]);
        if (n >= 2 && (n - 2) % SW == 0 && (n - 2) / SW < PX)
          acc[(n - 2) / SW] = V::fma(pv, w2, acc[(n - 2) / SW]);
      }
    }
  }
  float* yo = a.y + ox * a.oc + cb;
  const float* ro = a.residual ? a.residual + ox * a.oc + cb : nullptr;
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p)
    dw3::store<V, FULL>(yo + p * a.oc, m, acc[p], ro ? ro + p * a.oc : nullptr, ep);
}

template <class V, int SW, bool FULL>
void row_blocks3(const GroupedRowArgs& a, int64_t blk, const float* zeros, const dw3::Epilogue<V>& ep) {
  constexpr int PX = SW == 1 ? 8 : 4;
  int64_t ox = 0;
  for (; ox + PX <= a.ow; ox += PX) {
    if (a.prefetch) a.prefetch->step();
    tile3<V, PX, SW, FULL>(a, ox, blk, zeros, ep);
  }
  if (ox + PX / 2 <= a.ow) tile3<V, PX / 2, SW, FULL>(a, ox, blk, zeros, ep), ox += PX / 2;
  if constexpr (PX >= 4) {
    if (ox + 2 <= a.ow) tile3<V, 2, SW, FULL>(a, ox, blk, zeros, ep), ox += 2;
  }
  for (; ox < a.ow; ++ox) tile3<V, 1, SW, FULL>(a, ox, blk, zeros, ep);
}

// NB blocks from blk over the whole row (BAND: the a.rows rows' pixels in a run), in near-equal tiles of at
// most PX pixels (14 as 7 + 7): a tile's pixels are its independent FMA chains, and a short last tile (the
// 2 of 8 + 4 + 2) had too few to cover the FMA latency (RegNetY's 14-wide stride-2 rows spent 17% of their
// time in 2-pixel tiles).
template <class V, int PX, int NB, bool PERMUTE, bool FULL, bool BAND = false, int SL = 0>
void row_blocks(const GroupedRowArgs& a, int64_t blk, const float* zeros, const dw3::Epilogue<V>& ep) {
  using Fn = void (*)(const GroupedRowArgs&, int64_t, int64_t, const float*, const dw3::Epilogue<V>&);
  static constexpr auto kTile = []<int... I>(std::integer_sequence<int, I...>) {
    return std::array<Fn, sizeof...(I)>{
        [](const GroupedRowArgs& a, int64_t ox, int64_t blk, const float* zeros, const dw3::Epilogue<V>& ep) {
          tile<V, I + 1, NB, PERMUTE, FULL, BAND, SL>(a, ox, blk, zeros, ep);
        }...};
  }
  (std::make_integer_sequence<int, PX>{});
  const int64_t n = BAND ? a.rows * a.ow : a.ow, tiles = (n + PX - 1) / PX;
  for (int64_t q = 0; q < tiles; ++q) {
    if (a.prefetch) a.prefetch->step();
    const int64_t ox = q * n / tiles;
    kTile[size_t((q + 1) * n / tiles - ox - 1)](a, ox, blk, zeros, ep);
  }
}

// One output row: blocks of 16 output channels outermost (a block's weights stay in L1 across the row); the
// broadcast kind takes two blocks of a group at once where it has two (each input broadcast feeds both).
template <class V>
void row(const GroupedRowArgs& a, const float* zeros) {
  constexpr int PX = V::kWidth == 16 ? 8 : 4, PX2 = V::kWidth == 16 ? 8 : 2;
  const dw3::Epilogue<V> ep{a.act, V::set1(a.clip_min), V::set1(a.clip_max)};
  const int64_t nb = a.blk1 < 0 ? (a.oc + 15) / 16 : a.blk1;
  if (!a.permute) {  // (a.rows > 1: a band of short rows, see conv_grouped: tiles span rows)
    auto blocks = [&]<bool BAND, int SL>() {
      int64_t blk = a.blk0;
      if (a.cpg_out % 32 == 0)
        for (; blk + 2 <= nb; blk += 2) row_blocks<V, PX2, 2, false, true, BAND, SL>(a, blk, zeros, ep);
      for (; blk < nb; ++blk) row_blocks<V, PX, 1, false, true, BAND, SL>(a, blk, zeros, ep);
    };
    if (a.rows > 1)
      a.cpg_in == 16 ? blocks.template operator()<true, 16>() : blocks.template operator()<true, 0>();
    else
      a.cpg_in == 16 ? blocks.template operator()<false, 16>() : blocks.template operator()<false, 0>();
    return;
  }
  if constexpr (V::kWidth == 16) {
    if (a.kw == 3 && a.dw == 1 && (a.sw == 1 || a.sw == 2)) {
      for (int64_t blk = a.blk0; blk < nb; ++blk) {
        const bool full = a.oc - blk * 16 >= 16;
        if (a.sw == 1)
          full ? row_blocks3<V, 1, true>(a, blk, zeros, ep) : row_blocks3<V, 1, false>(a, blk, zeros, ep);
        else
          full ? row_blocks3<V, 2, true>(a, blk, zeros, ep) : row_blocks3<V, 2, false>(a, blk, zeros, ep);
      }
      return;
    }
  }
  for (int64_t blk = a.blk0; blk < nb; ++blk)
    if (a.oc - blk * 16 >= 16)
      row_blocks<V, PX, 1, true, true>(a, blk, zeros, ep);
    else
      row_blocks<V, PX, 1, true, false>(a, blk, zeros, ep);
}

// The packed-map tile (GroupMapArgs): ROWS output rows x PX pixels from output row oy's first, their 3x3
// windows read from the map at constant offsets (rows kGroupMapCols pixels of 16 floats), the slots a
// run-time loop.
template <class V, int ROWS, int PX>
inline __attribute__((always_inline)) void map_tile(const GroupMapArgs& a, int64_t oy,
                                                    const dw3::Epilogue<V>& ep) {
  static_assert(V::kWidth == 16);
  constexpr int64_t R = kGroupMapCols * 16;  // floats a map row
  const float* xb = a.map + oy * kGroupMapCols * 16;
  typename V::vec acc[ROWS][PX];
  const typename V::vec bv = a.bias ? V::load(a.bias) : V::zero();
#pragma GCC unroll 16
  for (int i = 0; i < ROWS * PX; ++i) acc[i / PX][i % PX] = bv;
  for (int j = 0; j < 16; ++j) {
    const float* xj = xb + j;
    const float* wj = a.wp + j * 16;
#pragma GCC unroll 3
    for (int r = 0; r < 3; ++r)
#pragma GCC unroll 3
      for (int q = 0; q < 3; ++q) {
        const typename V::vec wv = V::load(wj + (r * 3 + q) * 256);
#pragma GCC unroll 2
        for (int rr = 0; rr < ROWS; ++rr)
#pragma GCC unroll 14
          for (int p = 0; p < PX; ++p)
            acc[rr][p] = V::fma(V::set1(xj[(rr + r) * R + (p + q) * 16]), wv, acc[rr][p]);
      }
  }
  const typename V::mask m = V::tail_mask(16);
#pragma GCC unroll 2
  for (int rr = 0; rr < ROWS; ++rr) {
    if (oy + rr >= a.oh) break;
#pragma GCC unroll 14
    for (int p = 0; p < PX; ++p) {
      if (p >= a.ow) break;
      const int64_t off = ((oy + rr) * a.ow + p) * a.oc;
      dw3::store<V, true>(a.y + off, m, acc[rr][p], a.residual ? a.residual + off : nullptr, ep);
    }
  }
}

// One group over the whole map: its input lines into the map's interior (the border stays zero), then tiles.
template <class V>
void group_map(const GroupMapArgs& a) {
  for (int64_t iy = 0; iy < a.h; ++iy)
    for (int64_t ix = 0; ix < a.w; ++ix)
      V::store(a.map + ((iy + a.pad_t) * kGroupMapCols + ix + a.pad_l) * 16,
               V::load(a.x + (iy * a.w + ix) * a.c + a.in0));
  const dw3::Epilogue<V> ep{a.act, V::set1(a.clip_min), V::set1(a.clip_max)};
  // the next group's weights (9 x 16 x 16 floats), a slice a tile
  constexpr int64_t kLines = kGroupMapWeights * int64_t(sizeof(float)) / 64;
  const int64_t rows = a.ow <= 7 ? 2 : 1, tiles = (a.oh + rows - 1) / rows;
  const char* pf = reinterpret_cast<const char*>(a.next_wp);
  for (int64_t t = 0; t < tiles; ++t) {
    if (pf)
      for (int64_t l = kLines * t / tiles; l < kLines * (t + 1) / tiles; ++l)
        __builtin_prefetch(pf + l * 64, 0, 2);
    if (a.ow > 7)
      map_tile<V, 1, 14>(a, t, ep);
    else if (2 * t + 1 < a.oh)
      map_tile<V, 2, 7>(a, 2 * t, ep);
    else  // an odd map's last row alone
      map_tile<V, 1, 7>(a, 2 * t, ep);
  }
}

}  // namespace tessera::kernels::x86::grouped
