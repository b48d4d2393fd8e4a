// Reference kernels of the indexing family against independent loops.
#include <gtest/gtest.h>

#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera {
namespace {

using testing::attr_i;
using testing::attr_s;
using testing::run_ref;

Tensor iota_f32(Shape s) {
  Tensor t(DType::f32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i);
  return t;
}
Tensor i64(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, s); }

TEST(RefIndexing, GatherRandomAxes) {
  std::mt19937 g(5);
  Tensor x = iota_f32({3, 4, 5});
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const int64_t len = x.dim(a);
    std::vector<int64_t> idx(6);
    for (auto& v : idx) v = int64_t(g() % uint32_t(2 * len)) - len;  // negative too
    Tensor it = i64(idx, {2, 3});
    auto y = run_ref("Gather", {x, it}, {{"axis", attr_i(axis)}})[0].tensor;
    Shape want(x.shape().begin(), x.shape().begin() + a);
    want.push_back(2);
    want.push_back(3);
    want.insert(want.end(), x.shape().begin() + a + 1, x.shape().end());
    ASSERT_EQ(y.shape(), want);
    // spot check every element via index math
    int64_t n = 0;
    std::vector<int64_t> d(3);
    for (d[0] = 0; d[0] < (a == 0 ? 6 : 3); ++d[0])
      for (d[1] = 0; d[1] < (a == 1 ? 6 : (a == 0 ? 4 : 4)); ++d[1])
        for (d[2] = 0; d[2] < (a == 2 ? 6 : 5); ++d[2]) {
          std::vector<int64_t> src = d;
          int64_t k = idx[size_t(d[size_t(a)])];
          if (k < 0) k += len;
          src[size_t(a)] = k;
          EXPECT_EQ(y.data<float>()[n++], float((src[0] * 4 + src[1]) * 5 + src[2]));
        }
  }
  EXPECT_THROW(run_ref("Gather", {x, i64({3}, {1})}), Error);
  EXPECT_THROW(run_ref("Gather", {x, i64({-4}, {1})}), Error);
  // scalar index drops the axis
  EXPECT_EQ(run_ref("Gather", {x, Tensor::scalar<int64_t>(1)}, {{"axis", attr_i(1)}})[0].tensor.shape(), Shape({3, 5}));
}

TEST(RefIndexing, GatherElementsAndGatherND) {
  Tensor x = iota_f32({2, 3});
  auto y = run_ref("GatherElements", {x, i64({2, -3, 1, 0}, {2, 2})}, {{"axis", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{2, 0, 4, 3}));
  EXPECT_THROW(run_ref("GatherElements", {x, i64({3}, {1, 1})}, {{"axis", attr_i(1)}}), Error);
  auto z = run_ref("GatherND", {x, i64({1, 2, 0, -1}, {2, 2})})[0].tensor;
  EXPECT_EQ(z.to_double_vector(), (std::vector<double>{5, 2}));
  z = run_ref("GatherND", {x, i64({1, 0}, {2, 1})})[0].tensor;
  EXPECT_EQ(z.shape(), Shape({2, 3}));
  EXPECT_EQ(z.data<float>()[0], 3.f);
  Tensor b = iota_f32({2, 2, 2});
  z = run_ref("GatherND", {b, i64({1, 0}, {2, 1})}, {{"batch_dims", attr_i(1)}})[0].tensor;
  EXPECT_EQ(z.shape(), Shape({2, 2}));
  EXPECT_EQ(z.to_double_vector(), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_THROW(run_ref("GatherND", {x, i64({2, 0}, {1, 2})}), Error);
}

TEST(RefIndexing, ScatterElementsReductions) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4});
  Tensor ind = i64({1, 1, -1}, {1, 3});
  Tensor upd = Tensor::from_vector<float>({5, 6, 7}, {1, 3});
  auto y = run_ref("ScatterElements", {x, ind, upd}, {{"axis", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1, 6, 3, 7}));
  y = run_ref("ScatterElements", {x, ind, upd}, {{"axis", attr_i(1)}, {"reduction", attr_s("add")}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1, 13, 3, 11}));
  y = run_ref("ScatterElements", {x, ind, upd}, {{"axis", attr_i(1)}, {"reduction", attr_s("mul")}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1, 60, 3, 28}));
  y = run_ref("ScatterElements", {x, ind, upd}, {{"axis", attr_i(1)}, {"reduction", attr_s("min")}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
  y = run_ref("ScatterElements", {x, ind, upd}, {{"axis", attr_i(1)}, {"reduction", attr_s("max")}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1, 6, 3, 7}));
  EXPECT_EQ(x.to_double_vector(), (std::vector<double>{1, 2, 3, 4}));  // input untouched
  EXPECT_THROW(run_ref("ScatterElements", {x, i64({4}, {1, 1}), Tensor::from_vector<float>({1}, {1, 1})},
                       {{"axis", attr_i(1)}}),
               Error);
  EXPECT_THROW(run_ref("ScatterElements", {x, ind, upd}, {{"axis", attr_i(1)}, {"reduction", attr_s("bogus")}}), Error);
}

TEST(RefIndexing, ScatterND) {
  Tensor x = iota_f32({2, 3});
  auto y = run_ref("ScatterND", {x, i64({1, -1, 0, 0}, {2, 2}), Tensor::from_vector<float>({10, 20}, {2})})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{20, 1, 2, 3, 4, 10}));
  y = run_ref("ScatterND", {x, i64({1, 1}, {2, 1}), Tensor::from_vector<float>({1, 1, 1, 2, 2, 2}, {2, 3})},
              {{"reduction", attr_s("add")}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{0, 1, 2, 6, 7, 8}));
  EXPECT_THROW(run_ref("ScatterND", {x, i64({2}, {1, 1}), Tensor::from_vector<float>({1, 1, 1}, {1, 3})}), Error);
  EXPECT_THROW(run_ref("ScatterND", {x, i64({1}, {1, 1}), Tensor::from_vector<float>({1, 1}, {1, 2})}), Error);
}

TEST(RefIndexing, TensorScatterLinearAndCircular) {
  Tensor cache(DType::f32, {2, 4, 1});  // batch 2, max_len 4
  Tensor upd = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2, 1});
  auto y = run_ref("TensorScatter", {cache, upd, i64({1, 2}, {2})}, {{"axis", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{0, 1, 2, 0, 0, 0, 3, 4}));
  y = run_ref("TensorScatter", {cache, upd, i64({3, 0}, {2})}, {{"axis", attr_i(1)}, {"mode", attr_s("circular")}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{2, 0, 0, 1, 3, 4, 0, 0}));
  EXPECT_THROW(run_ref("TensorScatter", {cache, upd, i64({3, 0}, {2})}, {{"axis", attr_i(1)}}), Error);
  y = run_ref("TensorScatter", {cache, upd}, {{"axis", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.data<float>()[1], 2.f);
}

}  // namespace
}  // namespace tessera
