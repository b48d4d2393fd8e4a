// Reference RNN / GRU / LSTM kernels: closed-form cases and structural identities.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::attr_s;
using testing::run_ref;

std::vector<float> randf(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-0.7f, 0.7f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

Attribute strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::strings;
  a.strings = std::move(v);
  return a;
}

TEST(RefRnn, RnnReluIdentityWeightsIsRelu) {
  const int64_t S = 3, B = 2, H = 4;
  const std::vector<float> xv = randf(size_t(S * B * H), 1);
  std::vector<float> w(size_t(H * H), 0.f);
  for (int64_t i = 0; i < H; ++i) w[size_t(i * H + i)] = 1.f;
  const Tensor x = Tensor::from_vector(xv, {S, B, H});
  auto r = run_ref("RNN", {x, Tensor::from_vector(w, {1, H, H}), Tensor(DType::f32, {1, H, H})},
                   {{"hidden_size", attr_i(H)}, {"activations", strings({"Relu"})}}, 2);
  ASSERT_EQ(r[0].tensor.shape(), (Shape{S, 1, B, H}));
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_FLOAT_EQ(r[0].tensor.data<float>()[i], std::max(xv[i], 0.f));
  ASSERT_EQ(r[1].tensor.shape(), (Shape{1, B, H}));
  for (int64_t i = 0; i < B * H; ++i) EXPECT_FLOAT_EQ(r[1].tensor.data<float>()[i], std::max(xv[size_t(2 * B * H + i)], 0.f));
}

TEST(RefRnn, GruZeroWeightsHalvesState) {
  const int64_t S = 2, B = 1, I = 3, H = 2;
  const Tensor x = Tensor::from_vector(randf(size_t(S * B * I), 2), {S, B, I});
  const Tensor h0 = Tensor::from_vector<float>({0.8f, -0.4f}, {1, B, H});
  auto r = run_ref("GRU", {x, Tensor(DType::f32, {1, 3 * H, I}), Tensor(DType::f32, {1, 3 * H, H}), DataValue(), DataValue(), h0},
                   {}, 2);
  EXPECT_FLOAT_EQ(r[1].tensor.data<float>()[0], 0.2f);
  EXPECT_FLOAT_EQ(r[1].tensor.data<float>()[1], -0.1f);
}

TEST(RefRnn, LstmReverseDirectionIsForwardOnReversedInput) {
  const int64_t S = 4, B = 2, I = 3, H = 5;
  const std::vector<float> xv = randf(size_t(S * B * I), 3);
  const std::vector<float> w = randf(size_t(4 * H * I), 4), rr = randf(size_t(4 * H * H), 5), b = randf(size_t(8 * H), 6);
  const std::vector<float> p = randf(size_t(3 * H), 7);
  auto twice = [](const std::vector<float>& v) {
    std::vector<float> o = v;
    o.insert(o.end(), v.begin(), v.end());
    return o;
  };
  const Tensor x = Tensor::from_vector(xv, {S, B, I});
  auto bi = run_ref("LSTM", {x, Tensor::from_vector(twice(w), {2, 4 * H, I}), Tensor::from_vector(twice(rr), {2, 4 * H, H}),
                             Tensor::from_vector(twice(b), {2, 8 * H}), DataValue(), DataValue(), DataValue(),
                             Tensor::from_vector(twice(p), {2, 3 * H})},
                    {{"direction", attr_s("bidirectional")}}, 3);
  std::vector<float> xr(xv.size());
  for (int64_t t = 0; t < S; ++t)
    for (int64_t i = 0; i < B * I; ++i) xr[size_t(t * B * I + i)] = xv[size_t((S - 1 - t) * B * I + i)];
  auto fw = run_ref("LSTM", {Tensor::from_vector(xr, {S, B, I}), Tensor::from_vector(w, {1, 4 * H, I}),
                             Tensor::from_vector(rr, {1, 4 * H, H}), Tensor::from_vector(b, {1, 8 * H}), DataValue(),
                             DataValue(), DataValue(), Tensor::from_vector(p, {1, 3 * H})},
                    {}, 3);
  ASSERT_EQ(bi[0].tensor.shape(), (Shape{S, 2, B, H}));
  for (int64_t t = 0; t < S; ++t)
    for (int64_t i = 0; i < B * H; ++i)
      EXPECT_NEAR(bi[0].tensor.data<float>()[(t * 2 + 1) * B * H + i], fw[0].tensor.data<float>()[(S - 1 - t) * B * H + i], 1e-6);
  for (int64_t i = 0; i < B * H; ++i) {
    EXPECT_NEAR(bi[1].tensor.data<float>()[B * H + i], fw[1].tensor.data<float>()[i], 1e-6);
    EXPECT_NEAR(bi[2].tensor.data<float>()[B * H + i], fw[2].tensor.data<float>()[i], 1e-6);
  }
}

TEST(RefRnn, GruLayoutAndSequenceLens) {
  const int64_t S = 4, B = 3, I = 2, H = 3;
  const std::vector<float> xv = randf(size_t(S * B * I), 8);
  const Tensor w = Tensor::from_vector(randf(size_t(3 * H * I), 9), {1, 3 * H, I});
  const Tensor r = Tensor::from_vector(randf(size_t(3 * H * H), 10), {1, 3 * H, H});
  const Tensor lens = Tensor::from_vector<int32_t>({4, 2, 0});
  AttrMap at{{"linear_before_reset", attr_i(1)}};
  auto y0 = run_ref("GRU", {Tensor::from_vector(xv, {S, B, I}), w, r, DataValue(), lens}, at, 2);
  // Steps past a batch entry's length are zero; Y_h is its last valid step.
  for (int64_t h = 0; h < H; ++h) {
    EXPECT_EQ(y0[0].tensor.data<float>()[(2 * B + 1) * H + h], 0.f);
    EXPECT_EQ(y0[1].tensor.data<float>()[1 * H + h], y0[0].tensor.data<float>()[(1 * B + 1) * H + h]);
    EXPECT_EQ(y0[1].tensor.data<float>()[2 * H + h], 0.f);
  }
  std::vector<float> xt(xv.size());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < I; ++i) xt[size_t((b * S + s) * I + i)] = xv[size_t((s * B + b) * I + i)];
  at["layout"] = attr_i(1);
  auto y1 = run_ref("GRU", {Tensor::from_vector(xt, {B, S, I}), w, r, DataValue(), lens}, at, 2);
  ASSERT_EQ(y1[0].tensor.shape(), (Shape{B, S, 1, H}));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        EXPECT_EQ(y1[0].tensor.data<float>()[(b * S + s) * H + h], y0[0].tensor.data<float>()[(s * B + b) * H + h]);
  EXPECT_THROW(run_ref("GRU", {Tensor::from_vector(xv, {S, B, I}), Tensor(DType::f32, {1, 3 * H, I + 1}), r}, {}, 2), Error);
}

}  // namespace
}  // namespace tessera::kernels::ref
