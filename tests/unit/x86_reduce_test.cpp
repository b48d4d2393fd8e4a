// f32 reductions over a contiguous run of axes against a double-precision reference: every kind, rows and
// columns (inner 1 and wider), lengths below, at and past the kernel's 16 lanes, 64-row and 1024-element
// blocks, primes, one and two threads (rows split in parts when there are fewer rows than threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/reduce.h"

using namespace tessera;
using namespace tessera::kernels::x86;
using tessera::kernels::x86::EltIsa;

TEST(X86Reduce, MatchesDoubleReference) {
  ThreadPool pool(2);
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.5f, 2.0f);
  struct Case {
    int64_t outer, r, inner;
  };
  const Case cases[] = {{1, 1, 1},      {1, 15, 1},    {1, 16, 1},    {3, 17, 1},    {1, 1023, 1},
                        {1, 100003, 1}, {2, 70001, 1}, {5, 4096, 1},  {1, 1, 7},     {2, 3, 5},
                        {1, 63, 17},    {4, 65, 64},   {1, 129, 301}, {3, 32, 1000}, {1, 200, 12544}};
  const ReduceKind kinds[] = {ReduceKind::sum, ReduceKind::mean, ReduceKind::sum_square, ReduceKind::l1,
                              ReduceKind::l2,  ReduceKind::max,  ReduceKind::min};
  int idx = 0;
  for (const Case& c : cases) {
    std::vector<float> x(size_t(c.outer * c.r * c.inner));
    for (auto& v : x) v = d(rng);
    for (const ReduceKind k : kinds) {
      std::vector<float> y(size_t(c.outer * c.inner), -1.0f);
      reduce_f32(k, x.data(), c.outer, c.r, c.inner, y.data(), (idx++ % 2) ? &pool : nullptr);
      for (int64_t o = 0; o < c.outer; ++o)
        for (int64_t i = 0; i < c.inner; ++i) {
          if (k == ReduceKind::max || k == ReduceKind::min) {  // exact
            float m = x[size_t(o * c.r * c.inner + i)];
            for (int64_t p = 0; p < c.r; ++p) {
              const float v = x[size_t((o * c.r + p) * c.inner + i)];
              m = k == ReduceKind::max ? std::max(m, v) : std::min(m, v);
            }
            ASSERT_EQ(y[size_t(o * c.inner + i)], m)
                << "kind " << int(k) << " r " << c.r << " inner " << c.inner;
            continue;
          }
          double s = 0, mag = 0;
          for (int64_t p = 0; p < c.r; ++p) {
            const double v = x[size_t((o * c.r + p) * c.inner + i)];
            const double t = k == ReduceKind::sum_square || k == ReduceKind::l2 ? v * v
                             : k == ReduceKind::l1                              ? std::fabs(v)
                                                                                : v;
            s += t, mag += std::fabs(t);
          }
          double want = s, scale = mag;
          if (k == ReduceKind::mean) want /= double(c.r), scale /= double(c.r);
          if (k == ReduceKind::l2) want = std::sqrt(s), scale = std::sqrt(mag);
          // float lanes over blocks of at most 1024 terms, blocks summed in double
          const double tol = 1e-6 * (1 + std::sqrt(double(std::min<int64_t>(c.r, 1024)))) * scale + 1e-30;
          ASSERT_NEAR(y[size_t(o * c.inner + i)], want, tol)
              << "kind " << int(k) << " outer " << c.outer << " r " << c.r << " inner " << c.inner << " at "
              << o << "," << i;
        }
    }
  }
}

// Max and min keep a NaN wherever it lies, on the portable loops and the AVX2 ones (rows of 32+ in four
// vectors, the 8-wide column fold), and find the extreme exactly in rows and columns of every tail length.
TEST(X86Reduce, MaxMinPropagateNaN) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 3.0f);
  for (EltIsa isa : {EltIsa::portable, EltIsa::avx2}) {
    if (!eltwise_isa_available(isa)) continue;
    force_eltwise_isa(isa);
    for (const int64_t inner : {int64_t(1), int64_t(5), int64_t(19)})
      for (const int64_t at : {int64_t(0), int64_t(17), int64_t(40), int64_t(99)}) {
        std::vector<float> x(size_t(100 * inner), 1.0f);
        x[size_t(at * inner)] = std::nanf("");
        std::vector<float> y(static_cast<size_t>(inner));
        for (const ReduceKind k : {ReduceKind::max, ReduceKind::min}) {
          reduce_f32(k, x.data(), 1, 100, inner, y.data());
          EXPECT_TRUE(std::isnan(y[0])) << "inner " << inner << " NaN at " << at;
          if (inner > 1) EXPECT_EQ(y[1], 1.0f);
        }
      }
    for (const int64_t n :
         {int64_t(31), int64_t(32), int64_t(33), int64_t(47), int64_t(100), int64_t(1001)}) {
      std::vector<float> x(size_t(n * 3));
      for (auto& v : x) v = d(rng);
      std::vector<float> rows(3), cols(3);
      for (const bool mx : {true, false}) {
        reduce_f32(mx ? ReduceKind::max : ReduceKind::min, x.data(), 3, n, 1, rows.data());
        for (int64_t o = 0; o < 3; ++o) {
          const auto b = x.begin() + o * n;
          EXPECT_EQ(rows[size_t(o)], mx ? *std::max_element(b, b + n) : *std::min_element(b, b + n)) << n;
        }
      }
    }
    force_eltwise_isa(isa, true);
  }
}

