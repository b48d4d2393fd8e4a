// Max and average pooling over one output pixel's taps, written once over an ISA's vector traits (V: Ymm in
// avx2/, Zmm in avx512f/; each adds max_keep_nan to the traits of dw3_rows_impl.h and wino_impl.h). Channels
// go in blocks of four vectors, then single vectors, then a masked tail, each block's maxima held in
// registers across all taps (the portable loop kept y in memory and re-read it on every tap).
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/x86/vec_masked.h"

namespace tessera::kernels::x86::pool {

template <class V, int NB, bool FULL>
inline void max_block(const float* const* taps, int64_t ntaps, int64_t ch, float* y, typename V::mask m) {
  typename V::vec acc[NB];
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) acc[b] = V::set1(-std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* x = taps[t] + ch;
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) acc[b] = V::max_keep_nan(acc[b], vec::load<V, FULL>(x + b * V::kWidth, m));
  }
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) vec::store<V, FULL>(y + ch + b * V::kWidth, m, acc[b]);
}

// y[ch] = max over t < ntaps of taps[t][ch], ch < c: a NaN in any tap gives NaN; no taps give -inf.
template <class V>
void max_taps(const float* const* taps, int64_t ntaps, int64_t c, float* y) {
  constexpr int W = V::kWidth;
  const typename V::mask all = V::tail_mask(W);
  int64_t ch = 0;
  for (; ch + 4 * W <= c; ch += 4 * W) max_block<V, 4, true>(taps, ntaps, ch, y, all);
  for (; ch + W <= c; ch += W) max_block<V, 1, true>(taps, ntaps, ch, y, all);
  if (ch < c) max_block<V, 1, false>(taps, ntaps, ch, y, V::tail_mask(int(c - ch)));
}

// Average pooling: the taps summed in order in registers, then scaled once (scale = 1 / the divisor).
template <class V, int NB, bool FULL>
inline void avg_block(const float* const* taps, int64_t ntaps, int64_t ch, float scale, float* y,
                      typename V::mask m) {
  typename V::vec acc[NB];
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) acc[b] = V::set1(0.0f);
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* x = taps[t] + ch;
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) acc[b] = V::add(acc[b], vec::load<V, FULL>(x + b * V::kWidth, m));
  }
  const typename V::vec s = V::set1(scale);
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) vec::store<V, FULL>(y + ch + b * V::kWidth, m, V::mul(acc[b], s));
}

// y[ch] = scale * sum over t < ntaps of taps[t][ch], ch < c.
template <class V>
void avg_taps(const float* const* taps, int64_t ntaps, int64_t c, float scale, float* y) {
  constexpr int W = V::kWidth;
  const typename V::mask all = V::tail_mask(W);
  int64_t ch = 0;
  for (; ch + 4 * W <= c; ch += 4 * W) avg_block<V, 4, true>(taps, ntaps, ch, scale, y, all);
  // the 1-3 whole vectors left in one pass over the taps (a pass per vector re-read each tap's lines: a
  // global pool of 112 x 112 x 32 from L3 at 1.2x the time)
  if (ch + 3 * W <= c) {
    avg_block<V, 3, true>(taps, ntaps, ch, scale, y, all);
    ch += 3 * W;
  } else if (ch + 2 * W <= c) {
    avg_block<V, 2, true>(taps, ntaps, ch, scale, y, all);
    ch += 2 * W;
  } else if (ch + W <= c) {
    avg_block<V, 1, true>(taps, ntaps, ch, scale, y, all);
    ch += W;
  }
  if (ch < c) avg_block<V, 1, false>(taps, ntaps, ch, scale, y, V::tail_mask(int(c - ch)));
}

}  // namespace tessera::kernels::x86::pool
