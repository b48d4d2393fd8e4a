// Reference kernels of the normalization family against naive double loops.
#include "ref_nn_test_util.h"

namespace tessera::testing {
namespace {
using namespace nn;

// Naive normalization of `outer` rows of `len` contiguous values.
std::vector<double> naive_rows(const std::vector<double>& v, int64_t outer, int64_t len, double eps, bool rms,
                               std::vector<double>* means = nullptr, std::vector<double>* invs = nullptr) {
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < len; ++i) mean += v[size_t(o * len + i)];
      mean /= double(len);
    }
    for (int64_t i = 0; i < len; ++i) var += (v[size_t(o * len + i)] - mean) * (v[size_t(o * len + i)] - mean);
    var /= double(len);
    const double inv = 1 / std::sqrt(var + eps);
    if (means) means->push_back(mean);
    if (invs) invs->push_back(inv);
    for (int64_t i = 0; i < len; ++i) out[size_t(o * len + i)] = (v[size_t(o * len + i)] - mean) * inv;
  }
  return out;
}

TEST(RefNormalization, LayerNormAllAxes) {
  Tensor x = rand_tensor({2, 3, 5}, 1);
  for (int64_t axis : {-3, -2, -1, 0, 1, 2}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Shape ns(x.shape().begin() + a, x.shape().end());
    Tensor scale = rand_tensor(ns, 2), bias = rand_tensor(ns, 3);
    const int64_t len = shape_numel(ns), outer = 30 / len;
    auto out = run_ref("LayerNormalization", {x, scale, bias}, {{"axis", attr_i(axis)}, {"epsilon", attr_f(1e-3f)}}, 3);
    std::vector<double> means, invs;
    auto want = naive_rows(vals(x), outer, len, 1e-3, false, &means, &invs);
    const auto vs = vals(scale), vb = vals(bias);
    for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * vs[i % size_t(len)] + vb[i % size_t(len)];
    expect_close(vals(out[0]), want);
    expect_close(vals(out[1]), means);
    expect_close(vals(out[2]), invs);
    Shape stat(x.shape().begin(), x.shape().begin() + a);
    stat.resize(3, 1);
    EXPECT_EQ(out[1].tensor.shape(), stat);
  }
  // Scale broadcast from a lower rank; B optional.
  auto out = run_ref("LayerNormalization", {x, f32({2.0f}, {1})}, {}, 1);
  auto want = naive_rows(vals(x), 6, 5, 1e-5, false);
  for (double& w : want) w *= 2;
  expect_close(vals(out[0]), want);
  EXPECT_THROW(run_ref("LayerNormalization", {x, rand_tensor({4}, 1)}), Error);
}

TEST(RefNormalization, RmsNorm) {
  Tensor x = rand_tensor({3, 2, 4}, 4), scale = rand_tensor({2, 4}, 5);
  auto out = run_ref("RMSNormalization", {x, scale}, {{"axis", attr_i(1)}});
  auto want = naive_rows(vals(x), 3, 8, 1e-5, true);
  const auto vs = vals(scale);
  for (size_t i = 0; i < want.size(); ++i) want[i] *= vs[i % 8];
  expect_close(vals(out[0]), want);
}

