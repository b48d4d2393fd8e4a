// NHWC convolution micro-kernels for AVX2+FMA: an MR-pixel x 8*NV-channel tile in
// ymm accumulators (6x16, 12x8), A broadcast from the input pixel rows, B from
// the packed weight panel (16 wide, or strips of a wider one);
// masked loads and stores at the channel edge. Also the depthwise row kernel
// (8 channels per vector, scalar channel tail).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/x86/avx2/ymm_traits.h"
#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/conv_tiles_impl.h"
#include "kernels/x86/dw3_rows_impl.h"
#include "kernels/x86/grouped_impl.h"
#include "kernels/x86/pool_impl.h"
#include "kernels/x86/wino_impl.h"

namespace tessera::kernels::x86 {

namespace {

inline float act1(float v, Activation act, float lo, float hi) {
  return activate(v, act, lo, hi);
}

// SiLU or HardSwish in place over rows x min(nr, width) floats of a finished tile.
__attribute__((noinline)) void act_tile(Activation act, float* y, int64_t ldy, int64_t rows, int64_t nr,
                                        int64_t width) {
  const int64_t w = std::min(nr, width);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < w; j += 8) {
      float* p = y + i * ldy + j;
      const __m256i m = Ymm::tail_mask(int(std::min<int64_t>(w - j, 8)));
      const __m256 v = _mm256_maskload_ps(p, m);
      _mm256_maskstore_ps(p, m, act == Activation::silu ? Ymm::silu(v) : Ymm::hardswish(v));
    }
}

inline __m256 act256(__m256 v, Activation act, float lo, float hi) {
  if (act == Activation::relu) return _mm256_max_ps(v, _mm256_setzero_ps());
  if (act == Activation::clip) return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
  if (act == Activation::silu) return Ymm::silu(v);
  if (act == Activation::hardswish) return Ymm::hardswish(v);
  return v;
}

// MR pixel rows x 8*NV channels; the row table holds LD pointers per tap (LD > MR: a remainder tile of a
// wider kernel). Every loop over the tile is unrolled at compile time, so the accumulators stay in
// registers (indexed by a run-time row, GCC kept them in memory and stored them on every k step).
template <int MR, int NV, int LD = MR>
inline __attribute__((always_inline)) void conv_tile(const float* const* rows, int64_t ntaps, int64_t kc,
                                                     const float* w, int64_t ldw, float* y, int64_t ldy,
                                                     int64_t mr, int64_t nr, bool accumulate,
                                                     const ConvTileEpilogue* ep, ConvPrefetch pf) {
  // a tile narrower than 8*NV (the channel edge: 0..8 valid columns per vector) loads and stores masked
  const bool full = nr >= 8 * NV;
  __m256i cols[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) cols[v] = Ymm::tail_mask(int(std::clamp<int64_t>(nr - 8 * v, 0, 8)));
  auto load = [&](const float* p, int v) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, cols[v]);
  };
  prefetch_tile_rows<MR>(y, ldy, mr, nr, ep);
  // A single K block starts from the bias (one add per output less in the epilogue).
  const bool bias_init = ep && ep->bias && !accumulate;
  __m256 acc[MR][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m256 b0 = bias_init ? load(ep->bias + v * 8, v) : _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i][v] = b0;
  }
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) r[i] = rows[t * LD + i];
      // four K steps per trip, as in the direct GEMM kernel: in-process A/B, MobileNetV2's 14x14 576->96 and
      // 7x7 960->160 pointwise convs 0.86x and 0.90x the time, 56x56 144->24 0.93x