// CumSum against a double-precision scan: inclusive and exclusive, forward and reverse, along the last axis
// (rows, four at a time: 1-6 rows) and inner ones (blocks of 64 values: 1, 63, 64, 65, 130), one and two
// threads; each output within a float rounding of the double sum.
TEST(X86Reduce, CumSumMatchesDoubleScan) {
  ThreadPool pool(2);
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.3f, 2.0f);
  struct Case {
    int64_t outer, len, inner;
  };
  const Case cases[] = {{1, 1, 1},  {1, 17, 1},  {3, 100, 1}, {6, 999, 1},  {5, 2, 1},    {1, 5, 63},
                        {2, 9, 64}, {1, 33, 65}, {3, 7, 130}, {1, 4096, 3}, {2, 300, 512}};
  int idx = 0;
  for (const Case& c : cases)
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        std::vector<float> x(size_t(c.outer * c.len * c.inner)), y(x.size(), -7.0f);
        for (auto& v : x) v = d(rng);
        cumsum_f32(x.data(), c.outer, c.len, c.inner, exclusive, reverse, y.data(),
                   (idx++ % 2) ? &pool : nullptr);
        for (int64_t o = 0; o < c.outer; ++o)
          for (int64_t i = 0; i < c.inner; ++i) {
            double acc = 0;
            for (int64_t s = 0; s < c.len; ++s) {
              const int64_t j = reverse ? c.len - 1 - s : s;
              const size_t at = size_t((o * c.len + j) * c.inner + i);
              const double before = acc;
              acc += x[at];
              const double want = exclusive ? before : acc;
              ASSERT_NEAR(y[at], want, 1e-6 * (1 + std::fabs(want)))
                  << c.outer << "x" << c.len << "x" << c.inner << " excl " << exclusive << " rev " << reverse;
            }
          }
      }
}

// ArgMax / ArgMin along rows against the reference's rule (the first NaN; else the first, or with `last` the
// last, extreme), on the portable and AVX2 paths: rows shorter and longer than the 32-float vector loop,
// ties (small integers), a NaN early or late, all-equal rows, one and two threads.
TEST(X86Reduce, ArgExtremeMatchesTheReferenceRule) {
  ThreadPool pool(2);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> small(-4, 4);
  for (EltIsa isa : {EltIsa::portable, EltIsa::avx2}) {
    if (!eltwise_isa_available(isa)) continue;
    force_eltwise_isa(isa);
    for (const int64_t len :
         {int64_t(1), int64_t(7), int64_t(31), int64_t(32), int64_t(33), int64_t(100), int64_t(4099)})
      for (const bool max : {true, false})
        for (const bool last : {false, true}) {
          const int64_t rows = 6;
          std::vector<float> x(size_t(rows * len));
          for (auto& v : x) v = float(small(rng));
          x[size_t(1 * len + len / 3)] = std::nanf("");               // row 1: a NaN
          if (len > 1) x[size_t(2 * len + len - 1)] = std::nanf("");  // row 2: a NaN at the end
          std::fill(x.begin() + 3 * len, x.begin() + 4 * len, 2.0f);  // row 3: all equal
          std::vector<int64_t> y(size_t(rows), -1);
          arg_extreme_f32(max, x.data(), rows, len, last, y.data(), len > 1000 ? &pool : nullptr);
          for (int64_t r = 0; r < rows; ++r) {
            const float* p = x.data() + r * len;
            int64_t best = 0;
            for (int64_t k = 1; k < len; ++k) {
              const float v = p[k], b = p[best];
              const bool better = std::isnan(b)   ? false
                                  : std::isnan(v) ? true
                                  : max           ? (last ? v >= b : v > b)
                                                  : (last ? v <= b : v < b);
              if (better) best = k;
            }
            EXPECT_EQ(y[size_t(r)], best)
                << "len " << len << " row " << r << " max " << max << " last " << last;
          }
        }
    force_eltwise_isa(isa, true);
  }
}
