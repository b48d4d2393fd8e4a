// Resize's plan, shared by the reference kernel and the CPU backend's fast path: the attributes and the
// scales / sizes / roi inputs read once, as the 1-D passes (one per resized axis, in order) each output index
// of which reads `n` input indices with weights, or the extrapolation value.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kernel_context.h"

namespace tessera::kernels::ref {

struct ResizeTaps {
  int64_t axis = 0, out = 0;  // the axis resized, to `out` indices
  std::vector<int64_t> idx;   // n per output index, clamped into the input
  std::vector<double> w;
  std::vector<char> extrapolate;  // per output index: the extrapolation value instead (tf_crop_and_resize)
  int n = 0;
};

struct ResizePlan {
  Shape out_shape;
  std::vector<ResizeTaps> passes;  // axes whose size or coordinates change (an empty one: no taps)
  double extrapolation = 0;
};

// Throws (with ctx's node) on attributes or inputs Resize does not take.
ResizePlan plan_resize(const KernelContext& ctx);

}  // namespace tessera::kernels::ref
