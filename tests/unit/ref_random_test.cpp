// Reference random kernels: shapes, types, determinism with a seed, moments.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_f;
using testing::attr_i;
using testing::attr_ints;
using testing::run_ref;

TEST(RefRandom, NormalAndUniformMoments) {
  const Tensor n = run_ref("RandomNormal", {}, {{"shape", attr_ints({100, 100})}, {"mean", attr_f(2)}, {"scale", attr_f(3)},
                                               {"seed", attr_f(1)}})[0].tensor;
  ASSERT_EQ(n.dtype(), DType::f32);
  ASSERT_EQ(n.shape(), (Shape{100, 100}));
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n.numel(); ++i) s += n.data<float>()[i], s2 += double(n.data<float>()[i]) * n.data<float>()[i];
  const double mean = s / 1e4, var = s2 / 1e4 - mean * mean;
  EXPECT_NEAR(mean, 2, 0.15);
  EXPECT_NEAR(std::sqrt(var), 3, 0.15);
  const Tensor u = run_ref("RandomUniform", {}, {{"shape", attr_ints({1000})}, {"low", attr_f(-1)}, {"high", attr_f(3)},
                                                {"dtype", attr_i(11)}})[0].tensor;
  ASSERT_EQ(u.dtype(), DType::f64);
  double us = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const double v = u.data<double>()[i];
    ASSERT_GE(v, -1);
    ASSERT_LT(v, 3);
    us += v;
  }
  EXPECT_NEAR(us / 1000, 1, 0.2);
}

TEST(RefRandom, SeedIsDeterministicAndLikeOpsFollowInput) {
  const Tensor x(DType::f16, {4, 5});
  auto draw = [&](float seed) {
    return run_ref("RandomNormalLike", {x}, {{"seed", attr_f(seed)}})[0].tensor;
  };
  const Tensor a = draw(7), b = draw(7), c = draw(8);
  ASSERT_EQ(a.dtype(), DType::f16);
  ASSERT_EQ(a.shape(), x.shape());
  int same = 0;
  for (int64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(a.data<Float16>()[i].bits, b.data<Float16>()[i].bits);
    same += a.data<Float16>()[i].bits == c.data<Float16>()[i].bits;
  }
  EXPECT_LT(same, 5);
  const Tensor ul = run_ref("RandomUniformLike", {Tensor(DType::f32, {3})}, {{"dtype", attr_i(11)}})[0].tensor;
  EXPECT_EQ(ul.dtype(), DType::f64);
}

TEST(RefRandom, BernoulliAndMultinomial) {
  Tensor p(DType::f64, {2000});
  for (int64_t i = 0; i < 2000; ++i) p.data<double>()[i] = i < 1000 ? 0.0 : 1.0;
  const Tensor b = run_ref("Bernoulli", {p}, {{"seed", attr_f(0)}})[0].tensor;
  ASSERT_EQ(b.dtype(), DType::f64);
  for (int64_t i = 0; i < 2000; ++i) ASSERT_EQ(b.data<double>()[i], i < 1000 ? 0.0 : 1.0);
  Tensor half(DType::f32, {4000});
  for (int64_t i = 0; i < 4000; ++i) half.data<float>()[i] = 0.25f;
  const Tensor hb = run_ref("Bernoulli", {half}, {{"dtype", attr_i(9)}})[0].tensor;
  ASSERT_EQ(hb.dtype(), DType::boolean);
  int ones = 0;
  for (int64_t i = 0; i < 4000; ++i) ones += hb.data<bool>()[i];
  EXPECT_NEAR(ones / 4000.0, 0.25, 0.04);
  EXPECT_THROW(run_ref("Bernoulli", {Tensor::from_vector<float>({1.5f})}), Error);

  // class 2 has almost all the mass
  const Tensor logits = Tensor::from_vector<float>({0.f, 0.f, 20.f, -5.f, 10.f, -5.f}, {2, 3});
  const Tensor m = run_ref("Multinomial", {logits}, {{"sample_size", attr_i(50)}, {"seed", attr_f(1)}})[0].tensor;
  ASSERT_EQ(m.dtype(), DType::i32);
  ASSERT_EQ(m.shape(), (Shape{2, 50}));
  for (int64_t s = 0; s < 50; ++s) {
    EXPECT_EQ(m.data<int32_t>()[s], 2);
    EXPECT_EQ(m.data<int32_t>()[50 + s], 1);
  }
}

}  // namespace
}  // namespace tessera::kernels::ref
