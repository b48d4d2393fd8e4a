// Depthwise QLinearConv / ConvInteger over NHWC for AVX-512: 16 channels to a vector. A thread takes a run of
// output rows; each input row they read is copied once (memcpy, all channels) into a ring of rows padded
// with x_zero, so that every pixel, at the borders too, runs the same code (a row outside the image is a
// row of x_zero). Then for each output row (or pair of rows), each vector of channels, and each block of 8
// pixels, every input column the block reads is loaded once (16 bytes, widened to f32) and multiplied into
// every accumulator that needs it: at 3x3 and stride 1, two rows of 8 pixels read 4 x 10 columns for 144
// FMAs, where a load per tap would be 144 conversions. The weights (w - w_zero, packed by QDepthwiseW) stay
// in registers. The last vector of channels reads up to 15 bytes past them, inside the ring (its lanes are
// not stored).
//
// Raw x, not x - x_zero, goes into the FMAs: S = sum_t (w_t - w_zero) x_t is exact in f32 (at most 258
// products of bytes: every partial sum is an integer below 2^24), and the int32 sum is cvt(S) + term,
// term = bias - x_zero * wsum per channel (wsum the packed weights' sum). A tap in the padding reads x_zero
// and adds (w - w_zero) x_zero, which the term takes off. Where |term| + max|x| * sum |w - w_zero| <= 2^24
// (biases up to millions) the term starts the accumulators instead, and the f32 sum is the exact int32 one.
//
// Requantization as the NCHW kernel (qdepthwise__avx512f.cpp): f32(sum) * scale, clamped to the range less
// y_zero, rounded half to even, plus y_zero.
//
// Against reading the input in place (a tap outside the image pointing at x_zero bytes, the blocks at the
// borders gathered into strips first), measured on Zen 4: in place was ~9% faster at 112x112 stride 2 (the
// copies), 30-40% slower on 14x14 and 7x7 images (the strips).
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "kernels/x86/qgemm.h"

