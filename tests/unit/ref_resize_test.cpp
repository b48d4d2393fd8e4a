// Reference Resize / GridSample / AffineGrid kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::attr_ints;
using testing::attr_s;
using testing::run_ref;

std::vector<float> randf(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

TEST(RefResize, NearestUpsampleRepeatsPixels) {
  const std::vector<float> xv = randf(2 * 3 * 4, 1);
  const Tensor x = Tensor::from_vector(xv, {1, 2, 3, 4});
  const Tensor scales = Tensor::from_vector<float>({1.f, 1.f, 2.f, 3.f});
  auto y = run_ref("Resize", {x, DataValue(), scales},
                   {{"mode", attr_s("nearest")}, {"coordinate_transformation_mode", attr_s("asymmetric")},
                    {"nearest_mode", attr_s("floor")}})[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{1, 2, 6, 12}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 6; ++h)
      for (int64_t w = 0; w < 12; ++w)
        ASSERT_EQ(y.data<float>()[(c * 6 + h) * 12 + w], xv[size_t((c * 3 + h / 2) * 4 + w / 3)]);
}

TEST(RefResize, LinearAlignCornersReproducesRamp) {
  // A linear function of position is reproduced exactly by linear interpolation.
  std::vector<float> xv;
  for (int h = 0; h < 3; ++h)
    for (int w = 0; w < 4; ++w) xv.push_back(2.f * float(h) - 0.5f * float(w));
  const Tensor x = Tensor::from_vector(xv, {1, 1, 3, 4});
  const Tensor sizes = Tensor::from_vector<int64_t>({5, 7});
  auto y = run_ref("Resize", {x, DataValue(), DataValue(), sizes},
                   {{"mode", attr_s("linear")}, {"coordinate_transformation_mode", attr_s("align_corners")},
                    {"axes", attr_ints({2, 3})}})[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 7}));
  for (int64_t h = 0; h < 5; ++h)
    for (int64_t w = 0; w < 7; ++w) {
      const float sh = float(h) * 2.f / 4.f, sw = float(w) * 3.f / 6.f;
      EXPECT_NEAR(y.data<float>()[h * 7 + w], 2.f * sh - 0.5f * sw, 1e-5f);
    }
}

TEST(RefResize, CubicAndAntialiasKeepConstants) {
  const Tensor x = Tensor::from_vector(std::vector<float>(36, 3.25f), {1, 1, 6, 6});
  for (int aa = 0; aa < 2; ++aa)
    for (const char* mode : {"cubic", "linear"}) {
      const Tensor scales = Tensor::from_vector<float>({1.f, 1.f, 0.6f, 1.7f});
      auto y = run_ref("Resize", {x, DataValue(), scales}, {{"mode", attr_s(mode)}, {"antialias", attr_i(aa)}})[0].tensor;
      ASSERT_EQ(y.shape(), (Shape{1, 1, 3, 10}));
      for (float v : y.values<float>()) EXPECT_NEAR(v, 3.25f, 1e-5f) << mode << aa;
    }
}

TEST(RefResize, NotLargerPolicyAndBadInputs) {
  const Tensor x(DType::f32, {1, 1, 4, 6});
  const Tensor sizes = Tensor::from_vector<int64_t>({8, 8});
  auto y = run_ref("Resize", {x, DataValue(), DataValue(), sizes},
                   {{"axes", attr_ints({2, 3})}, {"keep_aspect_ratio_policy", attr_s("not_larger")}})[0].tensor;
  EXPECT_EQ(y.shape(), (Shape{1, 1, 5, 8}));  // scale min(2, 4/3)
  const Tensor scales = Tensor::from_vector<float>({1.f, 1.f, 2.f, 2.f});
  EXPECT_THROW(run_ref("Resize", {x, DataValue(), scales, sizes}), Error);                       // both given
  EXPECT_THROW(run_ref("Resize", {x, DataValue(), scales}, {{"mode", attr_s("bogus")}}), Error);  // bad mode
  EXPECT_THROW(run_ref("Resize", {x, DataValue(), Tensor::from_vector<float>({2.f})}), Error);    // wrong count
}

TEST(RefResize, GridSampleWithIdentityAffineGridReturnsInput) {
  const std::vector<float> xv = randf(2 * 3 * 5 * 4, 2);
  const Tensor x = Tensor::from_vector(xv, {2, 3, 5, 4});
  const Tensor theta = Tensor::from_vector<float>({1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}, {2, 2, 3});
  const Tensor size = Tensor::from_vector<int64_t>({2, 3, 5, 4});
  for (int align = 0; align < 2; ++align) {
    auto grid = run_ref("AffineGrid", {theta, size}, {{"align_corners", attr_i(align)}})[0].tensor;
    ASSERT_EQ(grid.shape(), (Shape{2, 5, 4, 2}));
    for (const char* mode : {"linear", "nearest", "cubic"}) {
      auto y = run_ref("GridSample", {x, grid}, {{"align_corners", attr_i(align)}, {"mode", attr_s(mode)}})[0].tensor;
      ASSERT_EQ(y.shape(), x.shape());
      for (size_t i = 0; i < xv.size(); ++i) ASSERT_NEAR(y.data<float>()[i], xv[i], 1e-5f) << mode << " " << i;
    }
  }
}

TEST(RefResize, GridSamplePaddingModes) {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 1, 4});
  const Tensor grid = Tensor::from_vector<float>({-3.f, 0.f, 3.f, 0.f}, {1, 1, 2, 2});  // far left, far right
  auto z = run_ref("GridSample", {x, grid}, {{"padding_mode", attr_s("zeros")}})[0].tensor;
  EXPECT_EQ(z.to_double_vector(), (std::vector<double>{0, 0}));
  auto b = run_ref("GridSample", {x, grid}, {{"padding_mode", attr_s("border")}})[0].tensor;
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{1, 4}));
  EXPECT_THROW(run_ref("GridSample", {x, Tensor(DType::f32, {1, 1, 2, 3})}), Error);
}

}  // namespace
}  // namespace tessera::kernels::ref
