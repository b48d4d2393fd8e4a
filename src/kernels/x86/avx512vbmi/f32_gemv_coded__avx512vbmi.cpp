// Decoding kernels for coded weights (gemm.h, CodedB), AVX-512 VBMI. A panel row is 224 bytes: 64 floats'
// low three bytes (192), then 32 bytes of 4-bit codes (byte l of the first 16: lanes l of vectors 0 and 1 in
// its low and high nibble; of the next 16: vectors 2 and 3). Per 16 floats: vpmovzxbd of the codes (once
// per two vectors) and a shift, a vpermd of the 16-entry table (top byte << 24; vpermd reads the index's
// low 4 bits, so the other nibble needs no mask), and one masked vpermb that spreads the 48 low bytes into
// the lanes' bytes 0-2 over the table's top byte.
//
// Measured against the same GEMV over PackedB (Zen 4 VM, weights from memory, 1 x 50257 x 768 in two K
// blocks, G = 4 streams): 0.86x the time at one thread, 0.88x at two (the bytes are 0.875x); from L3
// (3072 x 768) within noise of it.
// GCC 12 warns (falsely, GCC PR105593) about the _mm*_undefined_*() inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {
namespace {

constexpr int kRow = int(CodedB::kRowBytes);
// Several rows of A: how many panel rows ahead their loop prefetches (one stream, paced by their FMAs)
constexpr int64_t kAhead = 16;

struct Decoder {
  __m512i table, spread;
  static constexpr __mmask64 kLow3 = 0x7777777777777777ull;  // bytes 0-2 of every lane
  explicit Decoder(const uint32_t* t) : table(_mm512_loadu_si512(t)) {
    alignas(64) uint8_t ix[64];
    for (int l = 0; l < 16; ++l)
      for (int q = 0; q < 4; ++q) ix[4 * l + q] = uint8_t(q < 3 ? 3 * l + q : 0);
    spread = _mm512_load_si512(ix);
  }
  // the two vectors of half h (columns 32h .. 32h + 31) of one row record
  void half(const uint8_t* r, int h, __m512 w[2]) const {
    const __m512i c =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 192 + 16 * h)));
    const __m512i idx[2] = {c, _mm512_srli_epi32(c, 4)};
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      const __m512i top = _mm512_permutexvar_epi32(idx[v], table);
      w[v] = _mm512_castsi512_ps(
          _mm512_mask_permutexvar_epi8(top, kLow3, spread, _mm512_loadu_si512(r + 96 * h + 48 * v)));
    }
  }
  // the four vectors of one row record
  void row(const uint8_t* r, __m512 w[4]) const {
    const __m512i c01 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 192)));
    const __m512i c23 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 208)));
    const __m512i idx[4] = {c01, _mm512_srli_epi32(c01, 4), c23, _mm512_srli_epi32(c23, 4)};
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const __m512i top = _mm512_permutexvar_epi32(idx[v], table);
      w[v] = _mm512_castsi512_ps(
          _mm512_mask_permutexvar_epi8(top, kLow3, spread, _mm512_loadu_si512(r + 48 * v)));
    }
  }
};

