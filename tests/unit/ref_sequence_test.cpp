// Reference kernels of the sequence family.
#include <gtest/gtest.h>

#include "tests/unit/kernel_harness.h"

namespace tessera {
namespace {

using testing::attr_i;
using testing::run_ref;

Tensor iota_f32(Shape s, float base = 0) {
  Tensor t(DType::f32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = base + float(i);
  return t;
}

TEST(RefSequence, ConstructInsertAtEraseLength) {
  Tensor a = iota_f32({2}), b = iota_f32({3}, 10), c = iota_f32({1}, 20);
  auto s = run_ref("SequenceConstruct", {a, b})[0];
  ASSERT_TRUE(s.is_sequence());
  EXPECT_EQ(s.sequence.size(), 2u);
  s = run_ref("SequenceInsert", {s, c, Tensor::scalar<int64_t>(-1)})[0];  // before the last
  ASSERT_EQ(s.sequence.size(), 3u);
  EXPECT_EQ(s.sequence[1].data<float>()[0], 20.f);
  s = run_ref("SequenceInsert", {s, a})[0];  // at the end
  EXPECT_EQ(s.sequence.size(), 4u);
  auto at = run_ref("SequenceAt", {s, Tensor::scalar<int32_t>(-2)})[0];
  EXPECT_EQ(at.tensor.shape(), Shape({3}));
  EXPECT_THROW(run_ref("SequenceAt", {s, Tensor::scalar<int64_t>(4)}), Error);
  s = run_ref("SequenceErase", {s, Tensor::scalar<int64_t>(0)})[0];
  EXPECT_EQ(s.sequence.size(), 3u);
  s = run_ref("SequenceErase", {s})[0];
  EXPECT_EQ(s.sequence.size(), 2u);
  EXPECT_EQ(run_ref("SequenceLength", {s})[0].tensor.data<int64_t>()[0], 2);
  EXPECT_THROW(run_ref("SequenceInsert", {s, Tensor::scalar<int64_t>(1)}), Error);  // wrong dtype
}

TEST(RefSequence, EmptySequence) {
  auto e = run_ref("SequenceEmpty", {}, {{"dtype", attr_i(7)}})[0];
  ASSERT_TRUE(e.is_sequence());
  EXPECT_EQ(e.elem_type, DType::i64);
  EXPECT_EQ(run_ref("SequenceLength", {e})[0].tensor.data<int64_t>()[0], 0);
  EXPECT_THROW(run_ref("SequenceErase", {e}), Error);
  EXPECT_THROW(run_ref("ConcatFromSequence", {e}, {{"axis", attr_i(0)}}), Error);
}

TEST(RefSequence, SplitToSequenceAndConcatBack) {
  Tensor x = iota_f32({3, 5});
  auto s = run_ref("SplitToSequence", {x, Tensor::scalar<int64_t>(2)}, {{"axis", attr_i(1)}})[0];
  ASSERT_EQ(s.sequence.size(), 3u);
  EXPECT_EQ(s.sequence[2].shape(), Shape({3, 1}));
  auto y = run_ref("ConcatFromSequence", {s}, {{"axis", attr_i(-1)}})[0].tensor;
  EXPECT_EQ(y.to_double_vector(), x.to_double_vector());
  s = run_ref("SplitToSequence", {x}, {{"keepdims", attr_i(0)}})[0];
  ASSERT_EQ(s.sequence.size(), 3u);
  EXPECT_EQ(s.sequence[1].shape(), Shape({5}));
  y = run_ref("ConcatFromSequence", {s}, {{"axis", attr_i(0)}, {"new_axis", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.shape(), Shape({3, 5}));
  EXPECT_EQ(y.to_double_vector(), x.to_double_vector());
  y = run_ref("ConcatFromSequence", {s}, {{"axis", attr_i(-1)}, {"new_axis", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.shape(), Shape({5, 3}));
  EXPECT_EQ(y.data<float>()[1], 5.f);
  s = run_ref("SplitToSequence", {x, Tensor::from_vector<int64_t>({1, 2}, {2})})[0];
  EXPECT_EQ(s.sequence[1].shape(), Shape({2, 5}));
  EXPECT_THROW(run_ref("SplitToSequence", {x, Tensor::from_vector<int64_t>({1, 1}, {2})}), Error);
}

}  // namespace
}  // namespace tessera