TEST(RefNormalization, BatchNormInferenceAndTraining) {
  Tensor x = rand_tensor({2, 3, 2, 2}, 6), s = rand_tensor({3}, 7), b = rand_tensor({3}, 8);
  Tensor mean = rand_tensor({3}, 9), var = rand_tensor({3}, 10, DType::f32, 0.5, 2.0);
  auto out = run_ref("BatchNormalization", {x, s, b, mean, var}, {{"epsilon", attr_f(1e-2f)}});
  const auto vx = vals(x), vs = vals(s), vb = vals(b), vm = vals(mean), vv = vals(var);
  std::vector<double> want;
  for (int64_t i = 0; i < 24; ++i) {
    const size_t c = size_t((i / 4) % 3);
    want.push_back((vx[size_t(i)] - vm[c]) / std::sqrt(vv[c] + 1e-2) * vs[c] + vb[c]);
  }
  expect_close(vals(out[0]), want);
  auto tr = run_ref("BatchNormalization", {x, s, b, mean, var}, {{"training_mode", attr_i(1)}, {"momentum", attr_f(0.8f)}}, 3);
  for (size_t c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) m += vx[size_t((n * 3 + int64_t(c)) * 4 + i)];
    m /= 8;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) v += std::pow(vx[size_t((n * 3 + int64_t(c)) * 4 + i)] - m, 2);
    v /= 8;
    EXPECT_NEAR(vals(tr[1])[c], vm[c] * 0.8 + m * 0.2, 1e-5);
    EXPECT_NEAR(vals(tr[2])[c], vv[c] * 0.8 + v * 0.2, 1e-5);
    EXPECT_NEAR(vals(tr[0])[c * 4], (vx[c * 4] - m) / std::sqrt(v + 1e-5) * vs[c] + vb[c], 1e-5);
  }
  EXPECT_THROW(run_ref("BatchNormalization", {x, rand_tensor({2}, 1), b, mean, var}), Error);
}

TEST(RefNormalization, InstanceAndGroupNorm) {
  Tensor x = rand_tensor({2, 4, 3, 3}, 11), s = rand_tensor({4}, 12), b = rand_tensor({4}, 13);
  auto in = run_ref("InstanceNormalization", {x, s, b});
  auto want = naive_rows(vals(x), 8, 9, 1e-5, false);
  const auto vs = vals(s), vb = vals(b);
  for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * vs[(i / 9) % 4] + vb[(i / 9) % 4];
  expect_close(vals(in[0]), want);
  // GroupNormalization with one group per channel is InstanceNormalization.
  auto gn = run_ref("GroupNormalization", {x, s, b}, {{"num_groups", attr_i(4)}}, 1, 21);
  expect_close(vals(gn[0]), want);
  // Two groups of two channels.
  auto g2 = run_ref("GroupNormalization", {x, s, b}, {{"num_groups", attr_i(2)}, {"epsilon", attr_f(1e-3f)}}, 1, 21);
  auto w2 = naive_rows(vals(x), 4, 18, 1e-3, false);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = w2[i] * vs[(i / 9) % 4] + vb[(i / 9) % 4];
  expect_close(vals(g2[0]), w2);
  // Opset 18: scale / bias per group.
  Tensor sg = rand_tensor({2}, 14), bg = rand_tensor({2}, 15);
  auto g18 = run_ref("GroupNormalization", {x, sg, bg}, {{"num_groups", attr_i(2)}}, 1, 18);
  auto w18 = naive_rows(vals(x), 4, 18, 1e-5, false);
  const auto vsg = vals(sg), vbg = vals(bg);
  for (size_t i = 0; i < w18.size(); ++i) w18[i] = w18[i] * vsg[(i / 18) % 2] + vbg[(i / 18) % 2];
  expect_close(vals(g18[0]), w18);
  EXPECT_THROW(run_ref("GroupNormalization", {x, s, b}, {{"num_groups", attr_i(3)}}), Error);
}