// G panels, gstride panels apart: sums over the K block, their escapes, then alpha, beta and ep.
template <int G>
void panel_group(const Decoder& d, int64_t kc, const float* a, int64_t cs_a, const uint8_t* b,
                 int64_t gstride, const uint32_t* esc_index, const CodedEscape* esc, int64_t esc_total,
                 float* c, float alpha, float beta, const UkrEpilogue* ep) {
  const int64_t pstride = kc * kRow;
  __m512 acc[G][4];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[g][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 av = _mm512_set1_ps(a[p * cs_a]);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      __m512 w[4];
      d.row(b + g * gstride * pstride + p * kRow, w);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[g][v] = _mm512_fmadd_ps(av, w[v], acc[g][v]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    // escapes decoded as +0: their products go into the sums now (a few per panel)
    const int64_t j = g * gstride;
    const int64_t e0 = std::min<int64_t>(esc_index[j], esc_total);
    const int64_t e1 = std::min<int64_t>(esc_index[j + 1], esc_total);
    if (e0 < e1) {
      alignas(64) float s[64];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) _mm512_store_ps(s + 16 * v, acc[g][v]);
      for (int64_t e = e0; e < e1; ++e)
        if (esc[e].row < kc && esc[e].col < 64) s[esc[e].col] += a[esc[e].row * cs_a] * esc[e].value;
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[g][v] = _mm512_load_ps(s + 16 * v);
    }
  }
  const __m512 valpha = _mm512_set1_ps(alpha), vbeta = _mm512_set1_ps(beta);
  const __m512 rb = _mm512_set1_ps(ep && ep->row_bias ? ep->row_bias[0] : 0.0f);
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const int64_t j = g * gstride * 64 + v * 16;
      __m512 x = alpha == 1.0f ? acc[g][v] : _mm512_mul_ps(valpha, acc[g][v]);
      if (beta != 0.0f) x = _mm512_fmadd_ps(vbeta, _mm512_loadu_ps(c + j), x);
      if (ep) {
        if (ep->bias) x = _mm512_add_ps(x, _mm512_loadu_ps(ep->bias + j));
        if (ep->row_bias) x = _mm512_add_ps(x, rb);
        if (ep->residual) x = _mm512_add_ps(x, _mm512_loadu_ps(ep->residual + j));
        if (ep->act == Activation::relu)
          x = _mm512_max_ps(x, _mm512_setzero_ps());
        else if (ep->act == Activation::clip)
          x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(ep->clip_min)), _mm512_set1_ps(ep->clip_max));
      }
      _mm512_storeu_ps(c + j, x);
    }
}

}  // namespace

// G = 4 streams far apart, as gemv_panels_impl.h (each a long contiguous run the prefetcher stays on); the
// last npanels % 4 panels one at a time.
void f32_gemv_coded_64__avx512vbmi(int64_t kc, const float* a, int64_t cs_a, const uint8_t* b,
                                   int64_t npanels, const uint32_t* table, const uint32_t* esc_index,
                                   const CodedEscape* esc, int64_t esc_total, float* c, float alpha,
                                   float beta, const UkrEpilogue* ep) {
  constexpr int G = 4;
  const Decoder d(table);
  const int64_t pstride = kc * kRow;
  UkrEpilogue e;
  const int64_t per = npanels / G;
  for (int64_t i = 0; i < per; ++i)
    panel_group<G>(d, kc, a, cs_a, b + i * pstride, per, esc_index + i, esc, esc_total, c + i * 64, alpha,
                   beta, offset_epilogue(ep, e, 0, i * 64));
  for (int64_t j = per * G; j < npanels; ++j)
    panel_group<1>(d, kc, a, cs_a, b + j * pstride, 1, esc_index + j, esc, esc_total, c + j * 64, alpha, beta,
                   offset_epilogue(ep, e, 0, j * 64));
}

namespace {

// R rows of A (rows lda apart) against kc rows of one panel, V vectors of it from vector v0 (all four, or a
// half: R up to 12 rows in 2R sums): the sums, the escapes of those columns, then alpha, beta and ep per row
// (row_bias and residual at rows i; ldc between C's rows; c, bias and residual at the panel's column 0).
template <int R, int V>
void rows_panel(const Decoder& d, int64_t kc, const float* a, int64_t lda, const uint8_t* b, int v0,
                const uint32_t* esc_index, const CodedEscape* esc, int64_t esc_total, float* c, int64_t ldc,
                float alpha, float beta, const UkrEpilogue* ep) {
  __m512 acc[R][V];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    if (v0 == 0 && p + kAhead < kc) {  // the first pass over the panel reads it from memory
      const char* f = reinterpret_cast<const char*>(b + (p + kAhead) * kRow);
      _mm_prefetch(f, _MM_HINT_T0), _mm_prefetch(f + 64, _MM_HINT_T0);
      _mm_prefetch(f + 128, _MM_HINT_T0), _mm_prefetch(f + 192, _MM_HINT_T0);
    }
    __m512 w[V];
    if constexpr (V == 4)
      d.row(b + p * kRow, w);
    else
      d.half(b + p * kRow, v0 / 2, w);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_set1_ps(a[i * lda + p]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(av, w[v], acc[i][v]);
    }
  }
  const int64_t e0 = std::min<int64_t>(esc_index[0], esc_total),
                e1 = std::min<int64_t>(esc_index[1], esc_total);
  const int64_t col0 = v0 * 16, col1 = col0 + V * 16;
  for (int64_t e = e0; e < e1; ++e) {
    if (esc[e].row >= kc || esc[e].col < col0 || esc[e].col >= col1) continue;
    // rare (a few a panel): through memory
    alignas(64) float s[R][V * 16];
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) _mm512_store_ps(s[i] + 16 * v, acc[i][v]);
    for (; e < e1; ++e)
      if (esc[e].row < kc && esc[e].col >= col0 && esc[e].col < col1)
        for (int i = 0; i < R; ++i) s[i][esc[e].col - col0] += a[i * lda + esc[e].row] * esc[e].value;
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[i][v] = _mm512_load_ps(s[i] + 16 * v);
  }
  const __m512 valpha = _mm512_set1_ps(alpha), vbeta = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
    const __m512 rb = _mm512_set1_ps(ep && ep->row_bias ? ep->row_bias[i] : 0.0f);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const int64_t j = col0 + v * 16;
      float* ci = c + i * ldc + j;
      __m512 x = alpha == 1.0f ? acc[i][v] : _mm512_mul_ps(valpha, acc[i][v]);
      if (beta != 0.0f) x = _mm512_fmadd_ps(vbeta, _mm512_loadu_ps(ci), x);
      if (ep) {
        if (ep->bias) x = _mm512_add_ps(x, _mm512_loadu_ps(ep->bias + j));
        if (ep->row_bias) x = _mm512_add_ps(x, rb);
        if (ep->residual) x = _mm512_add_ps(x, _mm512_loadu_ps(ep->residual + i * ep->ldr + j));
        if (ep->act == Activation::relu)
          x = _mm512_max_ps(x, _mm512_setzero_ps());
        else if (ep->act == Activation::clip)
          x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(ep->clip_min)), _mm512_set1_ps(ep->clip_max));
      }
      _mm512_storeu_ps(ci, x);
    }
  }
}

