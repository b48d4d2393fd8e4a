// NHWC convolution micro-kernel for AVX2+FMA: 6 pixels x 16 channels (12 ymm
// accumulators), A broadcast from the input pixel rows, B from the packed weight
// panel (the driver walks a 64-wide panel in 16-wide strips). Also the depthwise
// row kernel (8 channels per vector, scalar channel tail).
#include <immintrin.h>

#include <algorithm>

#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86 {

namespace {

inline float act1(float v, Activation act, float lo, float hi) {
  if (act == Activation::relu) return v > 0 ? v : 0;
  if (act == Activation::clip) return std::min(std::max(v, lo), hi);
  return v;
}

struct DwRowsEpilogue {
  Activation act;
  float clip_min, clip_max;
};

inline __m256 act256(__m256 v, Activation act, float lo, float hi) {
  if (act == Activation::relu) return _mm256_max_ps(v, _mm256_setzero_ps());
  if (act == Activation::clip) return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
  return v;
}

void conv_ukr_6x16(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw, float* y,
                   int64_t ldy, int64_t mr, int64_t nr, bool accumulate, const ConvTileEpilogue* ep) {
  constexpr int MR = 6;
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* r[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) r[i] = rows[t * MR + i];
    for (int64_t ci = 0; ci < kc; ++ci) {
      const __m256 b0 = _mm256_loadu_ps(w), b1 = _mm256_loadu_ps(w + 8);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 a = _mm256_broadcast_ss(r[i] + ci);
        acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
      }
      w += ldw;
    }
  }
  for (int i = 0; i < MR && i < mr; ++i) {
    float* yr = y + i * ldy;
    if (nr == 16) {
      __m256 s0 = acc[i][0], s1 = acc[i][1];
      if (accumulate)
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(yr)), s1 = _mm256_add_ps(s1, _mm256_loadu_ps(yr + 8));
      if (ep) {
        if (ep->bias)
          s0 = _mm256_add_ps(s0, _mm256_loadu_ps(ep->bias)),
          s1 = _mm256_add_ps(s1, _mm256_loadu_ps(ep->bias + 8));
        if (ep->residual) {
          const float* rr = ep->residual + i * ep->ldr;
          s0 = _mm256_add_ps(s0, _mm256_loadu_ps(rr)), s1 = _mm256_add_ps(s1, _mm256_loadu_ps(rr + 8));
        }
        s0 = act256(s0, ep->act, ep->clip_min, ep->clip_max);
        s1 = act256(s1, ep->act, ep->clip_min, ep->clip_max);
      }
      _mm256_storeu_ps(yr, s0);
      _mm256_storeu_ps(yr + 8, s1);
      continue;
    }
    alignas(32) float tmp[16];
    _mm256_store_ps(tmp, acc[i][0]);
    _mm256_store_ps(tmp + 8, acc[i][1]);
    for (int64_t j = 0; j < nr; ++j) {
      float s = tmp[j];
      if (accumulate) s += yr[j];
      if (ep) {
        if (ep->bias) s += ep->bias[j];
        if (ep->residual) s += ep->residual[i * ep->ldr + j];
        s = act1(s, ep->act, ep->clip_min, ep->clip_max);
      }
      yr[j] = s;
    }
  }
}

}  // namespace

ConvUkrInfo conv_ukr_avx2(int64_t) {
  return {conv_ukr_6x16, 6, 16};
}

