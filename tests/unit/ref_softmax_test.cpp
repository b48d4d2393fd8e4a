// Reference kernels of the softmax family against naive double loops.
#include <limits>

#include "ref_nn_test_util.h"

namespace tessera::testing {
namespace {
using namespace nn;

// Naive softmax over `len` elements spaced by `inner`.
std::vector<double> naive_softmax(const std::vector<double>& v, int64_t outer, int64_t len, int64_t inner, bool log) {
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -1e300, s = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, v[size_t((o * len + k) * inner + i)]);
      for (int64_t k = 0; k < len; ++k) s += std::exp(v[size_t((o * len + k) * inner + i)] - m);
      for (int64_t k = 0; k < len; ++k) {
        const double d = v[size_t((o * len + k) * inner + i)] - m;
        out[size_t((o * len + k) * inner + i)] = log ? d - std::log(s) : std::exp(d) / s;
      }
    }
  return out;
}

TEST(RefSoftmax, AlongEachAxis) {
  Tensor x = rand_tensor({3, 4, 5}, 1, DType::f32, -5, 5);
  const Shape s = x.shape();
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const int64_t outer = shape_numel(std::vector<int64_t>(s.begin(), s.begin() + a));
    const int64_t inner = shape_numel(std::vector<int64_t>(s.begin() + a + 1, s.end()));
    auto sm = run_ref("Softmax", {x}, {{"axis", attr_i(axis)}});
    auto lsm = run_ref("LogSoftmax", {x}, {{"axis", attr_i(axis)}});
    expect_close(vals(sm[0]), naive_softmax(vals(x), outer, s[size_t(a)], inner, false));
    expect_close(vals(lsm[0]), naive_softmax(vals(x), outer, s[size_t(a)], inner, true));
  }
}

TEST(RefSoftmax, LegacyOpsetCoercesTo2d) {
  Tensor x = rand_tensor({2, 3, 4}, 2);
  // Opset 11, axis 1: rows of 12 elements.
  auto sm = run_ref("Softmax", {x}, {{"axis", attr_i(1)}}, 1, 11);
  expect_close(vals(sm[0]), naive_softmax(vals(x), 2, 12, 1, false));
  auto def = run_ref("Softmax", {x}, {}, 1, 11);  // default axis 1 before opset 13
  expect_close(vals(def[0]), naive_softmax(vals(x), 2, 12, 1, false));
  auto hm = run_ref("Hardmax", {x}, {{"axis", attr_i(0)}}, 1, 11);  // one 1 over all 24
  double sum = 0;
  for (double e : vals(hm[0])) sum += e;
  EXPECT_EQ(sum, 1.0);
}

TEST(RefSoftmax, LargeNumbersAndNan) {
  Tensor x = f32({1000, 1001, 1002, -1000}, {4});
  auto sm = run_ref("Softmax", {x});
  expect_close(vals(sm[0]), naive_softmax({1000, 1001, 1002, -1000}, 1, 4, 1, false));
  auto lsm = run_ref("LogSoftmax", {x});
  EXPECT_TRUE(std::isfinite(vals(lsm[0])[0]));
  Tensor n = f32({1, std::numeric_limits<float>::quiet_NaN(), 2}, {3});
  for (double e : vals(run_ref("Softmax", {n})[0])) EXPECT_TRUE(std::isnan(e));
}

TEST(RefSoftmax, HardmaxFirstMaximum) {
  Tensor x = f32({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4});
  auto hm = run_ref("Hardmax", {x});
  expect_close(vals(hm[0]), {0, 1, 0, 0, 1, 0, 0, 0});
  auto h0 = run_ref("Hardmax", {x}, {{"axis", attr_i(0)}});
  expect_close(vals(h0[0]), {0, 0, 0, 1, 1, 1, 1, 0});
  EXPECT_THROW(run_ref("Hardmax", {x}, {{"axis", attr_i(2)}}), Error);
}

TEST(RefSoftmax, HalfTypesKeepTheirType) {
  for (DType dt : {DType::f16, DType::bf16, DType::f64}) {
    Tensor x = rand_tensor({2, 5}, 3, dt);
    auto sm = run_ref("Softmax", {x});
    EXPECT_EQ(sm[0].tensor.dtype(), dt);
    expect_close(vals(sm[0]), naive_softmax(vals(x), 2, 5, 1, false), 1e-2, 1e-3);
  }
  Tensor i(DType::i32, {3});
  EXPECT_THROW(run_ref("Softmax", {i}), Error);
}

}  // namespace
}  // namespace tessera::testing
