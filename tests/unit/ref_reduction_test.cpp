// Reference kernels of the reduction family against independent loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera {
namespace {

using testing::attr_i;
using testing::run_ref;

Tensor random_f32(Shape s, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  Tensor t(DType::f32, std::move(s));
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

Tensor axes(std::vector<int64_t> a) { return Tensor::from_vector(a, {int64_t(a.size())}); }

// Naive reduction of a [A, B, C] tensor over axis 1, for checking.
std::vector<double> reduce_axis1(const Tensor& x, const std::string& op) {
  const int64_t A = x.dim(0), B = x.dim(1), C = x.dim(2);
  std::vector<double> out;
  for (int64_t a = 0; a < A; ++a)
    for (int64_t c = 0; c < C; ++c) {
      std::vector<double> v;
      for (int64_t b = 0; b < B; ++b) v.push_back(x.data<float>()[(a * B + b) * C + c]);
      double r = 0;
      if (op == "ReduceSum") for (double e : v) r += e;
      else if (op == "ReduceMean") { for (double e : v) r += e; r /= double(v.size()); }
      else if (op == "ReduceMax") { r = -INFINITY; for (double e : v) r = std::max(r, e); }
      else if (op == "ReduceMin") { r = INFINITY; for (double e : v) r = std::min(r, e); }
      else if (op == "ReduceProd") { r = 1; for (double e : v) r *= e; }
      else if (op == "ReduceL1") for (double e : v) r += std::abs(e);
      else if (op == "ReduceL2") { for (double e : v) r += e * e; r = std::sqrt(r); }
      else if (op == "ReduceSumSquare") for (double e : v) r += e * e;
      else if (op == "ReduceLogSum") { for (double e : v) r += e; r = std::log(r); }
      else if (op == "ReduceLogSumExp") { for (double e : v) r += std::exp(e); r = std::log(r); }
      out.push_back(r);
    }
  return out;
}

TEST(RefReduction, AllOpsAxis1KeepAndDrop) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    const bool positive = std::string(op) == "ReduceLogSum";
    Tensor x = random_f32({3, 5, 4}, 7, positive ? 0.1f : -2.f, 2.f);
    const auto want = reduce_axis1(x, op);
    for (int keep : {0, 1}) {
      for (int64_t ax : {1, -2}) {
        auto out = run_ref(op, {x, axes({ax})}, {{"keepdims", attr_i(keep)}});
        const Tensor& y = out[0].tensor;
        EXPECT_EQ(y.shape(), keep ? Shape({3, 1, 4}) : Shape({3, 4})) << op;
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_NEAR(y.data<float>()[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << op << " " << i;
      }
    }
  }
}

TEST(RefReduction, DefaultAxesAndNoop) {
  Tensor x = random_f32({2, 3}, 1);
  double s = 0;
  for (float v : x.values<float>()) s += v;
  auto out = run_ref("ReduceSum", {x});
  EXPECT_EQ(out[0].tensor.shape(), Shape({1, 1}));
  EXPECT_NEAR(out[0].tensor.data<float>()[0], s, 1e-5);
  // Empty axes input with noop_with_empty_axes: identity.
  out = run_ref("ReduceSum", {x, axes({})}, {{"noop_with_empty_axes", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.shape(), Shape({2, 3}));
  EXPECT_EQ(out[0].tensor.data<float>()[4], x.data<float>()[4]);
  // Empty axes without noop: reduce all.
  out = run_ref("ReduceMax", {x, axes({})}, {{"keepdims", attr_i(0)}});
  EXPECT_EQ(out[0].tensor.rank(), 0);
}

TEST(RefReduction, EmptySetGivesIdentity) {
  Tensor x(DType::f32, {2, 0, 4});
  struct Case { const char* op; float want; };
  for (auto c : {Case{"ReduceSum", 0.f}, Case{"ReduceProd", 1.f}, Case{"ReduceMax", -INFINITY},
                 Case{"ReduceMin", INFINITY}, Case{"ReduceL2", 0.f}, Case{"ReduceLogSumExp", -INFINITY},
                 Case{"ReduceLogSum", -INFINITY}}) {
    auto out = run_ref(c.op, {x, axes({1})});
    ASSERT_EQ(out[0].tensor.shape(), Shape({2, 1, 4})) << c.op;
    for (float v : out[0].tensor.values<float>()) EXPECT_EQ(v, c.want) << c.op;
  }
  // A zero-size axis that is not reduced gives an empty result.
  auto out = run_ref("ReduceSum", {x, axes({2})});
  EXPECT_EQ(out[0].tensor.shape(), Shape({2, 0, 1}));
}

TEST(RefReduction, IntegerAndBool) {
  Tensor x = Tensor::from_vector<int64_t>({5, -3, 7, 2, 2, -9}, {2, 3});
  auto out = run_ref("ReduceMax", {x, axes({1})}, {{"keepdims", attr_i(0)}});
  EXPECT_EQ(out[0].tensor.data<int64_t>()[0], 7);
  EXPECT_EQ(out[0].tensor.data<int64_t>()[1], 2);
  out = run_ref("ReduceProd", {x, axes({0})}, {{"keepdims", attr_i(0)}});
  EXPECT_EQ(out[0].tensor.data<int64_t>()[2], -63);
  Tensor b = Tensor::from_vector<bool>({true, false, false, false}, {2, 2});
  out = run_ref("ReduceMax", {b, axes({1})}, {{"keepdims", attr_i(0)}});
  EXPECT_EQ(out[0].tensor.dtype(), DType::boolean);
  EXPECT_TRUE(out[0].tensor.data<bool>()[0]);
  EXPECT_FALSE(out[0].tensor.data<bool>()[1]);
  out = run_ref("ReduceMin", {b, axes({1})}, {{"keepdims", attr_i(0)}});
  EXPECT_FALSE(out[0].tensor.data<bool>()[0]);
}

TEST(RefReduction, NaNPropagates) {
  Tensor x = Tensor::from_vector<float>({1.f, NAN, 3.f}, {3});
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceSum"}) {
    auto out = run_ref(op, {x});
    EXPECT_TRUE(std::isnan(out[0].tensor.data<float>()[0])) << op;
  }
}

TEST(RefReduction, BadAxisIsAnError) {
  Tensor x = random_f32({2, 3}, 2);
  EXPECT_THROW(run_ref("ReduceSum", {x, axes({2})}), Error);
  EXPECT_THROW(run_ref("ReduceSum", {x, axes({1, -1})}), Error);
}

TEST(RefReduction, ArgMaxArgMin) {
  Tensor x = Tensor::from_vector<float>({1, 5, 5, 2, 0, 0}, {2, 3});
  auto out = run_ref("ArgMax", {x}, {{"axis", attr_i(1)}, {"keepdims", attr_i(0)}});
  EXPECT_EQ(out[0].tensor.shape(), Shape({2}));
  EXPECT_EQ(out[0].tensor.data<int64_t>()[0], 1);
  EXPECT_EQ(out[0].tensor.data<int64_t>()[1], 0);
  out = run_ref("ArgMax", {x}, {{"axis", attr_i(-1)}, {"select_last_index", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.shape(), Shape({2, 1}));
  EXPECT_EQ(out[0].tensor.data<int64_t>()[0], 2);
  out = run_ref("ArgMin", {x}, {{"axis", attr_i(1)}, {"select_last_index", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.data<int64_t>()[1], 2);
  out = run_ref("ArgMin", {x}, {{"axis", attr_i(0)}});
  EXPECT_EQ(out[0].tensor.shape(), Shape({1, 3}));
  EXPECT_EQ(out[0].tensor.data<int64_t>()[0], 0);
  EXPECT_EQ(out[0].tensor.data<int64_t>()[1], 1);
}

TEST(RefReduction, TopKRandomAgainstSort) {
  Tensor x = random_f32({4, 9}, 3);
  const Tensor k = Tensor::from_vector<int64_t>({4}, {1});
  for (int largest : {0, 1}) {
    auto out = run_ref("TopK", {x, k}, {{"largest", attr_i(largest)}}, 2);
    const Tensor &v = out[0].tensor, &ix = out[1].tensor;
    ASSERT_EQ(v.shape(), Shape({4, 4}));
    for (int64_t r = 0; r < 4; ++r) {
      std::vector<float> row(x.data<float>() + r * 9, x.data<float>() + r * 9 + 9);
      std::sort(row.begin(), row.end());
      if (largest) std::reverse(row.begin(), row.end());
      for (int64_t j = 0; j < 4; ++j) {
        EXPECT_EQ(v.data<float>()[r * 4 + j], row[size_t(j)]);
        EXPECT_EQ(x.data<float>()[r * 9 + ix.data<int64_t>()[r * 4 + j]], row[size_t(j)]);
      }
    }
  }
}

TEST(RefReduction, TopKTiesLowerIndexFirstAndAxis0) {
  Tensor x = Tensor::from_vector<int32_t>({3, 1, 3, 1, 3, 2}, {6});
  auto out = run_ref("TopK", {x, Tensor::from_vector<int64_t>({3}, {1})}, {}, 2);
  EXPECT_EQ(out[1].tensor.data<int64_t>()[0], 0);
  EXPECT_EQ(out[1].tensor.data<int64_t>()[1], 2);
  EXPECT_EQ(out[1].tensor.data<int64_t>()[2], 4);
  out = run_ref("TopK", {x, Tensor::from_vector<int64_t>({2}, {1})}, {{"largest", attr_i(0)}}, 2);
  EXPECT_EQ(out[1].tensor.data<int64_t>()[0], 1);
  EXPECT_EQ(out[1].tensor.data<int64_t>()[1], 3);
  EXPECT_THROW(run_ref("TopK", {x, Tensor::from_vector<int64_t>({7}, {1})}, {}, 2), Error);
  // K = 0 gives empty outputs.
  out = run_ref("TopK", {x, Tensor::from_vector<int64_t>({0}, {1})}, {}, 2);
  EXPECT_EQ(out[0].tensor.shape(), Shape({0}));
}

TEST(RefReduction, CumSumCumProdVariants) {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto ax = [](int64_t a) { return Tensor::scalar<int64_t>(a); };
  auto out = run_ref("CumSum", {x, ax(1)});
  EXPECT_EQ(out[0].tensor.to_double_vector(), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  out = run_ref("CumSum", {x, ax(0)}, {{"exclusive", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.to_double_vector(), (std::vector<double>{0, 0, 0, 1, 2, 3}));
  out = run_ref("CumSum", {x, ax(-1)}, {{"reverse", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.to_double_vector(), (std::vector<double>{6, 5, 3, 15, 11, 6}));
  out = run_ref("CumSum", {x, ax(1)}, {{"reverse", attr_i(1)}, {"exclusive", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.to_double_vector(), (std::vector<double>{5, 3, 0, 11, 6, 0}));
  out = run_ref("CumProd", {x, ax(1)});
  EXPECT_EQ(out[0].tensor.to_double_vector(), (std::vector<double>{1, 2, 6, 4, 20, 120}));
  out = run_ref("CumProd", {x, ax(1)}, {{"exclusive", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.to_double_vector(), (std::vector<double>{1, 1, 2, 1, 4, 20}));
  EXPECT_THROW(run_ref("CumSum", {x, ax(2)}), Error);
}

}  // namespace
}  // namespace tessera