void dw_row_avx2(const DwRowArgs& a) {
  const int64_t c = a.c;
  for (int64_t ox = a.ox0; ox < a.ox0 + a.cnt; ++ox) {
    float* yo = a.y + (ox - a.ox0) * c;
    const float* ro = a.residual ? a.residual + (ox - a.ox0) * c : nullptr;
    const int64_t ixb = ox * a.sw + a.ix0;
    int64_t cb = 0;
    for (; cb + 32 <= c; cb += 32) {
      __m256 s[4];
      for (int v = 0; v < 4; ++v) s[v] = a.bias ? _mm256_loadu_ps(a.bias + cb + 8 * v) : _mm256_setzero_ps();
      for (int64_t r = 0; r < a.kh; ++r) {
        const int64_t iy = a.iy0 + r * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t q = 0; q < a.kw; ++q) {
          const int64_t ix = ixb + q * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          const float* xp = a.x + (iy * a.w + ix) * c + cb;
          const float* wp = a.wp + (r * a.kw + q) * c + cb;
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v)
            s[v] = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8 * v), _mm256_loadu_ps(wp + 8 * v), s[v]);
        }
      }
      for (int v = 0; v < 4; ++v) {
        if (ro) s[v] = _mm256_add_ps(s[v], _mm256_loadu_ps(ro + cb + 8 * v));
        _mm256_storeu_ps(yo + cb + 8 * v, act256(s[v], a.act, a.clip_min, a.clip_max));
      }
    }
    for (; cb + 8 <= c; cb += 8) {
      __m256 s = a.bias ? _mm256_loadu_ps(a.bias + cb) : _mm256_setzero_ps();
      for (int64_t r = 0; r < a.kh; ++r) {
        const int64_t iy = a.iy0 + r * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t q = 0; q < a.kw; ++q) {
          const int64_t ix = ixb + q * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          s = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + (iy * a.w + ix) * c + cb),
                              _mm256_loadu_ps(a.wp + (r * a.kw + q) * c + cb), s);
        }
      }
      if (ro) s = _mm256_add_ps(s, _mm256_loadu_ps(ro + cb));
      _mm256_storeu_ps(yo + cb, act256(s, a.act, a.clip_min, a.clip_max));
    }
    for (; cb < c; ++cb) {
      float s = a.bias ? a.bias[cb] : 0.0f;
      for (int64_t r = 0; r < a.kh; ++r) {
        const int64_t iy = a.iy0 + r * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t q = 0; q < a.kw; ++q) {
          const int64_t ix = ixb + q * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          s += a.x[(iy * a.w + ix) * c + cb] * a.wp[(r * a.kw + q) * c + cb];
        }
      }
      if (ro) s += ro[cb];
      yo[cb] = act1(s, a.act, a.clip_min, a.clip_max);
    }
  }
}

namespace {

// Depthwise 3x3 for AVX2, as dw3_rows_avx512f: 8-channel blocks, the block's 9 weight vectors in registers,
// 4-pixel tiles (16 ymm registers: 9 weights, 4 sums, the input being used).
template <bool FULL>
__attribute__((always_inline)) inline __m256 ld8(const float* q, __m256i m) {
  return FULL ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, m);
}

template <bool FULL>
__attribute__((always_inline)) inline void st8(float* q, __m256i m, __m256 v, const float* r,
                                               const DwRowsEpilogue& ep) {
  if (r) v = _mm256_add_ps(v, ld8<FULL>(r, m));
  v = act256(v, ep.act, ep.clip_min, ep.clip_max);
  if (FULL)
    _mm256_storeu_ps(q, v);
  else
    _mm256_maskstore_ps(q, m, v);
}