#pragma GCC unroll 4
    for (int64_t ci = 0; ci < kc; ++ci) {
      prefetch_step<NV>(pf.p, pf.step);
      __m256 b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = _mm256_loadu_ps(w + v * 8);  // the panel is zero past nr
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const __m256 a = _mm256_broadcast_ss(r[i] + ci);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(a, b[v], acc[i][v]);
      }
      w += ldw;
    }
  }
  // The epilogue in passes over the whole tile, each deciding once what it adds: short-K convs (MobileNet's
  // 16- to 32-deep pointwise ones) spend about as long here as in the K loop.
  if (accumulate)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_add_ps(acc[i][v], load(y + i * ldy + v * 8, v));
  if (ep) {
    if (ep->bias && !bias_init)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m256 b = load(ep->bias + v * 8, v);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) acc[i][v] = _mm256_add_ps(acc[i][v], b);
      }
    if (const float* res = ep->residual)
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          if (i < mr) acc[i][v] = _mm256_add_ps(acc[i][v], load(res + i * ep->ldr + v * 8, v));
    if (ep->act == Activation::relu) {
      const __m256 z = _mm256_setzero_ps();
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_max_ps(acc[i][v], z);
    } else if (ep->act == Activation::clip) {
      const __m256 lo = _mm256_set1_ps(ep->clip_min), hi = _mm256_set1_ps(ep->clip_max);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_min_ps(_mm256_max_ps(acc[i][v], lo), hi);
    }
  }
  if (full && mr == MR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) _mm256_storeu_ps(y + i * ldy + v * 8, acc[i][v]);
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      if (i >= mr) break;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) _mm256_maskstore_ps(y + i * ldy + v * 8, cols[v], acc[i][v]);
    }
  }
  // SiLU over the stored tile, from L1, out of line: applied to the accumulators (or inlined here), its ~20
  // operations a vector made GCC keep accumulators on the stack through the K loop
  if (ep && (ep->act == Activation::silu || ep->act == Activation::hardswish))
    act_tile(ep->act, y, ldy, std::min<int64_t>(mr, MR), nr, 8 * NV);
}

// The 16-wide kernels also take nr past 16 when the K block is the whole K (see ConvUkrInfo::panels): they
// walk that many columns of consecutive 16-wide panels, each ldw * ntaps * kc floats after the previous,
// reusing the tile's input rows from L1 (short-K pointwise convs: one call per panel had the call, the
// driver's setup and the prologue cost about as much as the 16- to 32-deep K loop).
template <int MR, int NV, int LD = MR>
void conv_ukr(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw, float* y,
              int64_t ldy, int64_t mr, int64_t nr, bool accumulate, const ConvTileEpilogue* ep,
              ConvPrefetch pf) {
  constexpr int64_t W = 8 * NV;
  if (NV == 1 || nr <= W) {
    conv_tile<MR, NV, LD>(rows, ntaps, kc, w, ldw, y, ldy, mr, nr, accumulate, ep, pf);
    return;
  }
  const int64_t wstep = ldw * ntaps * kc;
  ConvTileEpilogue e = ep ? *ep : ConvTileEpilogue{};
  for (int64_t j = 0; j < nr; j += W) {
    conv_tile<MR, NV, LD>(rows, ntaps, kc, w, ldw, y + j, ldy, mr, std::min(W, nr - j), accumulate,
                          ep ? &e : nullptr, j == 0 ? pf : ConvPrefetch{});  // pf: one panel's stream
    w += wstep;
    if (e.bias) e.bias += W;
    if (e.residual) e.residual += W;
  }
}

void tiles_avx2(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps,
                int64_t kc, const float* w, int64_t wstep, int64_t npanels, float* y, int64_t ldy,
                const ConvTileEpilogue& ep, ConvPrefetch pf) {
  conv_tiles::dispatch<Ymm, 6, 2>(rows, x, ldx, ntiles, ntaps, kc, w, wstep, npanels, y, ldy, ep, pf);
}

// rem[m]: the kernel for a remainder tile of exactly m < MR rows (its FMAs cover only those rows).
template <int NV, int LD, int... M>
constexpr std::array<ConvUkr, sizeof...(M) + 1> rem_table(std::integer_sequence<int, M...>) {
  return {nullptr, conv_ukr<M + 1, NV, LD>...};
}
constexpr auto kRem16 = rem_table<2, 6>(std::make_integer_sequence<int, 5>{});
constexpr auto kRem8 = rem_table<1, 12>(std::make_integer_sequence<int, 11>{});

}  // namespace

