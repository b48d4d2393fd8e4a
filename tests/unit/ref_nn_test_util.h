// Helpers for the nn reference-kernel tests (ref_{linalg,conv,pool,
// normalization,softmax,attention}_test.cpp): random tensors, value access,
// comparisons against naive double computations written in the tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_harness.h"

namespace tessera::testing::nn {

inline Tensor rand_tensor(Shape shape, uint32_t seed, DType dt = DType::f32, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dt, std::move(shape));
  dispatch_dtype(dt, [&]<typename T>() {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) {
    } else {
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = from_double<T>(dist(rng));
    }
  });
  return t;
}

inline Tensor f32(std::vector<float> v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }
inline Tensor i64(std::vector<int64_t> v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }

inline std::vector<double> vals(const Tensor& t) { return t.to_double_vector(); }
inline std::vector<double> vals(const DataValue& v) { return v.tensor.to_double_vector(); }

// Element-wise closeness: |a - e| <= atol + rtol * |e| (NaN matches NaN).
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol = 1e-5,
                         double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "at " << i;
  }
}

inline Attribute ints(std::vector<int64_t> v) { return attr_ints(std::move(v)); }

}  // namespace tessera::testing::nn
