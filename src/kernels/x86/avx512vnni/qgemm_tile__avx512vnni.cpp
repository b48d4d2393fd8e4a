// int8 GEMM tile for AVX-512 VNNI: up to 6 rows x 64 columns (24 zmm accumulators), one vpdpbusd per 16
// columns x 4 k — four times the multiply-adds of an f32 FMA per instruction. Each k group loads the panel's
// nv vectors once and broadcasts four bytes of each row. The output stage runs on the accumulators: the
// zero-point terms in int32 (wrapping like the reference), then int32 stores or the requantization as the
// reference (and onnxruntime) does it: f32(C) * scale, clamped, rounded half to even, plus the zero point.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/x86/qgemm.h"

namespace tessera::kernels::x86 {

// Round half to even, whatever MXCSR says.
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

namespace {

inline int32_t load4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// acc += the rows' k groups (rows[i] + step * q for q < kq) times the panel's (from b); returns b past them.
template <bool ASigned, int MR, int NV>
inline __attribute__((always_inline)) const uint8_t* accumulate(__m512i (&acc)[MR][NV],
                                                                const uint8_t* const* rows, int64_t step,
                                                                int64_t kq, const uint8_t* b) {
  const uint8_t* r[MR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) r[i] = rows[i];
  for (int64_t q = 0; q < kq; ++q, b += 64 * NV) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_si512(b + 64 * v);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512i av = _mm512_set1_epi32(load4(r[i]));
      r[i] += step;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[i][v] =
            ASigned ? _mm512_dpbusd_epi32(acc[i][v], bv[v], av) : _mm512_dpbusd_epi32(acc[i][v], av, bv[v]);
    }
  }
  return b;
}

// Writes the tile's bytes (MR rows of 16 NV columns) transposed: column j's MR bytes at c + j * ldc. Eight
// rows by 16 columns at a time become 16 columns of eight bytes through three rounds of unpacks.
template <int MR, int NV>
inline __attribute__((always_inline)) void store_transposed(const __m128i (&bytes)[MR][NV], const QTile& t) {
  const __mmask16 rows = __mmask16((1u << t.mr) - 1);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    __m128i r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = i < MR ? bytes[i < MR ? i : 0][v] : _mm_setzero_si128();
    const __m128i a0 = _mm_unpacklo_epi8(r[0], r[1]), a1 = _mm_unpackhi_epi8(r[0], r[1]);
    const __m128i b0 = _mm_unpacklo_epi8(r[2], r[3]), b1 = _mm_unpackhi_epi8(r[2], r[3]);
    const __m128i c0 = _mm_unpacklo_epi8(r[4], r[5]), c1 = _mm_unpackhi_epi8(r[4], r[5]);
    const __m128i d0 = _mm_unpacklo_epi8(r[6], r[7]), d1 = _mm_unpackhi_epi8(r[6], r[7]);
    const __m128i e[4] = {_mm_unpacklo_epi16(a0, b0), _mm_unpackhi_epi16(a0, b0), _mm_unpacklo_epi16(a1, b1),
                          _mm_unpackhi_epi16(a1, b1)};
    const __m128i f[4] = {_mm_unpacklo_epi16(c0, d0), _mm_unpackhi_epi16(c0, d0), _mm_unpacklo_epi16(c1, d1),
                          _mm_unpackhi_epi16(c1, d1)};
    uint8_t* c = static_cast<uint8_t*>(t.c) + 16 * v * t.ldc;
    const int cols = v == NV - 1 ? t.nr - 16 * v : 16;
#pragma GCC unroll 4
    for (int h = 0; h < 4; ++h) {
      const __m128i lo = _mm_unpacklo_epi32(e[h], f[h]), hi = _mm_unpackhi_epi32(e[h], f[h]);
      const __m128i col[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k)
        if (4 * h + k < cols) _mm_mask_storeu_epi8(c + (4 * h + k) * t.ldc, rows, col[k]);
    }
  }
}

