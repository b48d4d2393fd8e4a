// NHWC convolution micro-kernels for AVX-512F: an MR-pixel x 16*NV-channel tile in
// zmm accumulators (6x64, 8x48, 12x32, 12x16), A broadcast from the input pixel rows
// (no packing), B from the packed weight panel; masked stores at the channel edge.
// Also the depthwise row kernel (64 channels at a time, 4 independent chains).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "core/cpu_features.h"
#include "kernels/x86/avx512f/zmm_traits.h"
#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/conv_tiles_impl.h"
#include "kernels/x86/dw3_rows_impl.h"
#include "kernels/x86/grouped_impl.h"
#include "kernels/x86/pool_impl.h"
#include "kernels/x86/wino_impl.h"

namespace tessera::kernels::x86 {

namespace {

inline __m512 act512(__m512 v, const ConvTileEpilogue& ep) {
  if (ep.act == Activation::relu) return _mm512_max_ps(v, _mm512_setzero_ps());
  if (ep.act == Activation::clip)
    return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(ep.clip_min)), _mm512_set1_ps(ep.clip_max));
  if (ep.act == Activation::silu) return Zmm::silu(v);
  if (ep.act == Activation::hardswish) return Zmm::hardswish(v);
  return v;
}

// MR pixel rows; the row table holds LD pointers per tap (LD > MR: a remainder tile of a wider kernel).
// PFL: lines of pf's stream prefetched per K step (0: none), fixed per instantiation so that the K loop
// tests nothing for it (prefetch_step's null and line-count tests per step: ResNet-18 and -50 1-2% slower at
// one thread, in-process A/B on the Xeon).
template <int MR, int NV, int LD, int PFL>
void conv_ukr_impl(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw, float* y,
                   int64_t ldy, int64_t mr, int64_t nr, bool accumulate, const ConvTileEpilogue* ep,
                   ConvPrefetch pf) {
  const int64_t tail = nr - (NV - 1) * 16;
  const __mmask16 last = tail >= 16 ? __mmask16(0xffff) : __mmask16((1u << tail) - 1);
  prefetch_tile_rows<MR>(y, ldy, mr, nr, ep);
  // A single K block starts from the bias (one add per output less in the epilogue: short-K
  // pointwise convs spend a fair share of their time there).
  const bool bias_init = ep && ep->bias && !accumulate;
  __m512 acc[MR][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512 b0 = bias_init
                          ? _mm512_maskz_loadu_ps(v == NV - 1 ? last : __mmask16(0xffff), ep->bias + v * 16)
                          : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i][v] = b0;
  }
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) r[i] = rows[t * LD + i];
    for (int64_t ci = 0; ci < kc; ++ci) {
      if constexpr (PFL > 0) {
#pragma GCC unroll 4
        for (int j = 0; j < PFL; ++j) _mm_prefetch(pf.p + 64 * j, _MM_HINT_T1);
        pf.p += pf.step;
      }
      __m512 b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_ps(w + v * 16);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const __m512 a = _mm512_set1_ps(r[i][ci]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(a, b[v], acc[i][v]);
      }
      w += ldw;
    }
  }
  if (tail >= 16 && mr == MR) {  // full tile: plain loads and stores
    const bool add_bias = ep && ep->bias && !bias_init;
    __m512 bias[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      bias[v] = add_bias ? _mm512_loadu_ps(ep->bias + v * 16) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* yr = y + i * ldy;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        __m512 s = acc[i][v];
        if (accumulate) s = _mm512_add_ps(s, _mm512_loadu_ps(yr + v * 16));
        if (ep) {
          if (add_bias) s = _mm512_add_ps(s, bias[v]);
          if (ep->residual) s = _mm512_add_ps(s, _mm512_loadu_ps(ep->residual + i * ep->ldr + v * 16));
          s = act512(s, *ep);
        }
        _mm512_storeu_ps(yr + v * 16, s);
      }
    }
    return;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= mr) break;
    float* yr = y + i * ldy;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? last : __mmask16(0xffff);
      __m512 s = acc[i][v];
      if (accumulate) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, yr + v * 16));
      if (ep) {
        if (ep->bias && !bias_init) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, ep->bias + v * 16));
        if (ep->residual) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, ep->residual + i * ep->ldr + v * 16));
        s = act512(s, *ep);
      }
      _mm512_mask_storeu_ps(yr + v * 16, m, s);
    }
  }
}

