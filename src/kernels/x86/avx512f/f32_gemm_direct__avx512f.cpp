// Direct-A f32 GEMM micro-kernel for AVX-512F: an mr x nr tile (mr <= 6,
// nr <= 64) of C from A read in place (no packing: element (i, p) at
// a[i * rs_a + p * cs_a]) and a B panel whose row p starts at b + p * ldb
// (a prepacked 64-wide panel, ldb = 64, or B itself, ldb = its row stride).
// Columns past nr are masked, so it needs no edge scratch. It serves the small-M
// shapes (decode GEMV, M = 16 transformer GEMMs) where packing A costs more than
// it saves, and tall-skinny shapes whose A would be packed for one panel only.
// B is software-prefetched into L1 a fixed distance ahead along the panel (for a
// prepacked panel that runs on into the next one), or into L2 where the caller
// says (the small-M driver spreads the next panel over the tiles of this one).
#include <immintrin.h>

#include <cstdint>

#include "kernels/x86/avx512f/zmm_traits.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemv_dots_impl.h"
#include "kernels/x86/gemv_panels_impl.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kPrefetchRows = 16;  // 16 rows of 256 B = 4 KiB ahead of the loads

// far: the lines of [pf, pf + pf_step) over successive rows need ceil(pf_step / 64)
// prefetches per row (nfar), wherever pf starts in a line.
// Always inlined: GCC 12 otherwise splits the far branch into a `.part` function, finds it free of side
// effects (prefetches have none it can see) and deletes the call, so no L2 prefetch was ever issued.
template <int NV>
[[gnu::always_inline]] inline void prefetch_row(uintptr_t pf, bool far, int nfar) {
  if (far) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      if (j < nfar) _mm_prefetch(reinterpret_cast<const char*>(pf + 64 * j), _MM_HINT_T1);
  } else {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm_prefetch(reinterpret_cast<const char*>(pf + 64 * j), _MM_HINT_T0);
  }
}

template <int MR, int NV>
void direct_tile(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb,
                 const float* pf_b, int64_t pf_bytes, float* c, int64_t ldc, int64_t /*mr == MR*/, int64_t nr,
                 float alpha, float beta, const UkrEpilogue* ep) {
  static_assert(MR >= 1 && MR <= 6 && NV >= 1 && NV <= 4);
  __mmask16 mask[NV];
  for (int j = 0; j < NV; ++j) {
    const int64_t w = nr - 16 * j;
    mask[j] = w >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (w > 0 ? w : 0)) - 1u);
  }
  const bool full = nr == 16 * NV;
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
  // near: into L1 along this panel; far (pf_b): into L2, paced by the caller
  const bool far = pf_b != nullptr;
  const uintptr_t pf_step = far ? uintptr_t(pf_bytes) : uintptr_t(ldb) * sizeof(float);
  uintptr_t pf = far ? reinterpret_cast<uintptr_t>(pf_b)
                     : reinterpret_cast<uintptr_t>(b) + uintptr_t(kPrefetchRows) * pf_step;
  const int nfar = int((pf_step + 63) / 64);
  const float* ap = a;
  const float* bp = b;
  if (full) {
    for (int64_t p = 0; p < kc; ++p, bp += ldb, ap += cs_a, pf += pf_step) {
      prefetch_row<NV>(pf, far, nfar);
      __m512 bv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) bv[j] = _mm512_loadu_ps(bp + 16 * j);
#pragma GCC unroll 6
      for (int i = 0; i < MR; ++i) {
        const __m512 av = _mm512_set1_ps(ap[i * rs_a]);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
      }
    }
  } else {
    for (int64_t p = 0; p < kc; ++p, bp += ldb, ap += cs_a, pf += pf_step) {
      prefetch_row<NV>(pf, far, nfar);
      __m512 bv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) bv[j] = _mm512_maskz_loadu_ps(mask[j], bp + 16 * j);
#pragma GCC unroll 6
      for (int i = 0; i < MR; ++i) {
        const __m512 av = _mm512_set1_ps(ap[i * rs_a]);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
      }
    }
  }

  const __m512 valpha = _mm512_set1_ps(alpha), vbeta = _mm512_set1_ps(beta);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* crow = c + i * ldc;
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const __mmask16 m = mask[j];
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
                          int64_t, float*, int64_t, int64_t, int64_t, float, float, const UkrEpilogue*);

template <int MR>
constexpr DirectFn row_of(int nv) {
  return nv == 1   ? direct_tile<MR, 1>
         : nv == 2 ? direct_tile<MR, 2>
         : nv == 3 ? direct_tile<MR, 3>
                   : direct_tile<MR, 4>;
}

constexpr DirectFn kTable[6][4] = {
    {row_of<1>(1), row_of<1>(2), row_of<1>(3), row_of<1>(4)},
    {row_of<2>(1), row_of<2>(2), row_of<2>(3), row_of<2>(4)},
    {row_of<3>(1), row_of<3>(2), row_of<3>(3), row_of<3>(4)},
    {row_of<4>(1), row_of<4>(2), row_of<4>(3), row_of<4>(4)},
    {row_of<5>(1), row_of<5>(2), row_of<5>(3), row_of<5>(4)},
    {row_of<6>(1), row_of<6>(2), row_of<6>(3), row_of<6>(4)},
};

}  // namespace

void f32_gemm_direct_6x64__avx512f(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                                   int64_t ldb, const float* pf, int64_t pf_step, float* c, int64_t ldc,
                                   int64_t mr, int64_t nr, float alpha, float beta, const UkrEpilogue* ep) {
  kTable[mr - 1][(nr + 15) / 16 - 1](kc, a, rs_a, cs_a, b, ldb, pf, pf_step, c, ldc, mr, nr, alpha, beta, ep);
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