// 16 ymm: 6 x 16 (12 accumulators, 2 of B, 1 of A: 8 loads per 12 FMAs); up to 8 channels as 12 x 8.
// (A 4 x 24 tile needs 24 contiguous weight columns, which the 16-wide panels of AVX2 do not hold.)
ConvUkrInfo conv_ukr_avx2(int64_t width) {
  if (width <= 8) return {conv_ukr<12, 1>, 12, 8, kRem8.data()};
  return {conv_ukr<6, 2>, 6, 16, kRem16.data(), /*panels=*/true, tiles_avx2};
}

namespace {

// One output pixel's channels [cb, cb + 8 * NV) of a depthwise row.
template <int NV>
inline void dw_pixel_block(const DwRowArgs& a, int64_t ixb, int64_t cb, float* yo, const float* ro) {
  __m256 s[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) s[v] = a.bias ? _mm256_loadu_ps(a.bias + cb + 8 * v) : _mm256_setzero_ps();
  for_each_dw_tap(a, ixb, [&](int64_t xo, int64_t wo) {
    const float* xp = a.x + xo + cb;
    const float* wp = a.wp + wo + cb;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      s[v] = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8 * v), _mm256_loadu_ps(wp + 8 * v), s[v]);
  });
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    if (ro) s[v] = _mm256_add_ps(s[v], _mm256_loadu_ps(ro + cb + 8 * v));
    _mm256_storeu_ps(yo + cb + 8 * v, act256(s[v], a.act, a.clip_min, a.clip_max));
  }
}

}  // namespace

void dw_row_avx2(const DwRowArgs& a) {
  const int64_t c = a.c;
  for (int64_t ox = a.ox0; ox < a.ox0 + a.cnt; ++ox) {
    float* yo = a.y + (ox - a.ox0) * c;
    const float* ro = a.residual ? a.residual + (ox - a.ox0) * c : nullptr;
    const int64_t ixb = ox * a.sw + a.ix0;
    int64_t cb = 0;
    for (; cb + 32 <= c; cb += 32) dw_pixel_block<4>(a, ixb, cb, yo, ro);
    for (; cb + 8 <= c; cb += 8) dw_pixel_block<1>(a, ixb, cb, yo, ro);
    for (; cb < c; ++cb) {
      float s = a.bias ? a.bias[cb] : 0.0f;
      for_each_dw_tap(a, ixb, [&](int64_t xo, int64_t wo) { s += a.x[xo + cb] * a.wp[wo + cb]; });
      if (ro) s += ro[cb];
      yo[cb] = act1(s, a.act, a.clip_min, a.clip_max);
    }
  }
}

void dw3_rows_avx2(const Dw3RowsArgs& a) {
  dw3::run<Ymm>(a, false);
}

void max_pool_taps_avx2(const float* const* taps, int64_t ntaps, int64_t c, float* y) {
  pool::max_taps<Ymm>(taps, ntaps, c, y);
}
void grouped_row_avx2(const GroupedRowArgs& a, const float* zeros) {
  grouped::row<Ymm>(a, zeros);
}

void avg_pool_taps_avx2(const float* const* taps, int64_t ntaps, int64_t c, float scale, float* y) {
  pool::avg_taps<Ymm>(taps, ntaps, c, scale, y);
}

void wino23_in_avx2(const float* const* src, int64_t c, float* v, int64_t stride) {
  wino::in23<Ymm>(src, c, v, stride);
}
void wino23_out_avx2(const float* m, int64_t mstride, int64_t n, const WinoOut& o) {
  wino::out23<Ymm>(m, mstride, n, o);
}
void wino43_in_avx2(const float* const* src, int64_t c, float* v, int64_t stride) {
  wino::in43<Ymm>(src, c, v, stride);
}
void wino43_out_avx2(const float* m, int64_t mstride, int64_t n, const WinoOut& o) {
  wino::out43<Ymm>(m, mstride, n, o);
}
void wino_group_gemm_avx2(const WinoGroupGemm& a) {
  wino::group_gemm<Ymm, 6>(a);
}

}  // namespace tessera::kernels::x86