template <int MR, int NV, int LD = MR>
void conv_ukr(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw, float* y,
              int64_t ldy, int64_t mr, int64_t nr, bool accumulate, const ConvTileEpilogue* ep,
              ConvPrefetch pf) {
  using Fn = void (*)(const float* const*, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t,
                      int64_t, bool, const ConvTileEpilogue*, ConvPrefetch);
  static constexpr Fn kModes[5] = {conv_ukr_impl<MR, NV, LD, 0>, conv_ukr_impl<MR, NV, LD, 1>,
                                   conv_ukr_impl<MR, NV, LD, std::min(2, NV)>,
                                   conv_ukr_impl<MR, NV, LD, std::min(3, NV)>, conv_ukr_impl<MR, NV, LD, NV>};
  kModes[prefetch_lines<NV>(pf)](rows, ntaps, kc, w, ldw, y, ldy, mr, nr, accumulate, ep, pf);
}

// SiLU of 8 lanes on the zmm code (the upper lanes are computed and dropped).
inline __m256 ymm_silu(__m256 v) {
  return _mm512_castps512_ps256(Zmm::silu(_mm512_castps256_ps512(v)));
}

inline __m256 act256(__m256 v, const ConvTileEpilogue& ep) {
  if (ep.act == Activation::relu) return _mm256_max_ps(v, _mm256_setzero_ps());
  if (ep.act == Activation::clip)
    return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(ep.clip_min)), _mm256_set1_ps(ep.clip_max));
  if (ep.act == Activation::silu) return ymm_silu(v);
  if (ep.act == Activation::hardswish)
    return _mm512_castps512_ps256(Zmm::hardswish(_mm512_castps256_ps512(v)));
  return v;
}

// 17..24 channels (MobileNet's 24): a zmm and a ymm accumulator per pixel. Zen 4 issues two 256-bit
// FMAs a cycle but one 512-bit, so 24 channels take 1.5 FMA slots per pixel and step, not the 2 of a
// masked 32-wide tile.
template <int MR, int LD = MR>
void conv_ukr_zy(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw, float* y,
                 int64_t ldy, int64_t mr, int64_t nr, bool accumulate, const ConvTileEpilogue* ep,
                 ConvPrefetch pf) {
  const __mmask8 ym = __mmask8((1u << (nr - 16)) - 1);  // 1..8 columns past the first 16
  prefetch_tile_rows<MR>(y, ldy, mr, nr, ep);
  const bool bias_init = ep && ep->bias && !accumulate;
  const __m512 bz = bias_init ? _mm512_loadu_ps(ep->bias) : _mm512_setzero_ps();
  const __m256 by = bias_init ? _mm256_maskz_loadu_ps(ym, ep->bias + 16) : _mm256_setzero_ps();
  __m512 az[MR];
  __m256 ay[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) az[i] = bz, ay[i] = by;
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) r[i] = rows[t * LD + i];
    for (int64_t ci = 0; ci < kc; ++ci) {
      prefetch_step<2>(pf.p, pf.step);
      const __m512 b0 = _mm512_loadu_ps(w);
      const __m256 b1 = _mm256_loadu_ps(w + 16);  // the panel is 32 wide (zero past nr)
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const __m512 a = _mm512_set1_ps(r[i][ci]);
        az[i] = _mm512_fmadd_ps(a, b0, az[i]);
        ay[i] = _mm256_fmadd_ps(_mm512_castps512_ps256(a), b1, ay[i]);
      }
      w += ldw;
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= mr) break;
    float* yr = y + i * ldy;
    __m512 sz = az[i];
    __m256 sy = ay[i];
    if (accumulate) {
      sz = _mm512_add_ps(sz, _mm512_loadu_ps(yr));
      sy = _mm256_add_ps(sy, _mm256_maskz_loadu_ps(ym, yr + 16));
    }
    if (ep) {
      if (ep->bias && !bias_init) {
        sz = _mm512_add_ps(sz, _mm512_loadu_ps(ep->bias));
        sy = _mm256_add_ps(sy, _mm256_maskz_loadu_ps(ym, ep->bias + 16));
      }
      if (ep->residual) {
        const float* rr = ep->residual + i * ep->ldr;
        sz = _mm512_add_ps(sz, _mm512_loadu_ps(rr));
        sy = _mm256_add_ps(sy, _mm256_maskz_loadu_ps(ym, rr + 16));
      }
      sz = act512(sz, *ep);
      sy = act256(sy, *ep);
    }
    _mm512_storeu_ps(yr, sz);
    _mm256_mask_storeu_ps(yr + 16, ym, sy);
  }
}

