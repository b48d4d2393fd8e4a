// The AMX pieces of the bf16x6 f32 GEMM (gemm_amx.h): exact three-way bf16 splits of A and B with AVX-512,
// the six tile products of one 32 x 32 block, and its epilogue.
//
// Tiles: tmm0-3 the 2 x 2 C tiles (16 x 16 f32 each), tmm4-5 two 16-row A tiles, tmm6-7 two 16-column B
// tiles. Per 32-wide K step the block loads 6 A and 12 B tiles (1 KiB each) for 24 TDPBF16PS: B's pieces
// are taken one at a time against every A piece they pair with (i + j <= 2).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/x86/gemm_amx.h"

namespace tessera::kernels::x86::amx {
namespace {

constexpr int64_t kTile = 512;        // bf16 elements a 16 x 32 tile holds
constexpr int64_t kStep = 6 * kTile;  // one K step of a block: 3 pieces x 2 tiles

// f32 bits rounded to nearest even at bit 16 (the bf16 in the high half, the low half cleared)
inline __m512i round_hi(__m512i bits) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i up = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
  return _mm512_and_si512(up, _mm512_set1_epi32(int(0xFFFF0000u)));
}

// x = p0 + p1 + p2 exactly (f32 bits, each piece's bf16 in the high half). Finite values near FLT_MAX,
// which rounding would carry to Inf, are truncated instead; Inf and NaN go whole into p0 (NaN kept quiet).
struct Pieces {
  __m512i p0, p1, p2;
};
inline Pieces split16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i mag = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 nonfinite = _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32(0x7F800000));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(0x7F800000));
  const __mmask16 big = _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32(0x7F7F8000));
  __m512i h = round_hi(bits);
  h = _mm512_mask_and_epi32(h, big, bits, _mm512_set1_epi32(int(0xFFFF0000u)));
  h = _mm512_mask_or_epi32(h, nan, h, _mm512_set1_epi32(0x00400000));
  const __m512 r1 = _mm512_maskz_sub_ps(__mmask16(~nonfinite), x, _mm512_castsi512_ps(h));
  const __m512i m = round_hi(_mm512_castps_si512(r1));
  const __m512 r2 = _mm512_sub_ps(r1, _mm512_castsi512_ps(m));  // at most 8 significant bits: exact in bf16
  return {h, m, _mm512_castps_si512(r2)};
}

inline __m256i low16(__m512i hi_bits) {
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(hi_bits, 16));
}
// two rows' pieces interleaved as TDPBF16PS's B rows: lane j = (row1[j] << 16) | row0[j]
inline __m512i pair(__m512i row0, __m512i row1) {
  return _mm512_or_si512(_mm512_srli_epi32(row0, 16),
                         _mm512_and_si512(row1, _mm512_set1_epi32(int(0xFFFF0000u))));
}

inline __mmask16 first(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(n, 0)) - 1);
}

// Palette 1, tiles 0-7 each 16 rows of 64 bytes. A constant in memory: GCC 12 drops the stores to a local
// configuration before LDTILECFG (it does not see the instruction read them).
struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
alignas(64) constexpr TileConfig kTileConfig{};

}  // namespace

bool split_a_block(const float* a, int64_t lda, int64_t rows, int64_t k, int64_t kp, uint16_t* dst) {
  std::memset(dst, 0, size_t(kp / 32 * kStep) * sizeof(uint16_t));
  __m512 inf_or_nan = _mm512_setzero_ps();  // x - x: NaN exactly where x is Inf or NaN
  for (int64_t i = 0; i < rows; ++i) {
    const float* ar = a + i * lda;
    const int64_t rt = i / 16, r = i % 16;
    for (int64_t p = 0; p < k; p += 16) {
      const __m512 x = _mm512_maskz_loadu_ps(first(k - p), ar + p);
      inf_or_nan = _mm512_add_ps(inf_or_nan, _mm512_sub_ps(x, x));
      const Pieces s = split16(x);
      uint16_t* t = dst + (p / 32) * kStep + rt * kTile + r * 32 + p % 32;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t), low16(s.p0));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 2 * kTile), low16(s.p1));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 4 * kTile), low16(s.p2));
    }
  }
  return _mm512_cmp_ps_mask(inf_or_nan, inf_or_nan, _CMP_UNORD_Q) == 0;
}

void split_b_block(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n, int64_t j0, int64_t kp,
                   uint16_t* dst, int64_t p0, int64_t p1) {
  const int64_t cols = std::min<int64_t>(32, n - j0);
  // a transposed B: its 32 columns gathered into a K x 32 row-major block first
  std::vector<float> tb;
  if (trans_b) {
    tb.assign(size_t(k * 32), 0.0f);
    for (int64_t j = 0; j < cols; ++j) {
      const float* src = b + (j0 + j) * ldb;
      for (int64_t p = 0; p < k; ++p) tb[size_t(p * 32 + j)] = src[p];
    }
    b = tb.data();
    ldb = 32;
    j0 = 0;
  }
  for (int64_t p = p0; p < std::min(p1, kp); p += 2) {
    // tile row (p % 32) / 2 of K step p / 32: columns j0 .. j0 + 31 of rows p and p + 1
    uint16_t* t = dst + (p / 32) * kStep + ((p % 32) / 2) * 32;
    for (int64_t h = 0; h < 2; ++h) {
      const __mmask16 mk = first(cols - 16 * h);
      const __m512 x0 = p < k ? _mm512_maskz_loadu_ps(mk, b + p * ldb + j0 + 16 * h) : _mm512_setzero_ps();
      const __m512 x1 =
          p + 1 < k ? _mm512_maskz_loadu_ps(mk, b + (p + 1) * ldb + j0 + 16 * h) : _mm512_setzero_ps();
      const Pieces s0 = split16(x0), s1 = split16(x1);
      uint16_t* th = t + h * kTile;
      _mm512_storeu_si512(th, pair(s0.p0, s1.p0));
      _mm512_storeu_si512(th + 2 * kTile, pair(s0.p1, s1.p1));
      _mm512_storeu_si512(th + 4 * kTile, pair(s0.p2, s1.p2));
    }
  }
}

