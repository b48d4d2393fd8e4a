// core/strided_copy against a per-element walk, over random views: sliced,
// stepped (also negative), broadcast (stride 0), permuted, with size-1 dims,
// for every element size the dtypes use; copies past 256 KiB also split over a
// thread pool.
#include "core/strided_copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/thread_pool.h"

namespace {

// Random views of up to 4 dims of at most max_dim, copied with `pool` (or none), against a per-element walk.
void check_random_views(int trials, int64_t max_dim, size_t src_bytes, tessera::ThreadPool* pool) {
  std::mt19937 g(5);
  std::vector<uint8_t> src(src_bytes);
  for (auto& b : src) b = uint8_t(g());
  for (int trial = 0; trial < trials; ++trial) {
    const size_t es = std::vector<size_t>{1, 2, 4, 8, 16}[trial % 5];
    const size_t r = 1 + g() % 4;
    std::vector<int64_t> shape(r), strides(r);
    int64_t base = 0, lo = 0, hi = 0;  // element offsets reached, relative to base
    for (size_t d = 0; d < r; ++d) {
      shape[d] = 1 + int64_t(g() % uint64_t(max_dim));
      const int kind = int(g() % 5);
      strides[d] = kind == 0 ? 0 : kind == 1 ? -int64_t(1 + g() % 7) : int64_t(1 + g() % 40);
      if (g() % 3 == 0 && d + 1 == r) strides[d] = 1;
      (strides[d] < 0 ? lo : hi) += strides[d] * (shape[d] - 1);
    }
    base = -lo;
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    ASSERT_LT(size_t(base + hi + 1) * es, src.size());
    std::vector<uint8_t> want(size_t(n) * es), got(size_t(n) * es, 0xAB);
    std::vector<int64_t> idx(r, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = base;
      for (size_t d = 0; d < r; ++d) off += idx[d] * strides[d];
      std::memcpy(&want[size_t(i) * es], &src[size_t(off) * es], es);
      for (size_t d = r; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    tessera::strided_copy(src.data(), base, strides, got.data(), shape, es, pool);
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

TEST(StridedCopy, MatchesElementWalk) {
  check_random_views(400, 6, 1 << 16, nullptr);
}

TEST(StridedCopy, LargeCopiesOverThreadsMatchElementWalk) {
  tessera::ThreadPool pool(3);
  check_random_views(60, 48, size_t(64) << 20, &pool);
}

}  // namespace