template <bool ASigned, int MR, int NV>
void tile(const QTile& t) {
  __m512i acc[MR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_si512();
  if (t.a_ptrs) {
    const uint8_t* b = t.b;
    for (int64_t tap = 0; tap < t.taps; ++tap)
      b = accumulate<ASigned, MR, NV>(acc, t.a_ptrs + tap * kQMr, t.a_step, t.kq, b);
  } else {
    const uint8_t* rows[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) rows[i] = t.a + i * t.lda;
    accumulate<ASigned, MR, NV>(acc, rows, 4, t.kq, t.b);
  }
  __m128i bytes[MR][NV];  // the requantized rows, for a transposed store
  const __mmask16 last = t.nr % 16 == 0 ? __mmask16(0xffff) : __mmask16((1u << (t.nr % 16)) - 1);
  // onnxruntime's requantization: f32 product, clamped to the range less the zero point, rounded half to even
  const int32_t yzi = t.y_zero;
  const __m512 lo = _mm512_set1_ps(float((t.type == QOut::s8 ? -128 : 0) - yzi)),
               hi = _mm512_set1_ps(float((t.type == QOut::s8 ? 127 : 255) - yzi));
  const __m512i yz = _mm512_set1_epi32(yzi);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m512i c = acc[i][v];
      if (t.b_zero)
        c = _mm512_sub_epi32(
            c, _mm512_mullo_epi32(_mm512_set1_epi32(t.a_rowsum[i]), _mm512_load_si512(t.b_zero + 16 * v)));
      if (t.a_zero && t.a_zero[i] != 0)
        c = _mm512_sub_epi32(
            c, _mm512_mullo_epi32(_mm512_set1_epi32(t.a_zero[i]), _mm512_load_si512(t.col_term + 16 * v)));
      if (t.col_sub) c = _mm512_sub_epi32(c, _mm512_load_si512(t.col_sub + 16 * v));
      if (t.bias)
        c = _mm512_add_epi32(
            c, t.bias_per_col ? _mm512_loadu_si512(t.bias + 16 * v) : _mm512_set1_epi32(t.bias[i]));
      const __mmask16 mask = v == NV - 1 ? last : __mmask16(0xffff);
      if (t.type == QOut::i32) {
        _mm512_mask_storeu_epi32(static_cast<int32_t*>(t.c) + i * t.ldc + 16 * v, mask, c);
        continue;
      }
      const __m512 sc = t.scale_per_col ? _mm512_loadu_ps(t.scale + 16 * v)
                                        : _mm512_set1_ps(t.scale[t.scale_per_row ? i : 0]);
      const __m512 f = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(c), sc), lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, kRound), yz);
      if (t.c_transposed)
        bytes[i][v] = _mm512_cvtepi32_epi8(q);
      else if constexpr (NV == 1)
        _mm_mask_storeu_epi8(static_cast<uint8_t*>(t.c) + i * t.ldc, mask, _mm512_cvtepi32_epi8(q));
      else
        acc[i][v] = q;
    }
    if constexpr (NV > 1) {
      // the row's vectors to bytes in two packing steps (saturating, exact: the values are in range) and one
      // dword permutation back to column order: fewer uops than a vpmovdb per vector
      if (!t.c_transposed && t.type != QOut::i32) {
        const __m512i w01 = _mm512_packs_epi32(acc[i][0], acc[i][1]),
                      w23 = NV > 2 ? _mm512_packs_epi32(acc[i][NV > 2 ? 2 : 0], acc[i][NV > 3 ? 3 : 0]) : w01;
        const __m512i b = t.type == QOut::u8 ? _mm512_packus_epi16(w01, w23) : _mm512_packs_epi16(w01, w23);
        const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        const int cols = t.nr;
        const __mmask64 m = cols >= 64 ? ~__mmask64(0) : (__mmask64(1) << cols) - 1;
        _mm512_mask_storeu_epi8(static_cast<uint8_t*>(t.c) + i * t.ldc, m,
                                _mm512_permutexvar_epi32(order, b));
      }
    }
  }
  if (t.c_transposed && t.type != QOut::i32) store_transposed<MR, NV>(bytes, t);
}

template <bool ASigned, int MR>
void tile_nv(const QTile& t) {
  switch (t.nv) {
    case 1:
      return tile<ASigned, MR, 1>(t);
    case 2:
      return tile<ASigned, MR, 2>(t);
    case 3:
      return tile<ASigned, MR, 3>(t);
    default:
      return tile<ASigned, MR, 4>(t);
  }
}

template <bool ASigned>
void tile_mr(const QTile& t) {
  switch (t.mr) {
    case 1:
      return tile_nv<ASigned, 1>(t);
    case 2:
      return tile_nv<ASigned, 2>(t);
    case 3:
      return tile_nv<ASigned, 3>(t);
    case 4:
      return tile_nv<ASigned, 4>(t);
    case 5:
      return tile_nv<ASigned, 5>(t);
    default:
      return tile_nv<ASigned, 6>(t);
  }
}

inline __mmask64 span_mask(int64_t d0, int64_t len) {
  return (len >= 64 ? ~__mmask64(0) : ((__mmask64(1) << len) - 1)) << d0;
}

