// Reference DFT / STFT / window / MelWeightMatrix kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::run_ref;

std::vector<float> randf(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

TEST(RefSignal, DftOfRealSignalMatchesDefinitionAndInverts) {
  const int64_t B = 2, N = 7;
  const std::vector<float> xv = randf(size_t(B * N), 1);
  const Tensor x = Tensor::from_vector(xv, {B, N, 1});
  auto X = run_ref("DFT", {x, DataValue(), Tensor::scalar<int64_t>(1)})[0].tensor;
  ASSERT_EQ(X.shape(), (Shape{B, N, 2}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < N; ++k) {
      double re = 0, im = 0;
      for (int64_t n = 0; n < N; ++n) {
        const double a = -2 * std::numbers::pi * double(k * n) / double(N);
        re += xv[size_t(b * N + n)] * std::cos(a);
        im += xv[size_t(b * N + n)] * std::sin(a);
      }
      EXPECT_NEAR(X.data<float>()[(b * N + k) * 2], re, 1e-4);
      EXPECT_NEAR(X.data<float>()[(b * N + k) * 2 + 1], im, 1e-4);
    }
  auto back = run_ref("DFT", {X, DataValue(), Tensor::scalar<int64_t>(1)}, {{"inverse", attr_i(1)}})[0].tensor;
  for (int64_t i = 0; i < B * N; ++i) {
    EXPECT_NEAR(back.data<float>()[i * 2], xv[size_t(i)], 1e-5);
    EXPECT_NEAR(back.data<float>()[i * 2 + 1], 0.0, 1e-5);
  }
  // Onesided forward is the first N/2+1 bins; the onesided inverse (irfft) recovers x.
  auto half = run_ref("DFT", {x, DataValue(), Tensor::scalar<int64_t>(1)}, {{"onesided", attr_i(1)}})[0].tensor;
  ASSERT_EQ(half.shape(), (Shape{B, N / 2 + 1, 2}));
  auto r = run_ref("DFT", {half, Tensor::scalar<int64_t>(N), Tensor::scalar<int64_t>(1)},
                   {{"inverse", attr_i(1)}, {"onesided", attr_i(1)}})[0].tensor;
  ASSERT_EQ(r.shape(), (Shape{B, N, 1}));
  for (int64_t i = 0; i < B * N; ++i) EXPECT_NEAR(r.data<float>()[i], xv[size_t(i)], 1e-5);
  EXPECT_THROW(run_ref("DFT", {x, DataValue(), Tensor::scalar<int64_t>(2)}), Error);  // last axis
}

TEST(RefSignal, WindowsHaveKnownValues) {
  auto hann = run_ref("HannWindow", {Tensor::scalar<int64_t>(4)})[0].tensor;
  const std::vector<double> want{0, 0.5, 1, 0.5};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(hann.to_double_vector()[i], want[i], 1e-6);
  auto ham = run_ref("HammingWindow", {Tensor::scalar<int64_t>(5)}, {{"periodic", attr_i(0)}})[0].tensor;
  EXPECT_NEAR(ham.to_double_vector()[0], 25.0 / 46 - 21.0 / 46, 1e-6);
  EXPECT_NEAR(ham.to_double_vector()[2], 1.0, 1e-6);
  auto bl = run_ref("BlackmanWindow", {Tensor::scalar<int64_t>(3)}, {{"periodic", attr_i(0)}, {"output_datatype", attr_i(11)}})[0].tensor;
  ASSERT_EQ(bl.dtype(), DType::f64);
  EXPECT_NEAR(bl.data<double>()[0], 0.0, 1e-12);
  EXPECT_NEAR(bl.data<double>()[1], 1.0, 1e-12);
}

TEST(RefSignal, StftFramesAreWindowedDfts) {
  const int64_t L = 16, F = 8, step = 4;
  const std::vector<float> xv = randf(size_t(L), 3);
  const Tensor x = Tensor::from_vector(xv, {1, L, 1});
  auto win = run_ref("HannWindow", {Tensor::scalar<int64_t>(F)})[0].tensor;
  auto y = run_ref("STFT", {x, Tensor::scalar<int64_t>(step), win})[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{1, 3, F / 2 + 1, 2}));
  for (int64_t f = 0; f < 3; ++f) {
    std::vector<float> frame(static_cast<size_t>(F));
    for (int64_t j = 0; j < F; ++j) frame[size_t(j)] = xv[size_t(f * step + j)] * win.data<float>()[j];
    auto d = run_ref("DFT", {Tensor::from_vector(frame, {1, F, 1}), DataValue(), Tensor::scalar<int64_t>(1)},
                     {{"onesided", attr_i(1)}})[0].tensor;
    for (int64_t i = 0; i < (F / 2 + 1) * 2; ++i) EXPECT_NEAR(y.data<float>()[f * (F / 2 + 1) * 2 + i], d.data<float>()[i], 1e-5);
  }
}

TEST(RefSignal, MelWeightMatrixShapeAndTriangles) {
  auto m = run_ref("MelWeightMatrix", {Tensor::scalar<int64_t>(8), Tensor::scalar<int64_t>(64), Tensor::scalar<int64_t>(8000),
                                       Tensor::scalar<float>(0.f), Tensor::scalar<float>(4000.f)})[0].tensor;
  ASSERT_EQ(m.shape(), (Shape{33, 8}));
  for (int64_t b = 0; b < 8; ++b) {
    double mx = 0;
    for (int64_t s = 0; s < 33; ++s) {
      const double v = m.data<float>()[s * 8 + b];
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
      mx = std::max(mx, v);
    }
    EXPECT_EQ(mx, 1.0);  // every triangle peaks at 1
  }
}

}  // namespace
}  // namespace tessera::kernels::ref