// Whole 12 x 24 tiles (ConvTiles), conv_tiles::run's loops with conv_ukr_zy's zmm + ymm accumulators: the
// panel rows are 32 floats apart (a 24-wide panel is packed 32 wide), npanels is 1.
template <Activation ACT, bool BIAS, bool RES, bool TABLE>
void tiles_zy(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps,
              int64_t kc, const float* w, int64_t, int64_t, float* y, int64_t ldy, const ConvTileEpilogue& ep,
              ConvPrefetch) {
  constexpr int MR = 12;
  const float* res = ep.residual;
  for (int64_t t = 0; t < ntiles; ++t, y += MR * ldy, res += RES ? MR * ep.ldr : 0) {
    __m512 az[MR];
    __m256 ay[MR];
    const __m512 bz = BIAS ? _mm512_loadu_ps(ep.bias) : _mm512_setzero_ps();
    const __m256 by = BIAS ? _mm256_loadu_ps(ep.bias + 16) : _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) az[i] = bz, ay[i] = by;
    const float* wk = w;
    for (int64_t tap = 0; tap < (TABLE ? ntaps : 1); ++tap) {
      const float* r[MR];
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) r[i] = TABLE ? rows[(t * ntaps + tap) * MR + i] : x + (t * MR + i) * ldx;
#pragma GCC unroll 4
      for (int64_t k = 0; k < kc; ++k, wk += 32) {
        const __m512 b0 = _mm512_loadu_ps(wk);
        const __m256 b1 = _mm256_loadu_ps(wk + 16);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          const __m512 a = _mm512_set1_ps(r[i][k]);
          az[i] = _mm512_fmadd_ps(a, b0, az[i]);
          ay[i] = _mm256_fmadd_ps(_mm512_castps512_ps256(a), b1, ay[i]);
        }
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __m512 sz = az[i];
      __m256 sy = ay[i];
      if constexpr (RES) {
        sz = _mm512_add_ps(sz, _mm512_loadu_ps(res + i * ep.ldr));
        sy = _mm256_add_ps(sy, _mm256_loadu_ps(res + i * ep.ldr + 16));
      }
      if constexpr (ACT == Activation::relu) {
        sz = _mm512_max_ps(sz, _mm512_setzero_ps());
        sy = _mm256_max_ps(sy, _mm256_setzero_ps());
      }
      if constexpr (ACT == Activation::clip) {
        sz = _mm512_min_ps(_mm512_max_ps(sz, _mm512_set1_ps(ep.clip_min)), _mm512_set1_ps(ep.clip_max));
        sy = _mm256_min_ps(_mm256_max_ps(sy, _mm256_set1_ps(ep.clip_min)), _mm256_set1_ps(ep.clip_max));
      }
      if constexpr (ACT == Activation::silu) {
        sz = Zmm::silu(sz);
        sy = ymm_silu(sy);
      }
      if constexpr (ACT == Activation::hardswish) {
        sz = Zmm::hardswish(sz);
        sy = _mm512_castps512_ps256(Zmm::hardswish(_mm512_castps256_ps512(sy)));
      }
      _mm512_storeu_ps(y + i * ldy, sz);
      _mm256_storeu_ps(y + i * ldy + 16, sy);
    }
  }
}

