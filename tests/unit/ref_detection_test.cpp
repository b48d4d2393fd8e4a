// Reference NonMaxSuppression kernel.
#include <gtest/gtest.h>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::run_ref;

TEST(RefDetection, NmsSuppressesOverlapsPerClass) {
  // Boxes [y1, x1, y2, x2]: 0 and 1 overlap heavily, 2 is apart.
  const Tensor boxes = Tensor::from_vector<float>({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 5, 5, 6, 6}, {1, 3, 4});
  const Tensor scores = Tensor::from_vector<float>({0.9f, 0.95f, 0.5f, 0.1f, 0.2f, 0.3f}, {1, 2, 3});
  const Tensor maxo = Tensor::scalar<int64_t>(10), iou = Tensor::scalar<float>(0.5f), sth = Tensor::scalar<float>(0.15f);
  auto y = run_ref("NonMaxSuppression", {boxes, scores, maxo, iou, sth})[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(y.to_int_vector(), (std::vector<int64_t>{0, 0, 1, 0, 0, 2, 0, 1, 2, 0, 1, 1}));
  // max_output_boxes_per_class limits each class; omitted -> no boxes.
  auto y1 = run_ref("NonMaxSuppression", {boxes, scores, Tensor::scalar<int64_t>(1), iou})[0].tensor;
  EXPECT_EQ(y1.to_int_vector(), (std::vector<int64_t>{0, 0, 1, 0, 1, 2}));
  auto y0 = run_ref("NonMaxSuppression", {boxes, scores})[0].tensor;
  EXPECT_EQ(y0.shape(), (Shape{0, 3}));
}

TEST(RefDetection, NmsCenterFormatAndBadShapes) {
  // Same geometry in [xc, yc, w, h].
  const Tensor boxes = Tensor::from_vector<float>({0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 5.5f, 5.5f, 1, 1}, {1, 3, 4});
  const Tensor scores = Tensor::from_vector<float>({0.9f, 0.95f, 0.5f}, {1, 1, 3});
  auto y = run_ref("NonMaxSuppression", {boxes, scores, Tensor::scalar<int64_t>(3), Tensor::scalar<float>(0.5f)},
                   {{"center_point_box", attr_i(1)}})[0].tensor;
  EXPECT_EQ(y.to_int_vector(), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  EXPECT_THROW(run_ref("NonMaxSuppression", {Tensor(DType::f32, {1, 3, 3}), scores}), Error);
  EXPECT_THROW(run_ref("NonMaxSuppression", {boxes, Tensor(DType::f32, {1, 1, 4})}), Error);
}

}  // namespace
}  // namespace tessera::kernels::ref