void configure_tiles() {
  _tile_loadconfig(&kTileConfig);
}

void release_tiles() {
  _tile_release();
}

namespace {
// A's steps staged in L1: tile loads that miss L1 measured at ~15 B/cycle from L2 (AVX-512 loads: 50), so
// the next step of A is copied with AVX-512 while the current one computes, 16 lines after each pair of
// products (96 lines a step). Which half holds the current step carries over from call to call.
struct Stage {
  alignas(64) uint16_t buf[2][kStep];
  int cur = 0;
};
thread_local Stage t_stage;

inline void copy_lines(uint16_t* dst, const uint16_t* src, int first, int count) {
  for (int l = first; l < first + count; ++l)
    _mm512_store_si512(dst + 32 * l, _mm512_loadu_si512(src + 32 * l));
}
}  // namespace

void block_product(int64_t ksteps, const uint16_t* a_blk, const uint16_t* b_blk, float* acc, bool accumulate,
                   bool a_staged, const uint16_t* next_a, const uint16_t* pf, int64_t pf_lines) {
  Stage& st = t_stage;
  // the prefetch into L2 spread over the steps' pairs of products (6 a step)
  const int64_t pf_per = (pf_lines + 6 * ksteps - 1) / (6 * ksteps);
  int64_t pf_done = 0;
  if (!a_staged) copy_lines(st.buf[st.cur], a_blk, 0, int(kStep / 32));
  if (accumulate) {
    _tile_loadd(0, acc, 128);
    _tile_loadd(1, acc + 16, 128);
    _tile_loadd(2, acc + 16 * 32, 128);
    _tile_loadd(3, acc + 16 * 32 + 16, 128);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t s = 0; s < ksteps; ++s) {
    const uint16_t* as = st.buf[st.cur];
    uint16_t* stage_next = st.buf[st.cur ^ 1];
    const uint16_t* src = s + 1 < ksteps ? a_blk + (s + 1) * kStep : next_a;
    const uint16_t* bs = b_blk + s * kStep;
    int line = 0;
    auto copy16 = [&]() {
      if (src) copy_lines(stage_next, src, line, 16);
      line += 16;
      for (int64_t e = std::min(pf_lines, pf_done + pf_per); pf_done < e; ++pf_done)
        _mm_prefetch(reinterpret_cast<const char*>(pf) + 64 * pf_done, _MM_HINT_T1);
    };
    // A piece q against the B pieces r <= 2 - q; each B tile is loaded right before the two products that
    // read it, so the next load into its register waits only for those (tile registers are not renamed).
    auto with = [&](const uint16_t* at, int pieces) {
      _tile_loadd(4, at, 64);
      _tile_loadd(5, at + kTile, 64);
      for (int r = 0; r < pieces; ++r) {
        _tile_loadd(6, bs + r * 2 * kTile, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
        _tile_loadd(7, bs + r * 2 * kTile + kTile, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
        copy16();
      }
    };
    with(as, 3);              // A piece 0 against B pieces 0, 1, 2
    with(as + 2 * kTile, 2);  // A piece 1 against B pieces 0, 1
    with(as + 4 * kTile, 1);  // A piece 2 against B piece 0
    if (src) st.cur ^= 1;
  }
  _tile_stored(0, acc, 128);
  _tile_stored(1, acc + 16, 128);
  _tile_stored(2, acc + 16 * 32, 128);
  _tile_stored(3, acc + 16 * 32 + 16, 128);
}

void finish_block(const float* acc, int64_t rows, int64_t cols, float* c, int64_t ldc, float alpha,
                  float beta, const UkrEpilogue* ep) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int64_t i = 0; i < rows; ++i) {
    float* cr = c + i * ldc;
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 mk = first(cols - j);
      __m512 v = _mm512_mul_ps(va, _mm512_load_ps(acc + i * 32 + j));
      if (beta != 0.0f) v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, cr + j), v);
      if (ep) {
        if (ep->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, ep->bias + j));
        if (ep->row_bias) v = _mm512_add_ps(v, _mm512_set1_ps(ep->row_bias[i]));
        if (ep->residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, ep->residual + i * ep->ldr + j));
        if (ep->act == Activation::relu)
          v = _mm512_max_ps(v, _mm512_setzero_ps());
        else if (ep->act == Activation::clip)
          v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(ep->clip_min)), _mm512_set1_ps(ep->clip_max));
      }
      _mm512_mask_storeu_ps(cr + j, mk, v);
    }
  }
}

}  // namespace tessera::kernels::x86::amx