// Takes no prefetch stream: a Winograd conv of 17-24 output channels whose weights pass half of L2 streams
// them unprefetched.
struct ZyTiles {
  template <Activation ACT, bool BIAS, bool RES, bool TABLE, bool>
  static constexpr ConvTiles fn = tiles_zy<ACT, BIAS, RES, TABLE>;
};

void tiles_zy_avx512f(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps,
                      int64_t kc, const float* w, int64_t wstep, int64_t npanels, float* y, int64_t ldy,
                      const ConvTileEpilogue& ep, ConvPrefetch pf) {
  conv_tiles::dispatch_by<ZyTiles>(rows, x, ldx, ntiles, ntaps, kc, w, wstep, npanels, y, ldy, ep, pf);
}

// rem[m]: the kernel for a remainder tile of exactly m < MR rows, so that its FMAs cover only those rows
// (49 pixels of a 7 x 7 map in 6-row tiles: the last tile's 1 row cost as much as 6).
template <int NV, int LD, int... M>
constexpr std::array<ConvUkr, sizeof...(M) + 1> rem_table(std::integer_sequence<int, M...>) {
  return {nullptr, conv_ukr<M + 1, NV, LD>...};
}
template <int LD, int... M>
constexpr std::array<ConvUkr, sizeof...(M) + 1> rem_table_zy(std::integer_sequence<int, M...>) {
  return {nullptr, conv_ukr_zy<M + 1, LD>...};
}
constexpr auto kRem64 = rem_table<4, 6>(std::make_integer_sequence<int, 5>{});
constexpr auto kRem48 = rem_table<3, 8>(std::make_integer_sequence<int, 7>{});
constexpr auto kRem32 = rem_table<2, 12>(std::make_integer_sequence<int, 11>{});
constexpr auto kRem24 = rem_table_zy<12>(std::make_integer_sequence<int, 11>{});
constexpr auto kRem16 = rem_table<1, 12>(std::make_integer_sequence<int, 11>{});

}  // namespace

namespace {
// Whole tiles (conv_tiles_impl.h; the same template as AVX2's 6 x 16, which the tests run everywhere): 6 x
// 64, and 12 x 32 and 12 x 16 for narrow convs — MobileNetV2's 32 -> 16 projection at 112 x 112 1.2x faster
// than the general 12 x 16 kernel (which reloads a row pointer from the stack every K step), 192 -> 32 at 28
// x 28 1.07-1.2x.
template <int MR, int NV>
void tiles_avx512f(const float* const* rows, const float* x, int64_t ldx, int64_t ntiles, int64_t ntaps,
                   int64_t kc, const float* w, int64_t wstep, int64_t npanels, float* y, int64_t ldy,
                   const ConvTileEpilogue& ep, ConvPrefetch pf) {
  conv_tiles::dispatch<Zmm, MR, NV>(rows, x, ldx, ntiles, ntaps, kc, w, wstep, npanels, y, ldy, ep, pf);
}
}  // namespace

ConvUkrInfo conv_ukr_avx512f(int64_t width) {
  if (width > 48) return {conv_ukr<6, 4>, 6, 64, kRem64.data(), /*panels=*/false, tiles_avx512f<6, 4>};
  if (width > 32) return {conv_ukr<8, 3>, 8, 48, kRem48.data()};
  if (width > 24) return {conv_ukr<12, 2>, 12, 32, kRem32.data(), false, tiles_avx512f<12, 2>};
  if (width > 16) return {conv_ukr_zy<12>, 12, 24, kRem24.data(), false, tiles_zy_avx512f, /*tiles_ldw=*/32};
  return {conv_ukr<12, 1>, 12, 16, kRem16.data(), false, tiles_avx512f<12, 1>};
}

