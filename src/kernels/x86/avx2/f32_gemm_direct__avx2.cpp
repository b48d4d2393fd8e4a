// Direct-A f32 GEMM micro-kernel for AVX2 + FMA: an mr x nr tile (mr <= 6,
// nr <= 16) of C from A read in place (element (i, p) at a[i * rs_a + p * cs_a])
// and a B panel whose row p starts at b + p * ldb (a prepacked 16-wide panel,
// ldb = 16, or B itself). Columns past nr are masked. The AVX-512 kernel's
// companion for CPUs without AVX-512 (see f32_gemm_direct__avx512f.cpp).
#include <immintrin.h>

#include <array>
#include <cstdint>

#include "kernels/x86/avx2/ymm_traits.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemv_dots_impl.h"
#include "kernels/x86/gemv_panels_impl.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kPrefetchRows = 64;  // 64 rows of 64 B = 4 KiB ahead of the loads

inline __m256i lane_mask(int64_t w) {  // lanes [0, w) set, w clamped to [0, 8]
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(w < 0 ? 0 : w > 8 ? 8 : w)), idx);
}

// FULL: nr == 8 * NV, plain loads and stores. Edge tiles (FULL false) mask B's and C's columns past nr:
// vmaskmovps is slow on AMD (a masked store is several micro-ops) and its masks would hold two of the 16
// ymm registers through the K loop, so full tiles, nearly all of them, get their own instantiation.
template <int MR, int NV, bool FULL>
void direct_tile(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb,
                 const float* pf_b, int64_t pf_bytes, bool pf_l1, float* c, int64_t ldc, int64_t /*mr == MR*/,
                 int64_t nr, float alpha, float beta, const UkrEpilogue* ep) {
  static_assert(MR >= 1 && MR <= 6 && NV >= 1 && NV <= 2);
  __m256i mask[NV];
#pragma GCC unroll 2
  for (int j = 0; j < NV; ++j) mask[j] = lane_mask(nr - 8 * j);
  auto load = [&](const float* p, int j) {
    if constexpr (FULL)
      return _mm256_loadu_ps(p);
    else
      return _mm256_maskload_ps(p, mask[j]);
  };
  __m256 acc[MR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm256_setzero_ps();
  // near: into L1 along this panel; far (pf_b): into L2, paced by the caller
  const bool far = pf_b != nullptr;
  const uintptr_t pf_step = far ? uintptr_t(pf_bytes) : uintptr_t(ldb) * sizeof(float);
  uintptr_t pf = far ? reinterpret_cast<uintptr_t>(pf_b)
                     : reinterpret_cast<uintptr_t>(b) + uintptr_t(kPrefetchRows) * pf_step;
  const float* ap = a;
  const float* bp = b;
  // Not unrolled: four K steps per trip measured 2-9% faster on ViT's and BERT's GEMMs (in-process A/B),
  // but GCC then spilled an accumulator to the stack inside the loop for the edge-free 6 x 16 tile
  // (tests/python/test_codegen.py); that wants hand-scheduled code, not a pragma.
  for (int64_t p = 0; p < kc; ++p, bp += ldb, ap += cs_a, pf += pf_step) {
    if (far) {
      if (pf_step) _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T1);
      if (pf_l1) _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchRows * ldb), _MM_HINT_T0);
    } else {
      _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T0);
    }
    __m256 bv[NV];
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) bv[j] = load(bp + 8 * j, j);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_broadcast_ss(ap + i * rs_a);
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  const __m256 valpha = _mm256_set1_ps(alpha), vbeta = _mm256_set1_ps(beta);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* crow = c + i * ldc;
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) {
      __m256 v = alpha == 1.0f ? acc[i][j] : _mm256_mul_ps(valpha, acc[i][j]);
      if (beta != 0.0f) v = _mm256_fmadd_ps(vbeta, load(crow + 8 * j, j), v);
      if (ep) {
        if (ep->bias) v = _mm256_add_ps(v, load(ep->bias + 8 * j, j));
        if (ep->row_bias) v = _mm256_add_ps(v, _mm256_set1_ps(ep->row_bias[i]));
        if (ep->residual) v = _mm256_add_ps(v, load(ep->residual + i * ep->ldr + 8 * j, j));
        if (ep->act == Activation::relu)
          v = _mm256_max_ps(v, _mm256_setzero_ps());
        else if (ep->act == Activation::clip)
          v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(ep->clip_min)), _mm256_set1_ps(ep->clip_max));
      }
      if constexpr (FULL)
        _mm256_storeu_ps(crow + 8 * j, v);
      else
        _mm256_maskstore_ps(crow + 8 * j, mask[j], v);
    }
  }
}

