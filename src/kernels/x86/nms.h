// NonMaxSuppression of f32 boxes (detection heads' post-processing: SSD, YOLO and Faster R-CNN exports): per
// batch item and class, the boxes scoring above the threshold, best first (ties to the lower index), each
// kept unless a box kept before it overlaps it by an IoU above the threshold, at most max_out a class. The
// candidates are ordered by one 64-bit key (score, then index) and sorted only as far as the selection
// reads; every box's corners and area are computed once. The IoU arithmetic is the reference's, in the
// same order, so the selection is the same bit for bit.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::kernels::x86 {

struct NmsParams {
  int64_t batches = 0, classes = 0, boxes = 0;
  int64_t max_out = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
  bool center_point_box = false;
};

// boxes [batches, boxes, 4], scores [batches, classes, boxes], no NaN among the scores (the caller checks):
// the selected (batch, class, box) triples in the reference's order, appended to `out`.
void nms_f32(const NmsParams& p, const float* boxes, const float* scores, std::vector<int64_t>& out);

}  // namespace tessera::kernels::x86