using RowsFn = void (*)(const Decoder&, int64_t, const float*, int64_t, const uint8_t*, int, const uint32_t*,
                        const CodedEscape*, int64_t, float*, int64_t, float, float, const UkrEpilogue*);
// rows_panel<h, V> for h = 1 .. sizeof...(R)
template <int V, int... R>
constexpr std::array<RowsFn, sizeof...(R)> rows_table(std::integer_sequence<int, R...>) {
  return {&rows_panel<R + 1, V>...};
}
// full panels for 1-6 rows, halves for up to 12 (index h - 1)
constexpr std::array<RowsFn, 6> kFull = rows_table<4>(std::make_integer_sequence<int, 6>{});
constexpr std::array<RowsFn, 12> kHalf = rows_table<2>(std::make_integer_sequence<int, 12>{});

}  // namespace

// Each panel row is decoded in registers once per group of rows: up to 6 rows against all 64 columns (4
// vectors), more in groups of up to 12 (balanced: 16 -> 8, 8) against each half of the panel in turn. A
// decoded vector costs two shuffles, which share Zen 4's FP pipes with the FMAs: per row of A, 64 columns
// take 4 FMAs against 8 shuffles once per group. Measured (Zen 4 VM, GPT-2's 49 decode matrices, one thread):
// M = 2-6 0.67-0.94x the time of the same product over PackedB; M = 8 as two groups of 4 over whole panels
// was 1.3x slower (the decoding twice), and decoding a 64-row pass into L1 for every group to read 2x (the
// decoding then waits on memory with no FMAs to overlap).
void f32_gemm_coded_rows_64__avx512vbmi(int64_t m, int64_t kc, const float* a, int64_t lda, const uint8_t* b,
                                        int64_t npanels, const uint32_t* table, const uint32_t* esc_index,
                                        const CodedEscape* esc, int64_t esc_total, float* c, int64_t ldc,
                                        float alpha, float beta, const UkrEpilogue* ep) {
  const Decoder d(table);
  const int64_t pstride = kc * kRow;
  const bool full = m <= 6;
  const int64_t most = full ? 6 : 12, groups = (m + most - 1) / most, base = m / groups, extra = m % groups;
  UkrEpilogue e;
  for (int64_t j = 0; j < npanels; ++j) {
    for (int64_t g = 0, row = 0; g < groups; ++g) {
      const int64_t h = base + (g < extra);
      for (int half = 0; half < (full ? 1 : 2); ++half) {
        const RowsFn fn = full ? kFull[size_t(h - 1)] : kHalf[size_t(h - 1)];
        fn(d, kc, a + row * lda, lda, b + j * pstride, 2 * half, esc_index + j, esc, esc_total,
           c + row * ldc + j * 64, ldc, alpha, beta, offset_epilogue(ep, e, row, j * 64));
      }
      row += h;
    }
  }
}