template <int S, int PX, bool FULL>
__attribute__((always_inline)) inline void dw3_tile8(const float* const* rows, int64_t ix, int64_t c,
                                                     const __m256* wv, __m256 b, __m256i m, float* yo,
                                                     const float* ro, const DwRowsEpilogue& ep) {
  __m256 acc[PX];
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p) acc[p] = b;
#pragma GCC unroll 3
  for (int r = 0; r < 3; ++r) {
    if (!rows[r]) continue;
    const float* q = rows[r] + ix * c;
#pragma GCC unroll 16
    for (int j = 0; j < (PX - 1) * S + 3; ++j) {
      const __m256 v = ld8<FULL>(q + j * c, m);
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        const int d = j - s;
        if (d >= 0 && d % S == 0 && d / S < PX) acc[d / S] = _mm256_fmadd_ps(v, wv[r * 3 + s], acc[d / S]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < PX; ++p) st8<FULL>(yo + p * c, m, acc[p], ro ? ro + p * c : nullptr, ep);
}

template <bool FULL>
__attribute__((always_inline)) inline void dw3_edge8(const float* const* rows, int64_t ix, int64_t w,
                                                     int64_t c, const __m256* wv, __m256 b, __m256i m,
                                                     float* yo, const float* ro, const DwRowsEpilogue& ep) {
  __m256 acc = b;
#pragma GCC unroll 3
  for (int r = 0; r < 3; ++r) {
    if (!rows[r]) continue;
#pragma GCC unroll 3
    for (int s = 0; s < 3; ++s)
      if (ix + s >= 0 && ix + s < w)
        acc = _mm256_fmadd_ps(ld8<FULL>(rows[r] + (ix + s) * c, m), wv[r * 3 + s], acc);
  }
  st8<FULL>(yo, m, acc, ro, ep);
}

template <int S, bool FULL>
void dw3_rows_block8(const Dw3RowsArgs& a, int64_t cb, __m256i m, int64_t xa, int64_t xb,
                     const DwRowsEpilogue& ep) {
  const int64_t c = a.c;
  __m256 wv[9];
#pragma GCC unroll 9
  for (int t = 0; t < 9; ++t) wv[t] = ld8<FULL>(a.wp + t * c + cb, m);
  const __m256 b = a.bias ? ld8<FULL>(a.bias + cb, m) : _mm256_setzero_ps();
  for (int64_t oy = a.oy0; oy < a.oy1; ++oy) {
    const float* rows[3];
    for (int r = 0; r < 3; ++r) {
      const int64_t iy = oy * a.sh - a.pad_t + r;
      rows[r] = iy >= 0 && iy < a.h ? a.x + iy * a.w * c + cb : nullptr;
    }
    float* yr = a.y + oy * a.ow * c + cb;
    const float* rr = a.residual ? a.residual + oy * a.ow * c + cb : nullptr;
    auto at = [&](int64_t ox) { return rr ? rr + ox * c : nullptr; };
    int64_t ox = 0;
    for (; ox < xa; ++ox) dw3_edge8<FULL>(rows, ox * S - a.pad_l, a.w, c, wv, b, m, yr + ox * c, at(ox), ep);
    for (; ox + 4 <= xb; ox += 4)
      dw3_tile8<S, 4, FULL>(rows, ox * S - a.pad_l, c, wv, b, m, yr + ox * c, at(ox), ep);
    if (ox + 2 <= xb) {
      dw3_tile8<S, 2, FULL>(rows, ox * S - a.pad_l, c, wv, b, m, yr + ox * c, at(ox), ep);
      ox += 2;
    }
    for (; ox < a.ow; ++ox)
      dw3_edge8<FULL>(rows, ox * S - a.pad_l, a.w, c, wv, b, m, yr + ox * c, at(ox), ep);
  }
}

template <int S>
void dw3_rows8(const Dw3RowsArgs& a) {
  const DwRowsEpilogue ep{a.act, a.clip_min, a.clip_max};
  const int64_t xa = std::min(a.ow, (a.pad_l + S - 1) / S);
  const int64_t last = a.w - 3 + a.pad_l;  // the largest ox * S whose taps end inside
  const int64_t xb = last < 0 ? xa : std::clamp<int64_t>(last / S + 1, xa, a.ow);
  const int64_t cfull = a.c / 8 * 8;
  for (int64_t cb = 0; cb < cfull; cb += 8)
    dw3_rows_block8<S, true>(a, cb, _mm256_setzero_si256(), xa, xb, ep);
  if (cfull < a.c) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(a.c - cfull)), lane);
    dw3_rows_block8<S, false>(a, cfull, m, xa, xb, ep);
  }
}

}  // namespace

void dw3_rows_avx2(const Dw3RowsArgs& a) {
  if (a.sw == 1)
    dw3_rows8<1>(a);
  else
    dw3_rows8<2>(a);
}

}  // namespace tessera::kernels::x86
