// The tuned NonMaxSuppression (kernels/x86/nms.h) against the reference kernel, selection for selection:
// corner and center boxes (corners in any order), tied scores (the lower index first), with and without a
// score threshold, max_out below, around and past the candidates (the sorted window grows), several batch
// items and classes, degenerate boxes.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/x86/nms.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::x86 {
namespace {

TEST(X86Nms, MatchesReference) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t nb : {1, 2})
    for (int64_t nc : {1, 3})
      for (int64_t n : {1, 7, 300, 2000})
        for (int center : {0, 1})
          for (int64_t max_out : {0, 1, 10, 100, 5000})
            for (int thr : {0, 1}) {
              Tensor boxes(DType::f32, {nb, n, 4}), scores(DType::f32, {nb, nc, n});
              float* b = boxes.data<float>();
              for (int64_t i = 0; i < nb * n; ++i) {
                const float s = 0.02f + 0.3f * u(rng);
                if (center)
                  b[4 * i] = u(rng), b[4 * i + 1] = u(rng), b[4 * i + 2] = s,
                        b[4 * i + 3] = s * (0.5f + u(rng));
                else  // corners in either order
                  b[4 * i] = u(rng), b[4 * i + 1] = u(rng), b[4 * i + 2] = b[4 * i] + (i % 3 ? s : -s),
                        b[4 * i + 3] = b[4 * i + 1] + s;
                if (i % 97 == 5) b[4 * i + 2] = b[4 * i];  // no area
              }
              for (int64_t i = 0; i < scores.numel(); ++i)
                scores.data<float>()[i] = i % 5 == 0 ? 0.5f : float(int(u(rng) * 64)) / 64;  // many ties
              const Tensor mo = Tensor::scalar<int64_t>(max_out), iou = Tensor::scalar<float>(0.4f),
                           st = Tensor::scalar<float>(0.3f);
              std::vector<DataValue> in{boxes, scores, mo, iou};
              if (thr) in.push_back(st);
              AttrMap attrs{{"center_point_box", testing::attr_i(center)}};
              const Tensor want = testing::run_ref("NonMaxSuppression", in, attrs)[0].tensor;
              NmsParams p;
              p.batches = nb, p.classes = nc, p.boxes = n, p.max_out = max_out, p.iou_threshold = 0.4f;
              p.has_score_threshold = thr, p.score_threshold = 0.3f, p.center_point_box = center;
              std::vector<int64_t> got;
              nms_f32(p, boxes.data<float>(), scores.data<float>(), got);
              ASSERT_EQ(int64_t(got.size()), want.numel()) << nb << " " << nc << " " << n << " " << max_out;
              EXPECT_TRUE(std::equal(got.begin(), got.end(), want.data<int64_t>()))
                  << nb << " " << nc << " " << n << " center " << center << " max_out " << max_out;
            }
}

}  // namespace
}  // namespace tessera::kernels::x86
