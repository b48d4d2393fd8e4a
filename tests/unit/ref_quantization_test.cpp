// Reference quantization kernels against direct formulas on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::run_ref;

std::vector<float> randf(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}
template <typename T>
std::vector<T> vals(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

TEST(RefQuantization, QuantizeRoundsHalfToEvenAndSaturates) {
  const Tensor x = Tensor::from_vector<float>({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.f, -300.f, 3.2f});
  const Tensor s = Tensor::scalar<float>(1.0f);
  const Tensor zu = Tensor::scalar<uint8_t>(10);
  auto y = run_ref("QuantizeLinear", {x, s, zu})[0].tensor;
  EXPECT_EQ(vals<uint8_t>(y), (std::vector<uint8_t>{10, 12, 12, 10, 8, 255, 0, 13}));
  const Tensor zi = Tensor::scalar<int8_t>(0);
  auto yi = run_ref("QuantizeLinear", {x, s, zi})[0].tensor;
  EXPECT_EQ(vals<int8_t>(yi), (std::vector<int8_t>{0, 2, 2, 0, -2, 127, -128, 3}));
}

TEST(RefQuantization, PerAxisQuantizeDequantizeRoundTrip) {
  const Shape shp{3, 4, 5};
  const std::vector<float> xv = randf(60, -4.f, 4.f, 1);
  const std::vector<float> sv{0.02f, 0.05f, 0.1f, 0.03f};
  const std::vector<uint8_t> zv{128, 100, 120, 130};
  const Tensor x = Tensor::from_vector(xv, shp), s = Tensor::from_vector(sv), z = Tensor::from_vector(zv);
  auto q = run_ref("QuantizeLinear", {x, s, z}, {{"axis", attr_i(1)}})[0].tensor;
  ASSERT_EQ(q.dtype(), DType::u8);
  for (int64_t i = 0; i < 60; ++i) {
    const int64_t c = (i / 5) % 4;
    const float want = std::clamp(std::nearbyint(xv[size_t(i)] / sv[size_t(c)]) + float(zv[size_t(c)]), 0.f, 255.f);
    ASSERT_EQ(float(q.data<uint8_t>()[i]), want) << i;
  }
  auto d = run_ref("DequantizeLinear", {q, s, z}, {{"axis", attr_i(1)}})[0].tensor;
  ASSERT_EQ(d.dtype(), DType::f32);
  for (int64_t i = 0; i < 60; ++i) {
    const int64_t c = (i / 5) % 4;
    const float v = xv[size_t(i)], sc = sv[size_t(c)];
    const float lo = (0.f - zv[size_t(c)]) * sc, hi = (255.f - zv[size_t(c)]) * sc;
    if (v > lo && v < hi) EXPECT_LE(std::abs(d.data<float>()[i] - v), sc / 2 + 1e-6f) << i;
  }
}

TEST(RefQuantization, BlockedDequantize) {
  const Shape shp{2, 5};
  const std::vector<int8_t> xv{1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  const std::vector<float> sv{1.f, 2.f, 3.f, 4.f, 5.f, 6.f};  // [2, 3] with block 2 along axis 1
  const Tensor x = Tensor::from_vector(xv, shp), s = Tensor::from_vector(sv, {2, 3});
  auto y = run_ref("DequantizeLinear", {x, s}, {{"axis", attr_i(1)}, {"block_size", attr_i(2)}})[0].tensor;
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 2, 6, 8, 15, -4, -8, -15, -20, -30}));
  // A scale whose blocked shape does not match is refused.
  const Tensor bad = Tensor::from_vector(sv, {3, 2});
  EXPECT_THROW(run_ref("DequantizeLinear", {x, bad}, {{"axis", attr_i(1)}, {"block_size", attr_i(2)}}), Error);
}

TEST(RefQuantization, Float8AndInt4Outputs) {
  const Tensor x = Tensor::from_vector<float>({0.f, 1.f, 1000.f, -1000.f, 9.f});
  const Tensor s = Tensor::scalar<float>(1.0f);
  Tensor z8(DType::f8e4m3fn, {});
  auto y = run_ref("QuantizeLinear", {x, s, z8})[0].tensor;
  ASSERT_EQ(y.dtype(), DType::f8e4m3fn);
  EXPECT_EQ(y.at_double(2), 448.0);  // saturated
  EXPECT_EQ(y.at_double(3), -448.0);
  Tensor z4(DType::i4, {});
  auto q4 = run_ref("QuantizeLinear", {x, s, z4})[0].tensor;
  EXPECT_EQ(q4.to_int_vector(), (std::vector<int64_t>{0, 1, 7, -8, 7}));
}

