// Whole conv tiles in one call (ConvTiles, conv_nhwc.h), written once for any vector ISA: the AVX2 file
// instantiates it for 6 x 16 tiles (NV = 2 ymm per row), the AVX-512 file for 6 x 64, 12 x 32 and 12 x 16
// (the row loops unroll fully up to 16 rows: one left rolled kept its accumulators in memory). Included
// only by the ISA files, which compile it with their flags. V supplies vec, kWidth, load, store, fma, add,
// max, min, set1, zero.
//
// Why: a short-K conv (MobileNet's 16- to 32-deep expansions, a stem's 27) spent as long per tile on the
// call, the driver's row table and the general kernel's set-up and branches as in its K loop. Here the tile
// loop, the panel loop and the K loop sit in one function and the epilogue is fixed at compile time.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86::conv_tiles {

// SiLU or HardSwish over a stored rows x nv-vector block, from L1 and out of line: applied to the
// accumulators, their constants and temporaries can take registers GCC then finds for the K loop on the
// stack.
template <class V, Activation ACT>
__attribute__((noinline)) void act_block(float* y, int64_t ldy, int rows, int nv) {
  for (int i = 0; i < rows; ++i)
    for (int v = 0; v < nv; ++v) {
      float* p = y + i * ldy + V::kWidth * v;
      V::store(p, ACT == Activation::silu ? V::silu(V::load(p)) : V::hardswish(V::load(p)));
    }
}

// ntiles tiles of MR consecutive output pixels x npanels panels of NV vectors; see ConvTiles. The output
// rows are not prefetched: in the pointwise -> depthwise pair they are the band buffer, in L2; streamed to
// memory, the next tile's stores overlap this tile's K loop.
template <class V, int MR, int NV, Activation ACT, bool BIAS, bool RES, bool TABLE, bool PF>
void run(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps, int64_t kc,
         const float* w, int64_t wstep, int64_t npanels, float* y, int64_t ldy, const ConvTileEpilogue& ep,
         ConvPrefetch pf) {
  constexpr int64_t W = V::kWidth * NV;  // panel width
  // SiLU in the zmm tiles' registers (31 of 32 hold); HardSwish, and SiLU in AVX2's 16 ymm, out of line
  // (test_codegen.py: inline, both had the K loop spill)
  constexpr bool kActOutOfLine = ACT == Activation::hardswish || (ACT == Activation::silu && V::kWidth < 16);
  constexpr int kLineVecs = 64 / int(sizeof(float) * V::kWidth);  // vectors per cache line (1 or 2)
  // PF: the lines a K step prefetches, at least one (and that one unconditional, so that no copy of the K
  // loop the compiler makes goes without), at most a panel row's
  constexpr int kMaxLines = (NV + kLineVecs - 1) / kLineVecs;
  const int pf_lines = PF ? int(std::max<int64_t>(1, prefetch_lines<kMaxLines>(pf))) : 0;
  const char* pfp = pf.p;
  const float* bias = ep.bias;
  const float* res = ep.residual;
  for (int64_t t = 0; t < ntiles; ++t, y += MR * ldy, res += RES ? MR * ep.ldr : 0) {
    const float* wp = w;
    for (int64_t j = 0; j < npanels; ++j, wp += wstep) {
      typename V::vec acc[MR][NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const typename V::vec b0 = BIAS ? V::load(bias + W * j + V::kWidth * v) : V::zero();
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) acc[i][v] = b0;
      }
      const float* wk = wp;
      for (int64_t tap = 0; tap < (TABLE ? ntaps : 1); ++tap) {
        const float* r[MR];
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) r[i] = TABLE ? rows[(t * ntaps + tap) * MR + i] : x + (t * MR + i) * ldx;
#pragma GCC unroll 4
        for (int64_t k = 0; k < kc; ++k, wk += W) {
          if constexpr (PF) {
            _mm_prefetch(pfp, _MM_HINT_T1);
#pragma GCC unroll 4
            for (int j = 1; j < kMaxLines; ++j)
              if (j < pf_lines) _mm_prefetch(pfp + 64 * j, _MM_HINT_T1);
            pfp += pf.step;
          }
          typename V::vec b[NV];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) b[v] = V::load(wk + V::kWidth * v);
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) {
            const typename V::vec a = V::set1(r[i][k]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(a, b[v], acc[i][v]);
          }
        }
      }
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          typename V::vec o = acc[i][v];
          if constexpr (RES) o = V::add(o, V::load(res + i * ep.ldr + W * j + V::kWidth * v));
          if constexpr (ACT == Activation::relu) o = V::max(o, V::zero());
          if constexpr (ACT == Activation::clip)
            o = V::min(V::max(o, V::set1(ep.clip_min)), V::set1(ep.clip_max));
          if constexpr (ACT == Activation::silu && !kActOutOfLine) o = V::silu(o);
          V::store(y + i * ldy + W * j + V::kWidth * v, o);
        }
      if constexpr (kActOutOfLine) act_block<V, ACT>(y + W * j, ldy, MR, NV);
    }
  }
}