// PX output pixels x 16 channels per step: PX independent FMA chains share each
// weight vector; a tap outside the image is skipped per pixel.
template <int PX, int NV, bool FULL>
__attribute__((always_inline)) inline void dw_block(const DwRowArgs& a, int64_t ox, int64_t cb, __mmask16 m,
                                                    const ConvTileEpilogue& ep) {
  const int64_t c = a.c, kh = a.kh, kw = a.kw, h = a.h, w = a.w, sw = a.sw, dh = a.dh, dw = a.dw;
  const int64_t step = sw * c, ix_first = ox * sw + a.ix0;
  const float* wp = a.wp + cb;
  auto ld = [&](const float* q) { return FULL ? _mm512_loadu_ps(q) : _mm512_maskz_loadu_ps(m, q); };
  __m512 acc[PX][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512 b = a.bias ? ld(a.bias + cb + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int p = 0; p < PX; ++p) acc[p][v] = b;
  }
  for (int64_t r = 0; r < kh; ++r) {
    const int64_t iy = a.iy0 + r * dh;
    if (iy < 0 || iy >= h) continue;
    const float* xrow = a.x + iy * w * c + cb;
    for (int64_t s = 0; s < kw; ++s) {
      __m512 wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = ld(wp + (r * kw + s) * c + 16 * v);
      const int64_t ix = ix_first + s * dw;
      if (ix >= 0 && ix + (PX - 1) * sw < w) {
        const float* q = xrow + ix * c;
#pragma GCC unroll 8
        for (int p = 0; p < PX; ++p) {
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(ld(q + 16 * v), wv[v], acc[p][v]);
          q += step;
        }
      } else {
#pragma GCC unroll 8
        for (int p = 0; p < PX; ++p) {
          const int64_t ixp = ix + p * sw;
          if (ixp >= 0 && ixp < w)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
              acc[p][v] = _mm512_fmadd_ps(ld(xrow + ixp * c + 16 * v), wv[v], acc[p][v]);
        }
      }
    }
  }
  float* yo = a.y + (ox - a.ox0) * c + cb;
  const float* ro = a.residual ? a.residual + (ox - a.ox0) * c + cb : nullptr;
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m512 val = acc[p][v];
      if (ro) val = _mm512_add_ps(val, ld(ro + p * c + 16 * v));
      if (FULL)
        _mm512_storeu_ps(yo + p * c + 16 * v, act512(val, ep));
      else
        _mm512_mask_storeu_ps(yo + p * c + 16 * v, m, act512(val, ep));
    }
}

template <int PX, int NV>
__attribute__((always_inline)) inline void dw3_block(const DwRowArgs& a, int64_t ox, int64_t cb,
                                                     const ConvTileEpilogue& ep) {
  const int64_t c = a.c, step = a.sw * c, dwc = a.dw * c;
  __m512 acc[PX][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512 b = a.bias ? _mm512_loadu_ps(a.bias + cb + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int p = 0; p < PX; ++p) acc[p][v] = b;
  }
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t iy = a.iy0 + r * a.dh;
    if (iy < 0 || iy >= a.h) continue;
    const float* xr = a.x + (iy * a.w + ox * a.sw + a.ix0) * c + cb;
    const float* wr = a.wp + r * 3 * c + cb;
#pragma GCC unroll 3
    for (int s = 0; s < 3; ++s) {
      __m512 wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wr + s * c + 16 * v);
      const float* q = xr + s * dwc;
#pragma GCC unroll 8
      for (int p = 0; p < PX; ++p) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          acc[p][v] = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * v), wv[v], acc[p][v]);
        q += step;
      }
    }
  }
  float* yo = a.y + (ox - a.ox0) * c + cb;
  const float* ro = a.residual ? a.residual + (ox - a.ox0) * c + cb : nullptr;
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m512 val = acc[p][v];
      if (ro) val = _mm512_add_ps(val, _mm512_loadu_ps(ro + p * c + 16 * v));
      _mm512_storeu_ps(yo + p * c + 16 * v, act512(val, ep));
    }
}

