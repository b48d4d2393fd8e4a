// GridSample over NCHW f32 images, 2-D (spatial transformers, optical-flow warps, Deformable DETR's
// sampling): y[n, c, i, j] samples x[n, c] at grid[n, i, j] = (x, y) in [-1, 1], bilinear or nearest, zeros
// or border padding, either align_corners. Each output pixel's taps (offsets and weights) are computed once
// and applied to every channel; the reference recomputes them per channel, in double, through a generic
// N-D walk (24x onnxruntime's time).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

struct GridSampleParams {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input [n, c, h, w]
  int64_t oh = 0, ow = 0;              // grid [n, oh, ow, 2], output [n, c, oh, ow]
  bool align_corners = false;
  bool nearest = false;  // else bilinear
  bool border = false;   // else zeros
};

void grid_sample_f32(const GridSampleParams& p, const float* x, const float* grid, float* y,
                     ThreadPool* pool);

}  // namespace tessera::kernels::x86
