// y = x B^T for one row x and an unpacked B of n rows (y[j] = dot(x, row j of B)): attention's scores for
// one query (a decode step's Q K^T, with K as rows), written once over an ISA's vector traits (V: Ymm in
// avx2/, Zmm in avx512f/). The general GEMM path packed B^T first, a strided gather of every element
// (GPT-2 decode: 12 heads x 129 keys x 64 per layer), for a product that reads each element once.
#pragma once

#include <cstdint>

namespace tessera::kernels::x86::gemv_dots {

// y[0, R) = dots of x[0, k) with the R rows at b, ldb floats apart.
template <class V, int R>
inline void rows(int64_t k, const float* x, const float* b, int64_t ldb, float* y) {
  typename V::vec acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = V::zero();
  int64_t p = 0;
  for (; p + V::kWidth <= k; p += V::kWidth) {
    const typename V::vec xv = V::load(x + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = V::fma(xv, V::load(b + r * ldb + p), acc[r]);
  }
  if (p < k) {
    const typename V::mask m = V::tail_mask(int(k - p));
    const typename V::vec xv = V::load(x + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = V::fma(xv, V::load(b + r * ldb + p, m), acc[r]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) y[r] = V::hsum(acc[r]);
}

// y[j] = sum_p x[p] * b[j * ldb + p], j < n: four rows at a time (four independent sums in flight).
template <class V>
void run(int64_t k, const float* x, const float* b, int64_t ldb, int64_t n, float* y) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) rows<V, 4>(k, x, b + j * ldb, ldb, y + j);
  for (; j < n; ++j) rows<V, 1>(k, x, b + j * ldb, ldb, y + j);
}

}  // namespace tessera::kernels::x86::gemv_dots