// A row group of 6 x 16 tiles over npanels whole panels (GemmTiles): direct_tile's K loop (prefetching into
// L1 a fixed distance along the panel) and its epilogue fixed at compile time, without a call per tile.
template <bool BETA, bool BIAS, bool RES, Activation ACT>
void row_tiles(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb,
               int64_t pstride, int64_t npanels, float* c, int64_t ldc, float beta, const UkrEpilogue* ep) {
  constexpr int MR = 6;
  const uintptr_t pf_step = uintptr_t(ldb) * sizeof(float);
  for (int64_t j = 0; j < npanels; ++j) {
    const float* bp = b + j * pstride;
    uintptr_t pf = reinterpret_cast<uintptr_t>(bp) + uintptr_t(kPrefetchRows) * pf_step;
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float* ap = a;
    for (int64_t p = 0; p < kc; ++p, bp += ldb, ap += cs_a, pf += pf_step) {
      _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T0);
      const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
      for (int i = 0; i < MR; ++i) {
        const __m256 av = _mm256_broadcast_ss(ap + i * rs_a);
        acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
      }
    }
    float* cj = c + 16 * j;
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) {
        __m256 o = acc[i][v];
        if constexpr (BETA)
          o = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(cj + i * ldc + 8 * v), o);
        if constexpr (BIAS) o = _mm256_add_ps(o, _mm256_loadu_ps(ep->bias + 16 * j + 8 * v));
        if constexpr (RES) o = _mm256_add_ps(o, _mm256_loadu_ps(ep->residual + i * ep->ldr + 16 * j + 8 * v));
        if constexpr (ACT == Activation::relu) o = _mm256_max_ps(o, _mm256_setzero_ps());
        if constexpr (ACT == Activation::clip)
          o = _mm256_min_ps(_mm256_max_ps(o, _mm256_set1_ps(ep->clip_min)), _mm256_set1_ps(ep->clip_max));
        _mm256_storeu_ps(cj + i * ldc + 8 * v, o);
      }
  }
}

// kRowTiles[beta != 0][bias][residual][activation: none, Relu, Clip]
template <bool BETA, bool BIAS, bool RES>
constexpr std::array<GemmTiles, 3> row_tiles_by_act() {
  return {row_tiles<BETA, BIAS, RES, Activation::none>, row_tiles<BETA, BIAS, RES, Activation::relu>,
          row_tiles<BETA, BIAS, RES, Activation::clip>};
}
template <bool BETA, bool BIAS>
constexpr std::array<std::array<GemmTiles, 3>, 2> row_tiles_by_res() {
  return {row_tiles_by_act<BETA, BIAS, false>(), row_tiles_by_act<BETA, BIAS, true>()};
}
template <bool BETA>
constexpr std::array<std::array<std::array<GemmTiles, 3>, 2>, 2> row_tiles_by_bias() {
  return {row_tiles_by_res<BETA, false>(), row_tiles_by_res<BETA, true>()};
}
constexpr std::array<std::array<std::array<GemmTiles, 3>, 2>, 2> kRowTiles[2] = {row_tiles_by_bias<false>(),
                                                                                 row_tiles_by_bias<true>()};

using DirectFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, const float*,
                          int64_t, bool, float*, int64_t, int64_t, int64_t, float, float, const UkrEpilogue*);

// kTable[mr - 1][nv - 1][full]
template <int MR>
constexpr std::array<std::array<DirectFn, 2>, 2> row_of_table() {
  return {{{direct_tile<MR, 1, false>, direct_tile<MR, 1, true>},
           {direct_tile<MR, 2, false>, direct_tile<MR, 2, true>}}};
}
constexpr std::array<std::array<DirectFn, 2>, 2> kTable[6] = {row_of_table<1>(), row_of_table<2>(),
                                                              row_of_table<3>(), row_of_table<4>(),
                                                              row_of_table<5>(), row_of_table<6>()};

}  // namespace