namespace tessera::kernels::x86 {

namespace {

// Round half to even, whatever MXCSR says.
constexpr int kRoundEven = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// 16 channels (one vector), prepared once per call.
struct Vec {
  const float* w;  // [taps][16]: w - w_zero, zero past the channels
  __m512i term;    // bias - x_zero * wsum
  __m512 sc;       // the output scale
  __mmask16 m;     // the channels
  bool fold;       // term can start the accumulators (below)
};

// What a row of blocks reads and writes.
struct Rows {
  // per input row u of the block (iy = oy sh - pad_t + u dh): its padded copy's column 0 (ix = -pad_l) at
  // the vector's first channel
  const uint8_t** base;
  int64_t kh, kw, sw, dw, c, ow;
  int64_t ystride;  // bytes between output rows
  __m512 lo, hi;
  __m512i yz;
  bool i32;
};

// The 16 bytes at p as f32.
template <bool Signed>
inline __attribute__((always_inline)) __m512 load_x(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm512_cvtepi32_ps(Signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
}

// One pixel's 16 sums (cvt(S) + term), or their requantized bytes. Fold: acc holds the exact int32 sum.
template <bool Fold>
inline __attribute__((always_inline)) void store_pixel(const Rows& r, const Vec& v, __m512 acc, char* y) {
  const __m512i sum = Fold ? _mm512_cvtps_epi32(acc) : _mm512_add_epi32(_mm512_cvtps_epi32(acc), v.term);
  if (r.i32) {
    if (v.m == 0xffff)
      _mm512_storeu_si512(y, sum);
    else
      _mm512_mask_storeu_epi32(y, v.m, sum);
    return;
  }
  // onnxruntime's requantization: f32 product, clamped to the range less the zero point, rounded
  const __m512 f = _mm512_mul_ps(Fold ? acc : _mm512_cvtepi32_ps(sum), v.sc);
  const __m512i q = _mm512_add_epi32(
      _mm512_cvt_roundps_epi32(_mm512_min_ps(_mm512_max_ps(f, r.lo), r.hi), kRoundEven), r.yz);
  __m128i b = _mm512_cvtepi32_epi8(q);
#ifdef __AVX512F__
  // keeps vpmovdb's register form: GCC fuses it with the store into the memory form, microcoded on Zen 4
  __asm__("" : "+x"(b));
#endif
  if (v.m == 0xffff)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y), b);
  else
    _mm_mask_storeu_epi8(y, v.m, b);
}

// R output rows of P pixels from ox. Fixed kernels (KH, KW, SW, DW; sh = sw, dh = 1) read each input column
// of the block once, for every tap of every output row and pixel that reads it; the weights are in wv.
template <int KH, int KW, int SW, int DW, bool Fold, bool Signed, int R, int P>
inline __attribute__((always_inline)) void block(const Rows& r, const Vec& v, const __m512* wv, int64_t ox,
                                                 char* y) {
  constexpr bool kFixed = KH && KW;
  const int64_t kw = kFixed ? KW : r.kw, sw = kFixed ? SW : r.sw, dw = kFixed ? DW : r.dw, c = r.c;
  const int64_t x0 = ox * sw * c;  // the block's first column
  const __m512 init = Fold ? _mm512_cvtepi32_ps(v.term) : _mm512_setzero_ps();
  __m512 acc[R * P];
#pragma GCC unroll 16
  for (int a = 0; a < R * P; ++a) acc[a] = init;
  if constexpr (kFixed) {
    constexpr int kRows = KH + (R - 1) * SW, kCols = (P - 1) * SW + (KW - 1) * DW + 1;
#pragma GCC unroll 16
    for (int u = 0; u < kRows; ++u) {
      const uint8_t* p = r.base[u] + x0;
#pragma GCC unroll 64
      for (int col = 0; col < kCols; ++col) {
        const __m512 xv = load_x<Signed>(p + col * c);
#pragma GCC unroll 4
        for (int o = 0; o < R; ++o) {
          const int i = u - o * SW;  // the kernel row for output row o
          if (i < 0 || i >= KH) continue;
#pragma GCC unroll 16
          for (int j = 0; j < KW; ++j) {
            const int q = col - j * DW;
            if (q >= 0 && q % SW == 0 && q / SW < P)
              acc[o * P + q / SW] = _mm512_fmadd_ps(wv[i * KW + j], xv, acc[o * P + q / SW]);
          }
        }
      }
    }
  } else {
    for (int64_t i = 0; i < r.kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const __m512 wt = _mm512_load_ps(v.w + (i * kw + j) * 16);
        const uint8_t* p = r.base[i] + x0 + j * dw * c;
#pragma GCC unroll 8
        for (int q = 0; q < P; ++q) acc[q] = _mm512_fmadd_ps(wt, load_x<Signed>(p + q * sw * c), acc[q]);
      }
  }
  const int64_t step = r.c * (r.i32 ? 4 : 1);
#pragma GCC unroll 4
  for (int o = 0; o < R; ++o)
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) store_pixel<Fold>(r, v, acc[o * P + q], y + o * r.ystride + (ox + q) * step);
}

// A row (R rows) of blocks of P pixels, the last one overlapping the one before it (its pixels computed
// twice, to the same values) instead of a remainder; narrower rows in blocks of 4 or 1.
template <int KH, int KW, int SW, int DW, bool Fold, bool Signed, int R, int P>
void row(const Rows& rows, const Vec& vec, char* y) {
  const Rows r = rows;
  const Vec v = vec;
  constexpr int kTaps = KH && KW ? KH * KW : 1;
  __m512 wv[kTaps];
  if constexpr (KH && KW)
    for (int t = 0; t < kTaps; ++t) wv[t] = _mm512_load_ps(v.w + t * 16);
  const int64_t ow = r.ow;
  if (ow >= P) {
    for (int64_t ox = 0; ox < ow; ox += P)
      block<KH, KW, SW, DW, Fold, Signed, R, P>(r, v, wv, std::min(ox, ow - P), y);
  } else if (P > 4 && ow >= 4) {
    for (int64_t ox = 0; ox < ow; ox += 4)
      block<KH, KW, SW, DW, Fold, Signed, R, 4>(r, v, wv, std::min(ox, ow - 4), y);
  } else {
    for (int64_t ox = 0; ox < ow; ++ox) block<KH, KW, SW, DW, Fold, Signed, R, 1>(r, v, wv, ox, y);
  }
}

using RowFn = void (*)(const Rows&, const Vec&, char*);

