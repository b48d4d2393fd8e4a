// Direct-A f32 GEMM micro-kernel for AVX-512F: an mr x nr tile (mr <= 6,
// nr <= 64) of C from A read in place (no packing: element (i, p) at
// a[i * rs_a + p * cs_a]) and a B panel whose row p starts at b + p * ldb
// (a prepacked 64-wide panel, ldb = 64, or B itself, ldb = its row stride).
// Columns past nr are masked, so it needs no edge scratch. It serves the small-M
// shapes (decode GEMV, M = 16 transformer GEMMs) where packing A costs more than
// it saves, and tall-skinny shapes whose A would be packed for one panel only.
// B is software-prefetched into L1 a fixed distance ahead along the panel (for a
// prepacked panel that runs on into the next one), or into L2 where the caller
// says (the small-M driver spreads the next panel over the tiles of this one), or both.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "kernels/x86/avx512f/zmm_traits.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemv_dots_impl.h"
#include "kernels/x86/gemv_panels_impl.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kPrefetchRows = 16;  // 16 rows of 256 B = 4 KiB ahead of the loads

// How a tile's K loop prefetches B, fixed per instantiation so that the loop holds no branch for it:
// PF = kNear: into L1, NV lines per row kPrefetchRows ahead along the panel; 0: none; 1..NV: into L2, that
// many lines per row at the caller's pf, advancing pf_step bytes per row — and with L1TOO into L1 as kNear
// as well. L1TOO is for row groups that re-read a 64 KB panel (256 rows) from L2 while warming the next
// block: ViT-B/16's GEMMs (197 rows, weights prepacked) 7-9% faster with it on the Xeon, one thread, B
// from memory or in cache (in-process A/B); the small-M paths' 16 KB passes sit in L1 and do not want it
// (16 x 3072 x 768 1-2% slower), nor B read in place by a few row groups (16-24 rows, 5-6% slower).
constexpr int kNear = -1;

// One tile. The K loop is what the FMA ports see, so it carries as little else as possible: the prefetch
// mode is a template parameter, A's rows are addressed from two bases (rows 0-2 and 3-5, each at 0, 1 or
// 2 row strides: base + index * scale, no per-row pointer), and only the last vector of B is masked (an
// all-ones mask when the tile is full). Written with a run-time far/near branch and six row offsets, the
// loop reloaded offsets from the stack and tested the mode on every row: 4-8% slower alone (Xeon, B in L1).
// PACK: also store each row of B as read to packed + p * 64 (zeros past nr), for GemmUkrDirectPack.
template <int MR, int NV, int PF, bool L1TOO = false, bool PACK = false>
void direct_tile(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb,
                 const float* pf_b, int64_t pf_bytes, float* packed, float* c, int64_t ldc, int64_t nr,
                 float alpha, float beta, const UkrEpilogue* ep) {
  static_assert(MR >= 1 && MR <= 6 && NV >= 1 && NV <= 4 && PF >= kNear && PF <= NV && (!L1TOO || PF > 0));
  const int64_t wlast = nr - 16 * (NV - 1);
  const __mmask16 mlast = wlast >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << wlast) - 1u);
  __m512 acc[MR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();

      // C is read (beta) and written after the K loop: start bringing the tile in.
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * j), _MM_HINT_T0);
  const int64_t rsb = rs_a * int64_t(sizeof(float)), csb = cs_a * int64_t(sizeof(float));
  const int64_t ldbb = ldb * int64_t(sizeof(float));
  const char* a0 = reinterpret_cast<const char*>(a);
  const char* a3 = a0 + 3 * rsb;
  const char* bp = reinterpret_cast<const char*>(b);
  const char* pf = PF == kNear ? bp + kPrefetchRows * ldbb : reinterpret_cast<const char*>(pf_b);
  const int64_t pfs = PF == kNear ? ldbb : pf_bytes;
  // counted down: counted up, the loop versioned for cs_a == 1 compared its bound with the stack
  for (int64_t p = kc; p > 0; --p, bp += ldbb, a0 += csb, a3 += csb) {
    if constexpr (PF != 0) {
#pragma GCC unroll 4
      for (int j = 0; j < (PF == kNear ? NV : PF); ++j)
        _mm_prefetch(pf + 64 * j, PF == kNear ? _MM_HINT_T0 : _MM_HINT_T1);
      pf += pfs;
    }
    if constexpr (L1TOO) {
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) _mm_prefetch(bp + kPrefetchRows * ldbb + 64 * j, _MM_HINT_T0);
    }
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV - 1; ++j) bv[j] = _mm512_loadu_ps(reinterpret_cast<const float*>(bp) + 16 * j);
    bv[NV - 1] = _mm512_maskz_loadu_ps(mlast, reinterpret_cast<const float*>(bp) + 16 * (NV - 1));
    if constexpr (PACK) {
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) _mm512_storeu_ps(packed + 16 * j, j < NV ? bv[j] : _mm512_setzero_ps());
      packed += 64;
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const char* ai = (i < 3 ? a0 : a3) + (i % 3) * rsb;
      const __m512 av = _mm512_set1_ps(*reinterpret_cast<const float*>(ai));
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }

  const __m512 valpha = _mm512_set1_ps(alpha), vbeta = _mm512_set1_ps(beta);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* crow = c + i * ldc;
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const __mmask16 m = j == NV - 1 ? mlast : __mmask16(0xFFFF);
      __m512 v = alpha == 1.0f ? acc[i][j] : _mm512_mul_ps(valpha, acc[i][j]);
      if (beta != 0.0f) v = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(m, crow + 16 * j), v);
      if (ep) {
        if (ep->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->bias + 16 * j));
        if (ep->row_bias) v = _mm512_add_ps(v, _mm512_set1_ps(ep->row_bias[i]));
        if (ep->residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->residual + i * ep->ldr + 16 * j));
        if (ep->act == Activation::relu)
          v = _mm512_max_ps(v, _mm512_setzero_ps());
        else if (ep->act == Activation::clip)
          v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(ep->clip_min)), _mm512_set1_ps(ep->clip_max));
      }
      _mm512_mask_storeu_ps(crow + 16 * j, m, v);
    }
  }
}

using DirectFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, const float*,
                          int64_t, float*, float*, int64_t, int64_t, float, float, const UkrEpilogue*);

// One tile shape's prefetch modes: near, none, far with 1..4 lines per row (clamped to NV), then far with
// 1..4 lines and L1TOO.
template <int MR, int NV>
constexpr std::array<DirectFn, 10> modes_of() {
  return {direct_tile<MR, NV, kNear>,
          direct_tile<MR, NV, 0>,
          direct_tile<MR, NV, 1>,
          direct_tile<MR, NV, std::min(2, NV)>,
          direct_tile<MR, NV, std::min(3, NV)>,
          direct_tile<MR, NV, std::min(4, NV)>,
          direct_tile<MR, NV, 1, true>,
          direct_tile<MR, NV, std::min(2, NV), true>,
          direct_tile<MR, NV, std::min(3, NV), true>,
          direct_tile<MR, NV, std::min(4, NV), true>};
}
template <int MR>
constexpr std::array<std::array<DirectFn, 10>, 4> row_of() {
  return {modes_of<MR, 1>(), modes_of<MR, 2>(), modes_of<MR, 3>(), modes_of<MR, 4>()};
}
constexpr std::array<std::array<std::array<DirectFn, 10>, 4>, 6> kTable = {
    row_of<1>(), row_of<2>(), row_of<3>(), row_of<4>(), row_of<5>(), row_of<6>()};

template <int MR>
constexpr std::array<DirectFn, 4> packing_row_of() {
  return {direct_tile<MR, 1, kNear, false, true>, direct_tile<MR, 2, kNear, false, true>,
          direct_tile<MR, 3, kNear, false, true>, direct_tile<MR, 4, kNear, false, true>};
}
constexpr std::array<std::array<DirectFn, 4>, 6> kPackingTable = {packing_row_of<1>(), packing_row_of<2>(),
                                                                  packing_row_of<3>(), packing_row_of<4>(),
                                                                  packing_row_of<5>(), packing_row_of<6>()};

}  // namespace

void f32_gemm_direct_6x64__avx512f(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                                   int64_t ldb, const float* pf, int64_t pf_step, bool pf_l1, float* c,
                                   int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta,
                                   const UkrEpilogue* ep) {
  // far: the lines per row of [pf, pf + pf_step), wherever pf starts in a line (0: no far prefetch)
  const int lines = pf == nullptr ? 0 : int(std::min<int64_t>((pf_step + 63) / 64, 4));
  const int mode = pf == nullptr || (lines == 0 && pf_l1) ? 0 : lines == 0 ? 1 : 1 + lines + (pf_l1 ? 4 : 0);
  kTable[mr - 1][(nr + 15) / 16 - 1][mode](kc, a, rs_a, cs_a, b, ldb, pf, pf_step, nullptr, c, ldc, nr, alpha,
                                           beta, ep);
}