void f32_gemm_direct_6x16__avx2(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                                int64_t ldb, const float* pf, int64_t pf_step, bool pf_l1, float* c,
                                int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta,
                                const UkrEpilogue* ep) {
  const int64_t nv = (nr + 7) / 8;
  kTable[mr - 1][nv - 1][nr == 8 * nv](kc, a, rs_a, cs_a, b, ldb, pf, pf_step, pf_l1, c, ldc, mr, nr, alpha,
                                       beta, ep);
}

void f32_gemm_tiles_6x16__avx2(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                               int64_t ldb, int64_t pstride, int64_t npanels, float* c, int64_t ldc,
                               float beta, const UkrEpilogue* ep) {
  const int act = !ep ? 0 : ep->act == Activation::relu ? 1 : ep->act == Activation::clip ? 2 : 0;
  kRowTiles[beta != 0.0f][ep && ep->bias][ep && ep->residual][act](kc, a, rs_a, cs_a, b, ldb, pstride,
                                                                   npanels, c, ldc, beta, ep);
}

// GEMV over an unpacked row-major B (see f32_gemv_rows__avx512f): four rows of B
// streamed at a time into y.
void f32_gemv_rows__avx2(int64_t k, const float* x, int64_t incx, const float* b, int64_t ldb, int64_t n,
                         float* y) {
  const __m256i tail = lane_mask(n % 8);
  const int64_t nfull = n / 8 * 8;
  const bool has_tail = n % 8 != 0;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const __m256 x0 = _mm256_set1_ps(x[p * incx]), x1 = _mm256_set1_ps(x[(p + 1) * incx]),
                 x2 = _mm256_set1_ps(x[(p + 2) * incx]), x3 = _mm256_set1_ps(x[(p + 3) * incx]);
    const float* b0 = b + p * ldb;
    const float* b1 = b0 + ldb;
    const float* b2 = b1 + ldb;
    const float* b3 = b2 + ldb;
    int64_t j = 0;
    for (; j < nfull; j += 8) {
      __m256 acc = p ? _mm256_loadu_ps(y + j) : _mm256_setzero_ps();
      acc = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + j), acc);
      acc = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b1 + j), acc);
      acc = _mm256_fmadd_ps(x2, _mm256_loadu_ps(b2 + j), acc);
      acc = _mm256_fmadd_ps(x3, _mm256_loadu_ps(b3 + j), acc);
      _mm256_storeu_ps(y + j, acc);
    }
    if (has_tail) {
      __m256 acc = p ? _mm256_maskload_ps(y + j, tail) : _mm256_setzero_ps();
      acc = _mm256_fmadd_ps(x0, _mm256_maskload_ps(b0 + j, tail), acc);
      acc = _mm256_fmadd_ps(x1, _mm256_maskload_ps(b1 + j, tail), acc);
      acc = _mm256_fmadd_ps(x2, _mm256_maskload_ps(b2 + j, tail), acc);
      acc = _mm256_fmadd_ps(x3, _mm256_maskload_ps(b3 + j, tail), acc);
      _mm256_maskstore_ps(y + j, tail, acc);
    }
  }
  for (; p < k; ++p) {
    const __m256 x0 = _mm256_set1_ps(x[p * incx]);
    const float* b0 = b + p * ldb;
    int64_t j = 0;
    for (; j < nfull; j += 8) {
      const __m256 acc = p ? _mm256_loadu_ps(y + j) : _mm256_setzero_ps();
      _mm256_storeu_ps(y + j, _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + j), acc));
    }
    if (has_tail) {
      const __m256 acc = p ? _mm256_maskload_ps(y + j, tail) : _mm256_setzero_ps();
      _mm256_maskstore_ps(y + j, tail, _mm256_fmadd_ps(x0, _mm256_maskload_ps(b0 + j, tail), acc));
    }
  }
}

void f32_gemv_panels_16__avx2(int64_t kc, const float* a, int64_t cs_a, const float* b, int64_t pstride,
                              int64_t npanels, float* c, float alpha, float beta, const UkrEpilogue* ep) {
  gemv_panels::run<Ymm, 2, 4>(kc, a, cs_a, b, pstride, npanels, c, alpha, beta, ep);
}

void f32_gemv_dots__avx2(int64_t k, const float* x, const float* b, int64_t ldb, int64_t n, float* y) {
  gemv_dots::run<Ymm>(k, x, b, ldb, n, y);
}

}  // namespace tessera::kernels::x86