// The row kernels of a call: [fold][rows - 1]. The unrolled kernels are compiled for a folded term only
// (a term past the bound, a bias of millions, runs on the run-time kernel).
struct RowFns {
  RowFn fn[2][2];
  int rows;  // 2 where the kernel takes output rows in pairs
};

template <bool Signed>
RowFns generic_fns() {
  RowFns f;
  f.rows = 1;
  f.fn[0][0] = f.fn[0][1] = row<0, 0, 0, 0, false, Signed, 1, 8>;
  f.fn[1][0] = f.fn[1][1] = row<0, 0, 0, 0, true, Signed, 1, 8>;
  return f;
}

// A pair of rows (of a kernel with dh = 1 and sh = sw) on the run-time kernel: the second row's kernel rows
// start sh input rows further.
template <bool Signed>
void generic_pair(const Rows& rows, const Vec& v, char* y) {
  row<0, 0, 0, 0, false, Signed, 1, 8>(rows, v, y);
  Rows r = rows;
  r.base += r.sw;
  row<0, 0, 0, 0, false, Signed, 1, 8>(r, v, y + r.ystride);
}

template <int KH, int KW, int S, int R, int P, bool Signed>
RowFns fixed_fns() {
  static_assert(R == 2);
  RowFns f = generic_fns<Signed>();
  f.rows = R;
  f.fn[0][1] = generic_pair<Signed>;
  f.fn[1][0] = row<KH, KW, S, 1, true, Signed, 1, P>;
  f.fn[1][1] = row<KH, KW, S, 1, true, Signed, R, P>;
  return f;
}

template <bool Signed>
RowFns pick(const Conv2dParams& p) {
  if (p.dh == 1 && p.dw == 1 && p.sh == p.sw && p.kh == p.kw && (p.sw == 1 || p.sw == 2)) {
    // two rows of 8 pixels for 3x3 (16 accumulators and the 9 weights in registers), of 4 for 5x5, 7x7
    if (p.kh == 3) return p.sw == 1 ? fixed_fns<3, 3, 1, 2, 8, Signed>() : fixed_fns<3, 3, 2, 2, 8, Signed>();
    if (p.kh == 5) return p.sw == 1 ? fixed_fns<5, 5, 1, 2, 4, Signed>() : fixed_fns<5, 5, 2, 2, 4, Signed>();
    if (p.kh == 7) return p.sw == 1 ? fixed_fns<7, 7, 1, 2, 4, Signed>() : fixed_fns<7, 7, 2, 2, 4, Signed>();
  }
  return generic_fns<Signed>();
}

}  // namespace

