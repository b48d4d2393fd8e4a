// NHWC convolution micro-kernels for AVX-512F: an MR-pixel x 16*NV-channel tile in
// zmm accumulators (6x64, 8x48, 12x32, 12x16), A broadcast from the input pixel rows
// (no packing), B from the packed weight panel; masked stores at the channel edge.
// Also the depthwise row kernel (64 channels at a time, 4 independent chains).
#include <immintrin.h>

#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86 {

namespace {

inline __m512 act512(__m512 v, const ConvTileEpilogue& ep) {
  if (ep.act == Activation::relu) return _mm512_max_ps(v, _mm512_setzero_ps());
  if (ep.act == Activation::clip)
    return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(ep.clip_min)), _mm512_set1_ps(ep.clip_max));
  return v;
}

template <int MR, int NV>
void conv_ukr(const float* const* rows, int64_t ntaps, int64_t kc, const float* w, int64_t ldw, float* y,
              int64_t ldy, int64_t mr, int64_t nr, bool accumulate, const ConvTileEpilogue* ep) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t t = 0; t < ntaps; ++t) {
    const float* r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) r[i] = rows[t * MR + i];
    for (int64_t ci = 0; ci < kc; ++ci) {
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
  const int64_t tail = nr - (NV - 1) * 16;
  const __mmask16 last = tail >= 16 ? __mmask16(0xffff) : __mmask16((1u << tail) - 1);
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
        if (ep->bias) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, ep->bias + v * 16));
        if (ep->residual) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, ep->residual + i * ep->ldr + v * 16));
        s = act512(s, *ep);
      }
      _mm512_mask_storeu_ps(yr + v * 16, m, s);
    }
  }
}

}  // namespace

ConvUkrInfo conv_ukr_avx512f(int64_t width) {
  if (width > 48) return {conv_ukr<6, 4>, 6, 64};
  if (width > 32) return {conv_ukr<8, 3>, 8, 48};
  if (width > 16) return {conv_ukr<12, 2>, 12, 32};
  return {conv_ukr<12, 1>, 12, 16};
}

void dw_row_avx512f(const DwRowArgs& a) {
  const int64_t c = a.c;
  ConvTileEpilogue ep{a.bias, nullptr, 0, a.act, a.clip_min, a.clip_max};
  for (int64_t ox = a.ox0; ox < a.ox0 + a.cnt; ++ox) {
    float* yo = a.y + (ox - a.ox0) * c;
    const float* ro = a.residual ? a.residual + (ox - a.ox0) * c : nullptr;
    const int64_t ixb = ox * a.sw + a.ix0;
    int64_t cb = 0;
    for (; cb + 64 <= c; cb += 64) {
      __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      if (a.bias) {
        s0 = _mm512_loadu_ps(a.bias + cb), s1 = _mm512_loadu_ps(a.bias + cb + 16);
        s2 = _mm512_loadu_ps(a.bias + cb + 32), s3 = _mm512_loadu_ps(a.bias + cb + 48);
      }
      for (int64_t r = 0; r < a.kh; ++r) {
        const int64_t iy = a.iy0 + r * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t s = 0; s < a.kw; ++s) {
          const int64_t ix = ixb + s * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          const float* xp = a.x + (iy * a.w + ix) * c + cb;
          const float* wp = a.wp + (r * a.kw + s) * c + cb;
          s0 = _mm512_fmadd_ps(_mm512_loadu_ps(xp), _mm512_loadu_ps(wp), s0);
          s1 = _mm512_fmadd_ps(_mm512_loadu_ps(xp + 16), _mm512_loadu_ps(wp + 16), s1);
          s2 = _mm512_fmadd_ps(_mm512_loadu_ps(xp + 32), _mm512_loadu_ps(wp + 32), s2);
          s3 = _mm512_fmadd_ps(_mm512_loadu_ps(xp + 48), _mm512_loadu_ps(wp + 48), s3);
        }
      }
      if (ro) {
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(ro + cb)),
        s1 = _mm512_add_ps(s1, _mm512_loadu_ps(ro + cb + 16));
        s2 = _mm512_add_ps(s2, _mm512_loadu_ps(ro + cb + 32)),
        s3 = _mm512_add_ps(s3, _mm512_loadu_ps(ro + cb + 48));
      }
      _mm512_storeu_ps(yo + cb, act512(s0, ep));
      _mm512_storeu_ps(yo + cb + 16, act512(s1, ep));
      _mm512_storeu_ps(yo + cb + 32, act512(s2, ep));
      _mm512_storeu_ps(yo + cb + 48, act512(s3, ep));
    }
    for (; cb < c; cb += 16) {
      const int64_t n = c - cb;
      const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
      __m512 s0 = a.bias ? _mm512_maskz_loadu_ps(m, a.bias + cb) : _mm512_setzero_ps();
      for (int64_t r = 0; r < a.kh; ++r) {
        const int64_t iy = a.iy0 + r * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t s = 0; s < a.kw; ++s) {
          const int64_t ix = ixb + s * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          const float* xp = a.x + (iy * a.w + ix) * c + cb;
          const float* wp = a.wp + (r * a.kw + s) * c + cb;
          s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xp), _mm512_maskz_loadu_ps(m, wp), s0);
        }
      }
      if (ro) s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m, ro + cb));
      _mm512_mask_storeu_ps(yo + cb, m, act512(s0, ep));
    }
  }
}

}  // namespace tessera::kernels::x86