// Row kk of a panel: its segments' bytes where they fall, `pad` elsewhere, zeros past the row's columns.
inline __m512i panel_row(const QPanelPlan& p, const uint8_t* base, const QSeg* s, const QSeg* e,
                         __mmask64 cols) {
  __m512i v = _mm512_setzero_si512();
  __mmask64 have = 0;
  for (; s != e; ++s) {
    const __mmask64 m = span_mask(s->d0, s->len);
    const uint8_t* src = base + s->off;
    if (p.sw == 1) {
      // a whole vector where it lies inside the buffer (a masked byte load is several times slower);
      // otherwise masked: masked-off bytes are never touched, the load may start before the source
      const uint8_t* at = src - s->d0;
      if (at >= p.lo && at + 64 <= p.hi)
        v = _mm512_mask_mov_epi8(v, m, _mm512_loadu_si512(at));
      else
        v = _mm512_mask_loadu_epi8(v, m, at);
    } else if (p.sw == 2) {
      // 128 source bytes for 64 columns, the even ones kept (vpmovwb)
      const uint8_t* at = src - 2 * s->d0;
      const int64_t b0 = 2 * s->d0, b1 = 2 * (s->d0 + s->len) - 1;  // source bytes used: [b0, b1)
      const __mmask64 even = 0x5555555555555555ull;
      const __mmask64 lo = (b0 < 64 ? span_mask(b0, std::min<int64_t>(b1, 64) - b0) : 0) & even;
      const __mmask64 hi =
          (b1 > 64 ? span_mask(std::max<int64_t>(b0, 64) - 64, b1 - std::max<int64_t>(b0, 64)) : 0) & even;
      const __m256i l = _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi8(lo, at));
      const __m256i h = _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi8(hi, at + 64));
      v = _mm512_mask_mov_epi8(v, m, _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1));
    } else {
      alignas(64) uint8_t tmp[64];
      for (int64_t j = 0; j < s->len; ++j) tmp[s->d0 + j] = src[j * p.sw];
      v = _mm512_mask_loadu_epi8(v, m, tmp);
    }
    have |= m;
  }
  if (p.flip) v = _mm512_xor_si512(v, _mm512_set1_epi8(char(p.flip)));
  return _mm512_maskz_mov_epi8(cols, _mm512_mask_mov_epi8(_mm512_set1_epi8(char(p.pad)), have, v));
}

}  // namespace

// Four rows at a time, interleaved into k-groups in registers: bytes, then words, within each 128-bit lane,
// then a 4 x 4 transpose of the lanes so that vector v holds columns 16 v .. 16 v + 15. Column sums on
// vpdpbusd against ones.
void qpack_panel__avx512vnni(const QPanelPlan& p, uint8_t* panel, int32_t* sums) {
  const int64_t nv = p.width / 16;
  const __mmask64 cols = span_mask(0, p.nr);
  __m512i sum[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  const __m512i ones = _mm512_set1_epi8(1);
  int64_t c = 0, tap = 0;  // kk = c * taps + tap
  for (int64_t k0 = 0; k0 < p.k; k0 += 4, panel += 4 * p.width) {
    __m512i r[4];
    for (int q = 0; q < 4; ++q) {
      if (k0 + q >= p.k) {
        r[q] = _mm512_setzero_si512();
        continue;
      }
      r[q] =
          panel_row(p, p.base + c * p.step, p.segs + p.seg_begin[tap], p.segs + p.seg_begin[tap + 1], cols);
      if (++tap == p.taps) tap = 0, ++c;
    }
    const __m512i a = _mm512_unpacklo_epi8(r[0], r[1]), b = _mm512_unpackhi_epi8(r[0], r[1]);
    const __m512i cc = _mm512_unpacklo_epi8(r[2], r[3]), d = _mm512_unpackhi_epi8(r[2], r[3]);
    const __m512i o0 = _mm512_unpacklo_epi16(a, cc), o1 = _mm512_unpackhi_epi16(a, cc);
    const __m512i o2 = _mm512_unpacklo_epi16(b, d), o3 = _mm512_unpackhi_epi16(b, d);
    const __m512i t0 = _mm512_shuffle_i64x2(o0, o1, 0x44), t1 = _mm512_shuffle_i64x2(o2, o3, 0x44);
    const __m512i t2 = _mm512_shuffle_i64x2(o0, o1, 0xEE), t3 = _mm512_shuffle_i64x2(o2, o3, 0xEE);
    const __m512i pv[4] = {_mm512_shuffle_i64x2(t0, t1, 0x88), _mm512_shuffle_i64x2(t0, t1, 0xDD),
                           _mm512_shuffle_i64x2(t2, t3, 0x88), _mm512_shuffle_i64x2(t2, t3, 0xDD)};
    for (int64_t v = 0; v < nv; ++v) {
      _mm512_store_si512(panel + 64 * v, pv[v]);
      if (sums)
        sum[v] =
            p.b_signed ? _mm512_dpbusd_epi32(sum[v], ones, pv[v]) : _mm512_dpbusd_epi32(sum[v], pv[v], ones);
    }
  }
  if (sums)
    for (int64_t v = 0; v < nv; ++v) _mm512_store_si512(sums + 16 * v, sum[v]);
}

void qgemm_tile__avx512vnni(const QTile& t) {
  if (t.a_signed)
    tile_mr<true>(t);
  else
    tile_mr<false>(t);
}

}  // namespace tessera::kernels::x86