TEST(RefNormalization, LpNormMvnLrn) {
  Tensor x = rand_tensor({3, 4}, 16);
  const auto v = vals(x);
  for (int64_t p : {1, 2}) {
    auto out = run_ref("LpNormalization", {x}, {{"axis", attr_i(0)}, {"p", attr_i(p)}});
    for (int64_t j = 0; j < 4; ++j) {
      double n = 0;
      for (int64_t i = 0; i < 3; ++i) n += p == 1 ? std::fabs(v[size_t(i * 4 + j)]) : v[size_t(i * 4 + j)] * v[size_t(i * 4 + j)];
      if (p == 2) n = std::sqrt(n);
      for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(vals(out[0])[size_t(i * 4 + j)], v[size_t(i * 4 + j)] / n, 1e-6);
    }
  }
  EXPECT_EQ(vals(run_ref("LpNormalization", {f32({0, 0}, {2})})[0])[0], 0.0);
  // MVN over the default axes [0, 2, 3]: each channel ends with mean 0, variance ~1.
  Tensor y = rand_tensor({2, 3, 2, 2}, 17);
  auto mvn = run_ref("MeanVarianceNormalization", {y});
  const auto vm = vals(mvn[0]);
  for (int64_t c = 0; c < 3; ++c) {
    double m = 0, s = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) m += vm[size_t((n * 3 + c) * 4 + i)];
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) s += vm[size_t((n * 3 + c) * 4 + i)] * vm[size_t((n * 3 + c) * 4 + i)];
    EXPECT_NEAR(m / 8, 0.0, 1e-6);
    EXPECT_NEAR(s / 8, 1.0, 1e-5);
  }
  // LRN with size 3 across 5 channels.
  Tensor z = rand_tensor({1, 5, 2, 1}, 18);
  auto lrn = run_ref("LRN", {z}, {{"size", attr_i(3)}, {"alpha", attr_f(0.5f)}, {"beta", attr_f(0.75f)}, {"bias", attr_f(2.0f)}});
  const auto vz = vals(z);
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t i = 0; i < 2; ++i) {
      double sq = 0;
      for (int64_t k = std::max<int64_t>(0, c - 1); k <= std::min<int64_t>(4, c + 1); ++k) sq += vz[size_t(k * 2 + i)] * vz[size_t(k * 2 + i)];
      EXPECT_NEAR(vals(lrn[0])[size_t(c * 2 + i)], vz[size_t(c * 2 + i)] / std::pow(2.0 + 0.5 / 3 * sq, 0.75), 1e-6);
    }
}

TEST(RefNormalization, HalfPrecisionIo) {
  Tensor x = rand_tensor({2, 8}, 19, DType::f16), s = rand_tensor({8}, 20, DType::f16);
  auto out = run_ref("LayerNormalization", {x, s}, {}, 1);
  EXPECT_EQ(out[0].tensor.dtype(), DType::f16);
  auto want = naive_rows(vals(x), 2, 8, 1e-5, false);
  const auto vs = vals(s);
  for (size_t i = 0; i < want.size(); ++i) want[i] *= vs[i % 8];
  expect_close(vals(out[0]), want, 2e-3, 2e-3);
}

TEST(RefNormalization, ShapeInference) {
  auto ln = infer_node("LayerNormalization", {{DType::f16, {2, 3, 5}}, {DType::f16, {3, 5}}}, {{"axis", attr_i(1)}}, 3);
  EXPECT_EQ(static_shape(ln[0]), (Shape{2, 3, 5}));
  EXPECT_EQ(ln[0].elem, DType::f16);
  EXPECT_EQ(static_shape(ln[1]), (Shape{2, 1, 1}));
  EXPECT_EQ(ln[1].elem, DType::f32);  // stash_type default float
  auto bn = infer_node("BatchNormalization",
                       {{DType::f32, {2, 3, 4}}, {DType::f32, {3}}, {DType::f32, {3}}, {DType::f32, {3}}, {DType::f32, {3}}},
                       {{"training_mode", attr_i(1)}}, 3);
  EXPECT_EQ(static_shape(bn[0]), (Shape{2, 3, 4}));
  EXPECT_EQ(static_shape(bn[2]), (Shape{3}));
  for (const char* op : {"RMSNormalization", "LpNormalization", "MeanVarianceNormalization", "LRN"}) {
    std::vector<InferInput> in{{DType::f32, {2, 3, 4, 4}}};
    if (std::string(op) == "RMSNormalization") in.push_back({DType::f32, {4}});
    auto t = infer_node(op, in, std::string(op) == "LRN" ? AttrMap{{"size", attr_i(3)}} : AttrMap{});
    EXPECT_EQ(static_shape(t[0]), (Shape{2, 3, 4, 4})) << op;
  }
  EXPECT_THROW(infer_node("GroupNormalization", {{DType::f32, {2, 6, 4}}, {DType::f32, {6}}, {DType::f32, {6}}},
                          {{"num_groups", attr_i(4)}}),
               Error);
  EXPECT_THROW(infer_node("LayerNormalization", {{DType::f32, {2, 3}}, {DType::f32, {3}}}, {{"axis", attr_i(2)}}), Error);
}

}  // namespace
}  // namespace tessera::testing
