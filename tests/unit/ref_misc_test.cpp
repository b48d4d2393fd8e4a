// Reference misc kernels: Identity, Constant, Dropout, Size, EyeLike, Optional*.
#include <gtest/gtest.h>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_f;
using testing::attr_i;
using testing::run_ref;

TEST(RefMisc, IdentityPassesTensorsAndSequences) {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3});
  const DataValue y = run_ref("Identity", {x})[0];
  ASSERT_TRUE(y.is_tensor());
  EXPECT_EQ(y.tensor.data<float>()[2], 3.f);
  const DataValue s = run_ref("Identity", {DataValue::make_sequence({x, x})})[0];
  ASSERT_TRUE(s.is_sequence());
  EXPECT_EQ(s.sequence.size(), 2u);
  EXPECT_THROW(run_ref("Identity", {}), Error);
}

TEST(RefMisc, ConstantAttributes) {
  Attribute t;
  t.kind = Attribute::Kind::t;
  t.t = Tensor::from_vector<int32_t>({4, 5});
  EXPECT_EQ(run_ref("Constant", {}, {{"value", t}})[0].tensor.data<int32_t>()[1], 5);
  const Tensor f = run_ref("Constant", {}, {{"value_float", attr_f(2.5f)}})[0].tensor;
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.rank(), 0);
  EXPECT_EQ(f.data<float>()[0], 2.5f);
  const Tensor is = run_ref("Constant", {}, {{"value_ints", testing::attr_ints({1, 2, 3})}})[0].tensor;
  EXPECT_EQ(is.shape(), (Shape{3}));
  EXPECT_EQ(is.data<int64_t>()[2], 3);
  EXPECT_THROW(run_ref("Constant", {}), Error);
  EXPECT_THROW(run_ref("Constant", {}, {{"value_float", attr_f(1)}, {"value_int", attr_i(1)}}), Error);
}

TEST(RefMisc, DropoutInferenceAndTraining) {
  Tensor x(DType::f32, {10, 100});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.f + float(i % 7);
  auto out = run_ref("Dropout", {x, Tensor::scalar(0.3f)}, {}, 2);
  EXPECT_EQ(out[0].tensor.data<float>()[5], x.data<float>()[5]);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_TRUE(out[1].tensor.data<bool>()[i]);
  out = run_ref("Dropout", {x, Tensor::scalar(0.f), Tensor::scalar(true)}, {{"seed", attr_i(0)}}, 2);
  EXPECT_EQ(out[0].tensor.data<float>()[7], x.data<float>()[7]);
  out = run_ref("Dropout", {x, Tensor::scalar(0.5f), Tensor::scalar(true)}, {{"seed", attr_i(3)}}, 2);
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool k = out[1].tensor.data<bool>()[i];
    kept += k;
    EXPECT_FLOAT_EQ(out[0].tensor.data<float>()[i], k ? x.data<float>()[i] * 2 : 0.f);
  }
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_THROW(run_ref("Dropout", {x, Tensor::scalar(1.5f), Tensor::scalar(true)}), Error);
}

TEST(RefMisc, SizeAndEyeLike) {
  const Tensor s = run_ref("Size", {Tensor(DType::f32, {3, 0, 2})})[0].tensor;
  EXPECT_EQ(s.dtype(), DType::i64);
  EXPECT_EQ(s.data<int64_t>()[0], 0);
  EXPECT_EQ(run_ref("Size", {Tensor(DType::i8, {3, 4})})[0].tensor.data<int64_t>()[0], 12);
  const Tensor e = run_ref("EyeLike", {Tensor(DType::i32, {3, 4})}, {{"k", attr_i(1)}, {"dtype", attr_i(11)}})[0].tensor;
  ASSERT_EQ(e.dtype(), DType::f64);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(e.data<double>()[i * 4 + j], j == i + 1 ? 1.0 : 0.0);
  const Tensor e2 = run_ref("EyeLike", {Tensor(DType::i32, {2, 2})}, {{"k", attr_i(-5)}})[0].tensor;
  EXPECT_EQ(e2.dtype(), DType::i32);
  EXPECT_EQ(e2.data<int32_t>()[0], 0);
  EXPECT_THROW(run_ref("EyeLike", {Tensor(DType::f32, {2})}), Error);
}

TEST(RefMisc, Optionals) {
  const Tensor x = Tensor::from_vector<int32_t>({1, 2});
  auto has = [](std::vector<DataValue> in) { return run_ref("OptionalHasElement", std::move(in))[0].tensor.data<bool>()[0]; };
  EXPECT_TRUE(has({x}));
  EXPECT_FALSE(has({DataValue::make_optional_none(DType::i32)}));
  EXPECT_FALSE(has({}));
  EXPECT_FALSE(has({DataValue()}));
  EXPECT_EQ(run_ref("OptionalGetElement", {x})[0].tensor.data<int32_t>()[1], 2);
  EXPECT_THROW(run_ref("OptionalGetElement", {DataValue::make_optional_none()}), Error);
  const DataValue o = run_ref("Optional", {x})[0];
  EXPECT_TRUE(o.is_tensor());
  const DataValue none = run_ref("Optional", {})[0];
  EXPECT_EQ(none.kind, DataValue::Kind::optional_none);
}

}  // namespace
}  // namespace tessera::kernels::ref
