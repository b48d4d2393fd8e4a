// NHWC convolution micro-kernel for AVX2+FMA: 6 pixels x 16 channels (12 ymm
// accumulators), A broadcast from the input pixel rows, B from the packed weight
// panel (the driver walks a 64-wide panel in 16-wide strips). Also the depthwise
// row kernel (8 channels per vector, scalar channel tail).
#include <immintrin.h>

#include <algorithm>

#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/dw3_rows_impl.h"

namespace tessera::kernels::x86 {

namespace {

inline float act1(float v, Activation act, float lo, float hi) {
  if (act == Activation::relu) return v > 0 ? v : 0;
  if (act == Activation::clip) return std::min(std::max(v, lo), hi);
  return v;
}

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

namespace {

struct Ymm {  // vector traits for dw3_rows_impl.h
  using vec = __m256;
  using mask = __m256i;
  static constexpr int kWidth = 8, kTile = 4;  // 9 weights + 4 sums + the input: 14 of 16 ymm
  static vec load(const float* p) { return _mm256_loadu_ps(p); }
  static vec load(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, vec v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, mask m, vec v) { _mm256_maskstore_ps(p, m, v); }
  static vec fma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
  static vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
  static vec max(vec a, vec b) { return _mm256_max_ps(a, b); }
  static vec min(vec a, vec b) { return _mm256_min_ps(a, b); }
  static vec set1(float f) { return _mm256_set1_ps(f); }
  static vec zero() { return _mm256_setzero_ps(); }
  static mask tail_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
};

}  // namespace

void dw3_rows_avx2(const Dw3RowsArgs& a) {
  dw3::run<Ymm>(a);
}

}  // namespace tessera::kernels::x86
