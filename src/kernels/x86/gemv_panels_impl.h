// One row of A against a run of whole panels of a prepacked B (the decode step's GEMMs: M = 1, every weight
// read once from memory), written once over an ISA's vector traits (V: Ymm in avx2/, Zmm in avx512f/).
//
// The panels of a K block lie one after another, so a single 1 x nr tile per panel reads the block as one
// sequential stream. On 4 KiB pages the hardware prefetcher stops at every page boundary of that stream
// and the core waits for DRAM; G panels read side by side are G streams, whose page crossings fall at
// different times, so the misses overlap. Measured on the Zen 3 VM (ordinary pages, B from memory, one
// thread): 1 x 50257 x 768 14.5 -> 18.5 GB/s, 1 x 3072 x 768 14.8 -> 20.1 GB/s with G = 4 neighbouring
// panels (G = 8 no better), and 8-9% more with the G streams far apart (run below); unpacked
// row-streaming GEMV and oneDNN's reach 17-24 depending on the VM's phase.
#pragma once

#include <cstdint>

#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86::gemv_panels {

// G panels, gstride panels apart from b on (rows of NV vectors, consecutive panels pstride floats apart):
// their columns of c (+)= a . panel, then the epilogue for those columns (ep offset to c's first column;
// row 0 of row_bias / residual).
template <class V, int NV, int G>
inline void panel_group(int64_t kc, const float* a, int64_t cs_a, const float* b, int64_t pstride, float* c,
                        float alpha, float beta, const UkrEpilogue* ep, int64_t gstride) {
  constexpr int64_t W = NV * V::kWidth;
  typename V::vec acc[G][NV];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[g][v] = V::zero();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    const typename V::vec av = V::set1(a[p * cs_a]);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[g][v] = V::fma(av, V::load(b + g * gstride * pstride + p * W + v * V::kWidth), acc[g][v]);
  }
  const typename V::vec valpha = V::set1(alpha), vbeta = V::set1(beta);
  const typename V::vec rb = V::set1(ep && ep->row_bias ? ep->row_bias[0] : 0.0f);
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int64_t j = g * gstride * W + v * V::kWidth;
      typename V::vec x = alpha == 1.0f ? acc[g][v] : V::mul(valpha, acc[g][v]);
      if (beta != 0.0f) x = V::fma(vbeta, V::load(c + j), x);
      if (ep) {
        if (ep->bias) x = V::add(x, V::load(ep->bias + j));
        if (ep->row_bias) x = V::add(x, rb);
        if (ep->residual) x = V::add(x, V::load(ep->residual + j));
        if (ep->act == Activation::relu)
          x = V::max(x, V::zero());
        else if (ep->act == Activation::clip)
          x = V::min(V::max(x, V::set1(ep->clip_min)), V::set1(ep->clip_max));
      }
      V::store(c + j, x);
    }
}

// npanels whole panels as G streams: stream g walks the panels [g * per, (g + 1) * per) in memory order, so
// each is one long contiguous run the prefetcher stays trained on (G neighbouring panels at a time, 16 KiB
// runs, were 8-9% slower: 20.4 -> 22.3 GB/s for 1 x 50257 x 768); the last npanels % G panels one at a
// time. Same contract as the direct kernel's tiles over those columns (ep: a kernel activation, relu or
// clip; the GELUs are the caller's tile pass).
template <class V, int NV, int G>
void run(int64_t kc, const float* a, int64_t cs_a, const float* b, int64_t pstride, int64_t npanels, float* c,
         float alpha, float beta, const UkrEpilogue* ep) {
  constexpr int64_t W = NV * V::kWidth;
  // the epilogue of the columns from `col` on
  UkrEpilogue e;
  const int64_t per = npanels / G;
  for (int64_t i = 0; i < per; ++i)
    panel_group<V, NV, G>(kc, a, cs_a, b + i * pstride, pstride, c + i * W, alpha, beta,
                          offset_epilogue(ep, e, 0, i * W), per);
  for (int64_t j = per * G; j < npanels; ++j)
    panel_group<V, NV, 1>(kc, a, cs_a, b + j * pstride, pstride, c + j * W, alpha, beta,
                          offset_epilogue(ep, e, 0, j * W), 1);
}

}  // namespace tessera::kernels::x86::gemv_panels
