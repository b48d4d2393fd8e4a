// The stem conv kernels for AVX-512F (conv2d_nchw_in_f32), two shapes of tile:
// - up to 16 channels: output pixels along the lanes, one 16-pixel x 16-channel tile in 16 zmm accumulators,
//   each tap one contiguous load of a phase row and 16 FMAs with the tap's weights broadcast; the tile is
//   transposed to NHWC in registers before it is stored;
// - 17 to 32 channels: channels along the lanes, 12 pixels x 2 vectors, each pixel's input broadcast to two
//   FMAs (conv_nchw_in_row_nhwc_avx512f).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/x86/avx512f/zmm_traits.h"
#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86 {

namespace {

// r[i] (lanes = 16 columns) -> r[j] (lanes = 16 rows): the 16 x 16 transpose in four rounds of shuffles.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4q + k] holds, in its 128-bit lane L, column 4L + k of rows 4q..4q+3: a 4 x 4 transpose of lanes
  // for each k gives column 4L + k all sixteen rows
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512 a = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88),
                 b = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd),
                 c = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88),
                 d = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
    t[k] = _mm512_shuffle_f32x4(a, c, 0x88);
    t[8 + k] = _mm512_shuffle_f32x4(a, c, 0xdd);
    t[4 + k] = _mm512_shuffle_f32x4(b, d, 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(b, d, 0xdd);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

inline __m512 act(__m512 v, const NchwInRowArgs& a) {
  if (a.act == Activation::relu) return _mm512_max_ps(v, _mm512_setzero_ps());
  if (a.act == Activation::clip)
    return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(a.clip_min)), _mm512_set1_ps(a.clip_max));
  if (a.act == Activation::silu) return Zmm::silu(v);
  if (a.act == Activation::hardswish) return Zmm::hardswish(v);
  return v;
}

// Channels along the lanes: PX output pixels from column ox0 x NB vectors of 16 channels. Each tap loads its
// NB weight vectors once and broadcasts each pixel's input to NB FMAs; the sums are NHWC already.
template <int PX, int NB>
void nhwc_tile(const NchwInRowArgs& a, int64_t ox0, const __mmask16* m) {
  __m512 acc[PX][NB];
#pragma GCC unroll 2
  for (int b = 0; b < NB; ++b) {
    const __m512 bv = a.bias ? _mm512_maskz_loadu_ps(m[b], a.bias + b * 16) : _mm512_setzero_ps();
#pragma GCC unroll 24
    for (int p = 0; p < PX; ++p) acc[p][b] = bv;
  }
  const float* w = a.w;
  for (int64_t t = 0; t < a.ntaps; ++t, w += a.ldw) {
    const float* x = a.taps[t] + ox0;
    __m512 wv[NB];
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_ps(w + b * 16);
#pragma GCC unroll 24
    for (int p = 0; p < PX; ++p) {
      const __m512 xb = _mm512_set1_ps(x[p]);
#pragma GCC unroll 2
      for (int b = 0; b < NB; ++b) acc[p][b] = _mm512_fmadd_ps(xb, wv[b], acc[p][b]);
    }
  }
  float* y = a.y + ox0 * a.ldy;
#pragma GCC unroll 24
  for (int p = 0; p < PX; ++p)
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) _mm512_mask_storeu_ps(y + p * a.ldy + b * 16, m[b], act(acc[p][b], a));
}

template <int NB, int... I>
void nhwc_row(const NchwInRowArgs& a, std::integer_sequence<int, I...>) {
  constexpr int PX = sizeof...(I);
  using Fn = void (*)(const NchwInRowArgs&, int64_t, const __mmask16*);
  static constexpr Fn kTile[] = {nhwc_tile<I + 1, NB>...};
  __mmask16 m[NB];
  for (int b = 0; b < NB; ++b) m[b] = __mmask16((1u << std::clamp<int64_t>(a.nc - b * 16, 0, 16)) - 1);
  int64_t ox0 = 0;
  for (; ox0 + PX <= a.ow; ox0 += PX) nhwc_tile<PX, NB>(a, ox0, m);
  if (ox0 < a.ow) kTile[a.ow - ox0 - 1](a, ox0, m);
}

}  // namespace

void conv_nchw_in_row_nhwc_avx512f(const NchwInRowArgs& a) {
  nhwc_row<2>(a, std::make_integer_sequence<int, 12>{});
}

void conv_nchw_in_row_avx512f(const NchwInRowArgs& a) {
  const __mmask16 cmask = __mmask16((1u << a.nc) - 1);
  for (int64_t ox0 = 0; ox0 < a.ow; ox0 += 16) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int o = 0; o < 16; ++o)
      acc[o] = a.bias && o < a.nc ? _mm512_set1_ps(a.bias[o]) : _mm512_setzero_ps();
    const float* w = a.w;
    for (int64_t t = 0; t < a.ntaps; ++t, w += a.ldw) {
      const __m512 v = _mm512_loadu_ps(a.taps[t] + ox0);
#pragma GCC unroll 16
      for (int o = 0; o < 16; ++o) acc[o] = _mm512_fmadd_ps(v, _mm512_set1_ps(w[o]), acc[o]);
    }
#pragma GCC unroll 16
    for (int o = 0; o < 16; ++o) acc[o] = act(acc[o], a);
    transpose16(acc);
    const int64_t npx = std::min<int64_t>(16, a.ow - ox0);
    float* y = a.y + ox0 * a.ldy;
    for (int64_t i = 0; i < npx; ++i) _mm512_mask_storeu_ps(y + i * a.ldy, cmask, acc[i]);
  }
}

void nchw_phase_rows_avx512f(const float* src, int64_t w, int64_t pad_l, int64_t stride, int64_t len,
                             float* out) {
  // t[i] = src[i - pad_l] inside the row, 0 outside, for i < n (then zeros to `end`); phase p:
  // out[p * len + j] = t[j * stride + p]
  const int64_t n = len * stride;
  auto padded = [&](float* t, int64_t end) {
    const int64_t a = std::min(pad_l, n), b = std::clamp<int64_t>(pad_l + w, a, n);
    std::memset(t, 0, size_t(a) * sizeof(float));
    std::memcpy(t + a, src + (a - pad_l), size_t(b - a) * sizeof(float));
    std::memset(t + b, 0, size_t(end - b) * sizeof(float));
  };
  if (stride == 1) return padded(out, n);
  constexpr int64_t kMax = 4096;
  if (stride == 2 && n <= kMax) {  // the padded row in L1, split by permutes
    alignas(64) float t[kMax];
    padded(t, (n + 31) / 32 * 32);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t j = 0; j < len; j += 16) {
      const __m512 lo = _mm512_load_ps(t + 2 * j), hi = _mm512_load_ps(t + 2 * j + 16);
      const __mmask16 m = j + 16 <= len ? __mmask16(0xffff) : __mmask16((1u << (len - j)) - 1);
      _mm512_mask_storeu_ps(out + j, m, _mm512_permutex2var_ps(lo, even, hi));
      _mm512_mask_storeu_ps(out + len + j, m, _mm512_permutex2var_ps(lo, odd, hi));
    }
    return;
  }
  for (int64_t p = 0; p < stride; ++p)  // a row this long: element by element
    for (int64_t j = 0; j < len; ++j) {
      const int64_t ix = j * stride + p - pad_l;
      out[p * len + j] = ix >= 0 && ix < w ? src[ix] : 0.0f;
    }
}

}  // namespace tessera::kernels::x86