void qdepthwise_nhwc_int8__avx512f(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                                   const float* wf, const QOutput& out, ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), c = p.c, taps = p.kh * p.kw;
  if (p.n <= 0 || oh <= 0 || ow <= 0 || c <= 0) return;
  const bool i32 = out.type == QOut::i32;
  const int64_t nv = (c + 15) / 16, esize = i32 ? 4 : 1;
  // per vector of 16 channels: the weights and the output stage
  thread_local AlignedScratch wscratch;
  float* wbuf = wscratch.get(size_t(nv * taps * 16));
  std::vector<Vec> vecs(static_cast<size_t>(nv));
  const int64_t x_max = x_signed ? 128 : 255;
  const __m512i xz = _mm512_set1_epi32(x_zero);
  for (int64_t v = 0; v < nv; ++v) {
    const int64_t c0 = v * 16;
    Vec& d = vecs[size_t(v)];
    d.m = c - c0 >= 16 ? __mmask16(0xffff) : __mmask16((1u << (c - c0)) - 1);
    d.w = wbuf + v * taps * 16;
    __m512 abs_sum = _mm512_setzero_ps();
    for (int64_t t = 0; t < taps; ++t) {
      const __m512 w = _mm512_maskz_loadu_ps(d.m, wf + t * c + c0);
      _mm512_store_ps(wbuf + (v * taps + t) * 16, w);
      abs_sum = _mm512_add_ps(abs_sum, _mm512_abs_ps(w));
    }
    const __m512i bias = out.bias ? _mm512_maskz_loadu_epi32(d.m, out.bias + c0) : _mm512_setzero_si512();
    const __m512i wsum = _mm512_cvtps_epi32(_mm512_maskz_loadu_ps(d.m, wf + taps * c + c0));
    d.term = _mm512_sub_epi32(bias, _mm512_mullo_epi32(xz, wsum));
    d.sc = i32                 ? _mm512_setzero_ps()
           : out.scale_per_row ? _mm512_maskz_loadu_ps(d.m, out.scale + c0)
                               : _mm512_set1_ps(out.scale[0]);
    // The term can start the accumulators where every partial sum stays an integer of at most 2^24:
    // |term| + x_max * sum |w - w_zero| (abs_sum exact: an integer below 2^17).
    alignas(64) int32_t terms[16];
    alignas(64) float sums[16];
    _mm512_store_si512(terms, d.term);
    _mm512_store_ps(sums, abs_sum);
    d.fold = true;
    for (int l = 0; l < 16; ++l)
      d.fold &= std::abs(int64_t(terms[l])) + x_max * int64_t(sums[l]) <= (int64_t(1) << 24);
  }
  const RowFns fns = x_signed ? pick<true>(p) : pick<false>(p);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  char* yb = static_cast<char*>(out.data);
  // the ring of padded input rows: a slot per row of the largest set a row (pair) reads, slot iy % slots
  const int64_t wp = p.pad_l + p.w + p.pad_r, row_bytes = wp * c;
  const int64_t slots = (p.kh - 1) * p.dh + 1 + (fns.rows - 1) * p.sh;
  const int64_t max_rows = p.kh + (fns.rows - 1) * p.sh;
  parallel_for(pool, p.n * oh, 1, [&](int64_t b, int64_t e) {
    // slots rows and a row of x_zero (for the rows outside the image), and 64 bytes for the last vector's
    // loads past the channels
    thread_local AlignedScratch scratch;
    uint8_t* ring = reinterpret_cast<uint8_t*>(scratch.get(size_t(((slots + 1) * row_bytes + 64) / 4 + 1)));
    uint8_t* const pad_row = ring + slots * row_bytes;
    std::memset(ring, uint8_t(x_zero), size_t((slots + 1) * row_bytes + 64));
    std::vector<int64_t> tag(size_t(slots), -1);  // the (image, row) each slot holds
    std::vector<const uint8_t*> base(static_cast<size_t>(max_rows));
    Rows r;
    r.base = base.data();
    r.kh = p.kh, r.kw = p.kw, r.sw = p.sw, r.dw = p.dw, r.c = c, r.ow = ow, r.ystride = ow * c * esize;
    r.lo = _mm512_set1_ps(float((out.type == QOut::s8 ? -128 : 0) - out.y_zero));
    r.hi = _mm512_set1_ps(float((out.type == QOut::s8 ? 127 : 255) - out.y_zero));
    r.yz = _mm512_set1_epi32(out.y_zero);
    r.i32 = i32;
    for (int64_t t = b; t < e;) {
      const int64_t img = t / oh, oy = t % oh;
      // output rows in pairs where the kernel takes them (and the next row is of the same image)
      const int pair = fns.rows == 2 && t + 1 < e && oy + 1 < oh ? 1 : 0;
      const int64_t rows = pair ? p.kh + p.sh : p.kh, step = pair ? 1 : p.dh;
      for (int64_t u = 0; u < rows; ++u) {
        const int64_t iy = oy * p.sh - p.pad_t + u * step;
        if (iy < 0 || iy >= p.h) {
          base[size_t(u)] = pad_row;
          continue;
        }
        uint8_t* slot = ring + (iy % slots) * row_bytes;
        if (tag[size_t(iy % slots)] != img * p.h + iy) {
          std::memcpy(slot + p.pad_l * c, xb + (img * p.h + iy) * p.w * c, size_t(p.w * c));
          tag[size_t(iy % slots)] = img * p.h + iy;
        }
        base[size_t(u)] = slot;
      }
      char* y = yb + t * ow * c * esize;
      for (int64_t v = 0; v < nv; ++v) {
        fns.fn[vecs[size_t(v)].fold][pair](r, vecs[size_t(v)], y + v * 16 * esize);
        for (int64_t u = 0; u < rows; ++u) base[size_t(u)] += 16;
      }
      t += 1 + pair;
    }
  });
}

}  // namespace tessera::kernels::x86