void f32_gemm_direct_pack_6x64__avx512f(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a,
                                        const float* b, int64_t ldb, float* packed, float* c, int64_t ldc,
                                        int64_t mr, int64_t nr, float alpha, float beta,
                                        const UkrEpilogue* ep) {
  kPackingTable[mr - 1][(nr + 15) / 16 - 1](kc, a, rs_a, cs_a, b, ldb, nullptr, 0, packed, c, ldc, nr, alpha,
                                            beta, ep);
}

// GEMV over an unpacked row-major B: y[0:n] = sum_p x[p * incx] * b[p * ldb + 0:n].
// Four rows of B at a time stream through in memory order (four sequential
// streams the hardware prefetchers follow), y stays in L1/L2 and is updated
// once per four rows.
void f32_gemv_rows__avx512f(int64_t k, const float* x, int64_t incx, const float* b, int64_t ldb, int64_t n,
                            float* y) {
  const __mmask16 tail = __mmask16((1u << (n % 16)) - 1u);
  const int64_t nfull = n / 16 * 16;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const __m512 x0 = _mm512_set1_ps(x[p * incx]), x1 = _mm512_set1_ps(x[(p + 1) * incx]),
                 x2 = _mm512_set1_ps(x[(p + 2) * incx]), x3 = _mm512_set1_ps(x[(p + 3) * incx]);
    const float* b0 = b + p * ldb;
    const float* b1 = b0 + ldb;
    const float* b2 = b1 + ldb;
    const float* b3 = b2 + ldb;
    int64_t j = 0;
    for (; j < nfull; j += 16) {
      __m512 acc = p ? _mm512_loadu_ps(y + j) : _mm512_setzero_ps();
      acc = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + j), acc);
      acc = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b1 + j), acc);
      acc = _mm512_fmadd_ps(x2, _mm512_loadu_ps(b2 + j), acc);
      acc = _mm512_fmadd_ps(x3, _mm512_loadu_ps(b3 + j), acc);
      _mm512_storeu_ps(y + j, acc);
    }
    if (tail) {
      __m512 acc = p ? _mm512_maskz_loadu_ps(tail, y + j) : _mm512_setzero_ps();
      acc = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, b0 + j), acc);
      acc = _mm512_fmadd_ps(x1, _mm512_maskz_loadu_ps(tail, b1 + j), acc);
      acc = _mm512_fmadd_ps(x2, _mm512_maskz_loadu_ps(tail, b2 + j), acc);
      acc = _mm512_fmadd_ps(x3, _mm512_maskz_loadu_ps(tail, b3 + j), acc);
      _mm512_mask_storeu_ps(y + j, tail, acc);
    }
  }
  for (; p < k; ++p) {
    const __m512 x0 = _mm512_set1_ps(x[p * incx]);
    const float* b0 = b + p * ldb;
    int64_t j = 0;
    for (; j < nfull; j += 16) {
      const __m512 acc = p ? _mm512_loadu_ps(y + j) : _mm512_setzero_ps();
      _mm512_storeu_ps(y + j, _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + j), acc));
    }
    if (tail) {
      const __m512 acc = p ? _mm512_maskz_loadu_ps(tail, y + j) : _mm512_setzero_ps();
      _mm512_mask_storeu_ps(y + j, tail, _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, b0 + j), acc));
    }
  }
}

void f32_gemv_panels_64__avx512f(int64_t kc, const float* a, int64_t cs_a, const float* b, int64_t pstride,
                                 int64_t npanels, float* c, float alpha, float beta, const UkrEpilogue* ep) {
  gemv_panels::run<Zmm, 4, 4>(kc, a, cs_a, b, pstride, npanels, c, alpha, beta, ep);
}

void f32_gemv_dots__avx512f(int64_t k, const float* x, const float* b, int64_t ldb, int64_t n, float* y) {
  gemv_dots::run<Zmm>(k, x, b, ldb, n, y);
}

}  // namespace tessera::kernels::x86
