// RoiAlign over NCHW f32 feature maps (Mask R-CNN's and Faster R-CNN's box heads): y[r, c, i, j] averages
// (or takes the largest of) gh x gw bilinear samples of x[batch[r], c] inside bin (i, j) of box r. Each
// sample's four taps (offsets and weights) are computed once for a box, in double as the reference computes
// them, and applied to every channel in f32; the reference recomputes them per channel and sums in double
// (3.8x onnxruntime's time on 200 boxes of a 64-channel map).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

struct RoiAlignParams {
  int64_t n = 0, c = 0, h = 0, w = 0;  // x [n, c, h, w]
  int64_t oh = 1, ow = 1;              // y [rois, c, oh, ow]
  int64_t sampling = 0;                // samples a bin takes per axis; 0: ceil(box extent / bins)
  double spatial_scale = 1.0;
  bool half_pixel = true;  // coordinate_transformation_mode half_pixel (else output_half_pixel)
  bool max_mode = false;   // mode "max": the largest weighted tap of the largest sample, as ONNX defines it
};

// rois [r, 4] as (x1, y1, x2, y2), finite; batch [r] each in [0, n) (the caller checks both).
void roi_align_f32(const RoiAlignParams& p, const float* x, const float* rois, const int64_t* batch,
                   int64_t r, float* y, ThreadPool* pool);

}  // namespace tessera::kernels::x86
