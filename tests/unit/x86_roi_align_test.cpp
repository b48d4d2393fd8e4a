// The tuned RoiAlign (kernels/x86/roi_align.h) against the reference kernel: both modes and coordinate
// transformations, fixed and adaptive sampling, boxes inside, across and outside the map, empty and
// reversed boxes, one-pixel maps, channel counts around the task's block of 16, one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/roi_align.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::x86 {
namespace {

using testing::attr_f;
using testing::attr_i;
using testing::attr_s;

struct Case {
  int64_t n, c, h, w, oh, ow, sampling;
  float scale;
};

TEST(X86RoiAlign, MatchesReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> val(0.0f, 1.0f);
  const Case cases[] = {{1, 16, 20, 24, 7, 7, 2, 1.0f},   {2, 17, 13, 9, 3, 5, 0, 0.5f},
                        {1, 1, 1, 1, 2, 2, 0, 1.0f},      {3, 33, 31, 29, 7, 7, 0, 0.25f},
                        {1, 15, 40, 40, 14, 14, 1, 1.0f}, {2, 5, 8, 64, 1, 1, 3, 2.0f}};
  for (const Case& k : cases)
    for (const char* mode : {"avg", "max"})
      for (const char* ctm : {"half_pixel", "output_half_pixel"})
        for (int threads : {1, 2}) {
          const int64_t r = 11;
          Tensor x(DType::f32, {k.n, k.c, k.h, k.w}), rois(DType::f32, {r, 4}), bi(DType::i64, {r});
          for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = val(rng);
          const float ext = float(std::max(k.h, k.w)) / k.scale;
          std::uniform_real_distribution<float> pos(-0.3f * ext, 1.2f * ext);
          for (int64_t i = 0; i < r; ++i) {
            float* b = rois.data<float>() + i * 4;
            b[0] = pos(rng), b[1] = pos(rng), b[2] = b[0] + std::fabs(pos(rng)),
            b[3] = b[1] + std::fabs(pos(rng));
            bi.data<int64_t>()[i] = int64_t(rng() % uint32_t(k.n));
          }
          // an empty box, a reversed one, one far outside, one pixel wide
          float* b = rois.data<float>();
          b[0] = b[2] = 3.0f;
          b[4 + 0] = 9.0f, b[4 + 2] = 2.0f;
          b[8 + 0] = b[8 + 1] = 5 * ext, b[8 + 2] = b[8 + 3] = 6 * ext;
          b[12 + 2] = b[12 + 0] + 1.0f;
          AttrMap attrs{{"output_height", attr_i(k.oh)},
                        {"output_width", attr_i(k.ow)},
                        {"sampling_ratio", attr_i(k.sampling)},
                        {"spatial_scale", attr_f(k.scale)},
                        {"mode", attr_s(mode)},
                        {"coordinate_transformation_mode", attr_s(ctm)}};
          const Tensor want = testing::run_ref("RoiAlign", {x, rois, bi}, attrs)[0].tensor;
          RoiAlignParams p;
          p.n = k.n, p.c = k.c, p.h = k.h, p.w = k.w, p.oh = k.oh, p.ow = k.ow, p.sampling = k.sampling;
          p.spatial_scale = k.scale, p.max_mode = std::string(mode) == "max";
          p.half_pixel = std::string(ctm) == "half_pixel";
          std::vector<float> got(size_t(want.numel()), -7.0f);
          ThreadPool pool(threads);
          roi_align_f32(p, x.data<float>(), rois.data<float>(), bi.data<int64_t>(), r, got.data(), &pool);
          ASSERT_EQ(want.numel(), r * k.c * k.oh * k.ow);
          double worst = 0;
          for (int64_t i = 0; i < want.numel(); ++i)
            worst = std::max(worst, std::fabs(double(got[size_t(i)]) - double(want.data<float>()[i])));
          EXPECT_LT(worst, 2e-5) << mode << " " << ctm << " c " << k.c << " " << k.h << "x" << k.w << " -> "
                                 << k.oh << "x" << k.ow << " sampling " << k.sampling;
        }
}

}  // namespace
}  // namespace tessera::kernels::x86