// Pixels of one channel range [cb, cfull) in blocks of 64 (4 vectors) then 16 channels,
// and the channel tail (masked).
template <int PX>
inline void dw_pixels(const DwRowArgs& a, int64_t ox, int64_t cfull, __mmask16 tail,
                      const ConvTileEpilogue& ep) {
  int64_t cb = 0;
  for (; cb + 64 <= cfull; cb += 64) dw_block<PX, 4, true>(a, ox, cb, 0xffff, ep);
  for (; cb < cfull; cb += 16) dw_block<PX, 1, true>(a, ox, cb, 0xffff, ep);
  if (tail) dw_block<PX, 1, false>(a, ox, cfull, tail, ep);
}

void dw_row_avx512f(const DwRowArgs& a) {
  const int64_t c = a.c, end = a.ox0 + a.cnt;
  const ConvTileEpilogue ep{a.bias, nullptr, 0, a.act, a.clip_min, a.clip_max};
  int64_t ox = a.ox0;
  const int64_t cfull = c / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (c - cfull)) - 1);
  const bool k3 = a.kh == 3 && a.kw == 3;
  for (; ox + 8 <= end; ox += 8) {
    const int64_t ix = ox * a.sw + a.ix0;
    if (k3 && ix >= 0 && ix + 7 * a.sw + 2 * a.dw < a.w) {
      int64_t cb = 0;
      for (; cb + 64 <= cfull; cb += 64) {
        dw3_block<4, 4>(a, ox, cb, ep);
        dw3_block<4, 4>(a, ox + 4, cb, ep);
      }
      for (; cb < cfull; cb += 16) dw3_block<8, 1>(a, ox, cb, ep);
      if (tail) dw_block<8, 1, false>(a, ox, cfull, tail, ep);
    } else {
      dw_pixels<4>(a, ox, cfull, tail, ep);
      dw_pixels<4>(a, ox + 4, cfull, tail, ep);
    }
  }
  for (; ox + 2 <= end; ox += 2) dw_pixels<2>(a, ox, cfull, tail, ep);
  for (; ox < end; ++ox) dw_pixels<1>(a, ox, cfull, tail, ep);
}

void dw3_rows_avx512f(const Dw3RowsArgs& a) {
  static const bool blocks_outer = cpu_features().amd;  // see dw3::run
  dw3::run<Zmm>(a, blocks_outer);
}

void max_pool_taps_avx512f(const float* const* taps, int64_t ntaps, int64_t c, float* y) {
  pool::max_taps<Zmm>(taps, ntaps, c, y);
}
void grouped_row_avx512f(const GroupedRowArgs& a, const float* zeros) {
  grouped::row<Zmm>(a, zeros);
}
void grouped_map_avx512f(const GroupMapArgs& a) {
  grouped::group_map<Zmm>(a);
}

void avg_pool_taps_avx512f(const float* const* taps, int64_t ntaps, int64_t c, float scale, float* y) {
  pool::avg_taps<Zmm>(taps, ntaps, c, scale, y);
}

void wino23_in_avx512f(const float* const* src, int64_t c, float* v, int64_t stride) {
  wino::in23<Zmm>(src, c, v, stride);
}
void wino23_out_avx512f(const float* m, int64_t mstride, int64_t n, const WinoOut& o) {
  wino::out23<Zmm>(m, mstride, n, o);
}
void wino43_in_avx512f(const float* const* src, int64_t c, float* v, int64_t stride) {
  wino::in43<Zmm>(src, c, v, stride);
}
void wino43_out_avx512f(const float* m, int64_t mstride, int64_t n, const WinoOut& o) {
  wino::out43<Zmm>(m, mstride, n, o);
}
void wino_group_gemm_avx512f(const WinoGroupGemm& a) {
  wino::group_gemm<Zmm, 12>(a);
}

}  // namespace tessera::kernels::x86