// The coding of one panel row, vectorized: top bytes through the 256-entry code table (two vpermi2b over
// its halves, chosen by the byte's top bit), escapes (code 15 on a real column) zeroed and listed in column
// order, the low bytes packed by a vpermb, the codes into nibbles.
int64_t f32_code_row__avx512vbmi(const float* w, int64_t valid, const uint8_t* code_of, uint8_t* rec,
                                 CodedEscape* esc, uint16_t row) {
  alignas(64) uint32_t u[64];
  const __mmask16 full = 0xffff;
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    const int64_t left = std::clamp<int64_t>(valid - 16 * v, 0, 16);
    const __mmask16 m = left == 16 ? full : __mmask16((1u << left) - 1);
    _mm512_store_si512(u + 16 * v, _mm512_castps_si512(_mm512_maskz_loadu_ps(m, w + 16 * v)));
  }
  // top bytes of the 64 weights, one byte each (the inserts' lane numbers are immediates: written out, as an
  // unoptimized build does not unroll a loop over them)
  auto tops = [&](int v) {
    return _mm512_cvtepi32_epi8(_mm512_srli_epi32(_mm512_load_si512(u + 16 * v), 24));
  };
  __m512i top = _mm512_castsi128_si512(tops(0));
  top = _mm512_inserti32x4(top, tops(1), 1);
  top = _mm512_inserti32x4(top, tops(2), 2);
  top = _mm512_inserti32x4(top, tops(3), 3);
  const __m512i t0 = _mm512_loadu_si512(code_of), t1 = _mm512_loadu_si512(code_of + 64);
  const __m512i t2 = _mm512_loadu_si512(code_of + 128), t3 = _mm512_loadu_si512(code_of + 192);
  __m512i codes = _mm512_mask_blend_epi8(_mm512_movepi8_mask(top), _mm512_permutex2var_epi8(t0, top, t1),
                                         _mm512_permutex2var_epi8(t2, top, t3));
  const __mmask64 real = valid >= 64 ? ~__mmask64(0) : (__mmask64(1) << valid) - 1;
  codes = _mm512_mask_mov_epi8(_mm512_set1_epi8(15), real, codes);  // padding: code 15, +0, no escape
  int64_t n = 0;
  for (__mmask64 e = _mm512_cmpeq_epi8_mask(codes, _mm512_set1_epi8(15)) & real; e; e &= e - 1) {
    const int col = __builtin_ctzll(e);
    float value;
    std::memcpy(&value, &u[col], sizeof value);
    esc[n++] = CodedEscape{row, uint8_t(col), 0, value};
    u[col] = 0;
  }
  // byte 3l + q of the output from byte 4l + q (l < 16, q < 3)
  static constexpr std::array<uint8_t, 64> kCompress = [] {
    std::array<uint8_t, 64> a{};
    for (int l = 0; l < 16; ++l)
      for (int q = 0; q < 3; ++q) a[size_t(3 * l + q)] = uint8_t(4 * l + q);
    return a;
  }();
  const __m512i compress = _mm512_loadu_si512(kCompress.data());
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v)
    _mm512_mask_storeu_epi8(rec + 48 * v, (__mmask64(1) << 48) - 1,
                            _mm512_permutexvar_epi8(compress, _mm512_load_si512(u + 16 * v)));
  const __m128i c0 = _mm512_castsi512_si128(codes), c1 = _mm512_extracti32x4_epi32(codes, 1);
  const __m128i c2 = _mm512_extracti32x4_epi32(codes, 2), c3 = _mm512_extracti32x4_epi32(codes, 3);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(rec + 192), _mm_or_si128(c0, _mm_slli_epi16(c1, 4)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(rec + 208), _mm_or_si128(c2, _mm_slli_epi16(c3, 4)));
  return n;
}

void f32_decode_coded_rows__avx512vbmi(const uint8_t* rec, int64_t rows, const uint32_t* table, float* dst) {
  const Decoder d(table);
  for (int64_t p = 0; p < rows; ++p) {
    __m512 w[4];
    d.row(rec + p * kRow, w);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(dst + p * 64 + v * 16, w[v]);
  }
}

}  // namespace tessera::kernels::x86
