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
// weight vector loaded feeds PX FMAs. Pixels whose window leaves the image go one at a time, taps tested.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/vec_masked.h"

namespace tessera::kernels::x86::grouped {

template <class V, int PX, bool PERMUTE, bool CHECK, bool FULL>
inline __attribute__((always_inline)) void tile(const GroupedRowArgs& a, int64_t ox, int64_t blk,
                                                const dw3::Epilogue<V>& ep) {
  constexpr int W = V::kWidth, S = 16 / W;
  const int64_t c = a.c, cb = blk * 16, slots = a.slots;
  // the input channels the block reads: its own 16 (permute), or its group's (broadcast)
  const int64_t in0 = PERMUTE ? cb : cb / a.cpg_out * a.cpg_in;
  const float* wb = a.wp + blk * a.kh * a.kw * slots * 16;
  typename V::mask m[S];  // the lanes of the last block (permute: C = OC) past the channels are left out
#pragma GCC unroll 2
  for (int s = 0; s < S; ++s) m[s] = V::tail_mask(int(std::clamp<int64_t>(a.oc - cb - s * W, 0, W)));
  typename V::vec acc[PX][S];
#pragma GCC unroll 2
  for (int s = 0; s < S; ++s) {
    const typename V::vec b = a.bias ? vec::load<V, FULL>(a.bias + cb + s * W, m[s]) : V::zero();
#pragma GCC unroll 8
    for (int p = 0; p < PX; ++p) acc[p][s] = b;
  }
  typename V::ivec base{};
  if constexpr (PERMUTE) base = V::group_base(int(a.cpg_in));
  for (int64_t r = 0; r < a.kh; ++r) {
    const int64_t iy = a.iy0 + r * a.dh;
    if (iy < 0 || iy >= a.h) continue;
    const float* xr = a.x + iy * a.w * c + in0;
    for (int64_t q = 0; q < a.kw; ++q) {
      const float* wt = wb + (r * a.kw + q) * slots * 16;
      const int64_t ix = ox * a.sw + a.ix0 + q * a.dw;
      if constexpr (CHECK) {  // PX == 1
        if (ix < 0 || ix >= a.w) continue;
      }
      if constexpr (PERMUTE) {
        typename V::vec xv[PX][S];
#pragma GCC unroll 8
        for (int p = 0; p < PX; ++p)
#pragma GCC unroll 2
          for (int s = 0; s < S; ++s) xv[p][s] = vec::load<V, FULL>(xr + (ix + p * a.sw) * c + s * W, m[s]);
        for (int64_t j = 0; j < slots; ++j) {
          const typename V::ivec idx = V::plus(base, int(j));
#pragma GCC unroll 2
          for (int s = 0; s < S; ++s) {
            const typename V::vec wv = V::load(wt + j * 16 + s * W);
#pragma GCC unroll 8
            for (int p = 0; p < PX; ++p) acc[p][s] = V::fma(V::permute(xv[p][s], idx), wv, acc[p][s]);
          }
        }
      } else {
        const float* xp = xr + ix * c;
        for (int64_t j = 0; j < slots; ++j) {
          typename V::vec wv[S];
#pragma GCC unroll 2
          for (int s = 0; s < S; ++s) wv[s] = V::load(wt + j * 16 + s * W);
#pragma GCC unroll 8
          for (int p = 0; p < PX; ++p) {
            const typename V::vec xb = V::set1(xp[p * a.sw * c + j]);
#pragma GCC unroll 2
            for (int s = 0; s < S; ++s) acc[p][s] = V::fma(xb, wv[s], acc[p][s]);
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
    for (int s = 0; s < S; ++s)
      dw3::store<V, FULL>(yo + p * a.oc + s * W, m[s], acc[p][s], ro ? ro + p * a.oc + s * W : nullptr, ep);
}

template <class V, int PX, bool PERMUTE, bool FULL>
void row_block(const GroupedRowArgs& a, int64_t blk, int64_t lo, int64_t hi, const dw3::Epilogue<V>& ep) {
  int64_t ox = 0;
  for (; ox < lo; ++ox) tile<V, 1, PERMUTE, true, FULL>(a, ox, blk, ep);
  for (; ox + PX <= hi; ox += PX) tile<V, PX, PERMUTE, false, FULL>(a, ox, blk, ep);
  for (; ox < hi; ++ox) tile<V, 1, PERMUTE, false, FULL>(a, ox, blk, ep);
  for (; ox < a.ow; ++ox) tile<V, 1, PERMUTE, true, FULL>(a, ox, blk, ep);
}

// One output row: blocks of 16 output channels outermost (a block's weights stay in L1 across the row), then
// tiles of PX pixels whose windows lie inside the row, and single pixels at the edges.
template <class V, bool PERMUTE>
void row_impl(const GroupedRowArgs& a) {
  constexpr int PX = V::kWidth == 16 ? 8 : 3;
  const dw3::Epilogue<V> ep{a.act, V::set1(a.clip_min), V::set1(a.clip_max)};
  const int64_t nb = (a.oc + 15) / 16;
  // the first column whose window starts inside the row, and the end of those whose window ends inside it
  int64_t lo = 0;
  while (lo < a.ow && lo * a.sw + a.ix0 < 0) ++lo;
  int64_t hi = a.ow;
  while (hi > lo && (hi - 1) * a.sw + a.ix0 + (a.kw - 1) * a.dw >= a.w) --hi;
  for (int64_t blk = 0; blk < nb; ++blk)
    if (a.oc - blk * 16 >= 16)
      row_block<V, PX, PERMUTE, true>(a, blk, lo, hi, ep);
    else
      row_block<V, PX, PERMUTE, false>(a, blk, lo, hi, ep);
}

template <class V>
void row(const GroupedRowArgs& a) {
  if (a.permute)
    row_impl<V, true>(a);
  else
    row_impl<V, false>(a);
}

}  // namespace tessera::kernels::x86::grouped
