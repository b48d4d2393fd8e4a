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
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {
namespace {

constexpr int kRow = int(CodedB::kRowBytes);

struct Decoder {
  __m512i table, spread;
  static constexpr __mmask64 kLow3 = 0x7777777777777777ull;  // bytes 0-2 of every lane
  explicit Decoder(const uint32_t* t) : table(_mm512_loadu_si512(t)) {
    alignas(64) uint8_t ix[64];
    for (int l = 0; l < 16; ++l)
      for (int q = 0; q < 4; ++q) ix[4 * l + q] = uint8_t(q < 3 ? 3 * l + q : 0);
    spread = _mm512_load_si512(ix);
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
  auto at = [&](UkrEpilogue& e, int64_t col) -> const UkrEpilogue* {
    if (!ep) return nullptr;
    e = *ep;
    if (e.bias) e.bias += col;
    if (e.residual) e.residual += col;
    return &e;
  };
  UkrEpilogue e;
  const int64_t per = npanels / G;
  for (int64_t i = 0; i < per; ++i)
    panel_group<G>(d, kc, a, cs_a, b + i * pstride, per, esc_index + i, esc, esc_total, c + i * 64, alpha,
                   beta, at(e, i * 64));
  for (int64_t j = per * G; j < npanels; ++j)
    panel_group<1>(d, kc, a, cs_a, b + j * pstride, 1, esc_index + j, esc, esc_total, c + j * 64, alpha, beta,
                   at(e, j * 64));
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