// The instantiation K::fn<ACT, BIAS, RES, TABLE, PF> (a ConvTiles) for ep's activation (none, Relu, Clip,
// SiLU or HardSwish: the driver sends no other), bias, residual, input form (row tables, or pointwise rows at
// x) and prefetch.
template <class K>
void dispatch_by(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps,
                 int64_t kc, const float* w, int64_t wstep, int64_t npanels, float* y, int64_t ldy,
                 const ConvTileEpilogue& ep, ConvPrefetch pf) {
  using Fn = ConvTiles;
  // [activation][table][prefetch][bias][residual]
  auto by_epilogue = [](auto act, auto table, auto prefetch) {
    constexpr Activation A = decltype(act)::value;
    constexpr bool T = decltype(table)::value, P = decltype(prefetch)::value;
    return std::array<Fn, 4>{K::template fn<A, false, false, T, P>, K::template fn<A, false, true, T, P>,
                             K::template fn<A, true, false, T, P>, K::template fn<A, true, true, T, P>};
  };
  auto by_prefetch = [&](auto act, auto table) {
    return std::array<std::array<Fn, 4>, 2>{by_epilogue(act, table, std::false_type{}),
                                            by_epilogue(act, table, std::true_type{})};
  };
  auto by_form = [&](auto act) {
    return std::array<std::array<std::array<Fn, 4>, 2>, 2>{by_prefetch(act, std::false_type{}),
                                                           by_prefetch(act, std::true_type{})};
  };
  static constexpr std::array<std::array<std::array<std::array<Fn, 4>, 2>, 2>, 5> kTable = {
      by_form(std::integral_constant<Activation, Activation::none>{}),
      by_form(std::integral_constant<Activation, Activation::relu>{}),
      by_form(std::integral_constant<Activation, Activation::clip>{}),
      by_form(std::integral_constant<Activation, Activation::silu>{}),
      by_form(std::integral_constant<Activation, Activation::hardswish>{})};
  const int a = ep.act == Activation::relu        ? 1
                : ep.act == Activation::clip      ? 2
                : ep.act == Activation::silu      ? 3
                : ep.act == Activation::hardswish ? 4
                                                  : 0;
  kTable[a][rows != nullptr][pf.p != nullptr][2 * (ep.bias != nullptr) + (ep.residual != nullptr)](
      rows, x, ldx, ntiles, ntaps, kc, w, wstep, npanels, y, ldy, ep, pf);
}

template <class V, int MR, int NV>
struct Run {
  template <Activation ACT, bool BIAS, bool RES, bool TABLE, bool PF>
  static constexpr ConvTiles fn = run<V, MR, NV, ACT, BIAS, RES, TABLE, PF>;
};

template <class V, int MR, int NV>
void dispatch(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps,
              int64_t kc, const float* w, int64_t wstep, int64_t npanels, float* y, int64_t ldy,
              const ConvTileEpilogue& ep, ConvPrefetch pf) {
  dispatch_by<Run<V, MR, NV>>(rows, x, ldx, ntiles, ntaps, kc, w, wstep, npanels, y, ldy, ep, pf);
}

}  // namespace tessera::kernels::x86::conv_tiles