TEST(RefQuantization, DynamicQuantizeLinearCoversRange) {
  const std::vector<float> xv = randf(100, -3.f, 5.f, 2);
  auto r = run_ref("DynamicQuantizeLinear", {Tensor::from_vector(xv)}, {}, 3);
  const float scale = r[1].tensor.data<float>()[0];
  const int zp = r[2].tensor.data<uint8_t>()[0];
  float mx = 0, mn = 0;
  for (float v : xv) mx = std::max(mx, v), mn = std::min(mn, v);
  EXPECT_NEAR(scale, (mx - mn) / 255.f, 1e-6f);
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR((float(r[0].tensor.data<uint8_t>()[i]) - float(zp)) * scale, xv[i], scale * 0.51f + 1e-5f);
}

TEST(RefQuantization, MatMulIntegerAndQLinearMatMul) {
  std::mt19937 g(3);
  std::uniform_int_distribution<int> d(0, 255);
  const int64_t B = 2, M = 3, K = 5, N = 4;
  std::vector<uint8_t> a(size_t(B * M * K)), b(size_t(K * N));
  for (auto& v : a) v = uint8_t(d(g));
  for (auto& v : b) v = uint8_t(d(g));
  const Tensor ta = Tensor::from_vector(a, {B, M, K}), tb = Tensor::from_vector(b, {K, N});
  const Tensor za = Tensor::scalar<uint8_t>(7);
  const Tensor zb = Tensor::from_vector<uint8_t>({1, 2, 3, 4});  // per column
  auto y = run_ref("MatMulInteger", {ta, tb, za, zb})[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{B, M, N}));
  std::vector<int32_t> want(size_t(B * M * N));
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int32_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += (a[size_t((bb * M + m) * K + k)] - 7) * (b[size_t(k * N + n)] - (n + 1));
        want[size_t((bb * M + m) * N + n)] = acc;
      }
  EXPECT_EQ(vals<int32_t>(y), want);
  const Tensor s1 = Tensor::scalar<float>(0.01f), s2 = Tensor::scalar<float>(0.02f), s3 = Tensor::scalar<float>(5.f);
  const Tensor zy = Tensor::scalar<uint8_t>(100), zb1 = Tensor::scalar<uint8_t>(3);
  auto q = run_ref("QLinearMatMul", {ta, s1, za, tb, s2, zb1, s3, zy})[0].tensor;
  auto yi = run_ref("MatMulInteger", {ta, tb, za, zb1})[0].tensor;
  for (int64_t i = 0; i < q.numel(); ++i) {
    const double v = std::clamp(std::nearbyint(yi.data<int32_t>()[i] * double(0.01f * 0.02f / 5.f) + 100), 0.0, 255.0);
    EXPECT_EQ(double(q.data<uint8_t>()[i]), v) << i;
  }
}

TEST(RefQuantization, ConvIntegerMatchesDirectSum) {
  std::mt19937 g(4);
  std::uniform_int_distribution<int> d(-20, 20);
  const Shape xs{1, 2, 4, 5}, ws{3, 2, 2, 3};
  std::vector<int8_t> x(40), w(36);
  for (auto& v : x) v = int8_t(d(g));
  for (auto& v : w) v = int8_t(d(g));
  const Tensor tx = Tensor::from_vector(x, xs), tw = Tensor::from_vector(w, ws);
  const Tensor zx = Tensor::scalar<int8_t>(2);
  auto y = run_ref("ConvInteger", {tx, tw, zx}, {{"pads", testing::attr_ints({1, 0, 0, 1})}})[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{1, 3, 4, 4}));
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t oh = 0; oh < 4; ++oh)
      for (int64_t ow = 0; ow < 4; ++ow) {
        int32_t acc = 0;
        for (int64_t c = 0; c < 2; ++c)
          for (int64_t kh = 0; kh < 2; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t ih = oh - 1 + kh, iw = ow + kw;
              if (ih < 0 || ih >= 4 || iw >= 5) continue;
              acc += (x[size_t((c * 4 + ih) * 5 + iw)] - 2) * w[size_t(((m * 2 + c) * 2 + kh) * 3 + kw)];
            }
        EXPECT_EQ(y.data<int32_t>()[(m * 4 + oh) * 4 + ow], acc);
      }
  const Tensor bad(DType::i8, {3, 3, 2, 3});  // channel mismatch
  EXPECT_THROW(run_ref("ConvInteger", {tx, bad}), Error);
}

}  // namespace
}  // namespace tessera::kernels::ref
