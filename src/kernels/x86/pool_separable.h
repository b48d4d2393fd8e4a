// Max and average pooling of channels-first tensors ([N, C, spatial...], any number of spatial axes) as one
// 1-D pooling pass per axis, outermost first: a box's max is the max over one axis of the maxes over the
// others, and its average the product of the per-axis averages (a box's count of inside elements is the
// product of its axes' counts; with count_include_pad, of the kernel's extents). Every pass but the last
// reduces rows of inner elements at a time, vectorized; video models' 3-D pools ran on the reference kernel
// at 1-3% of onnxruntime's speed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

struct PoolAxis {
  int64_t in = 0, out = 0, k = 1, stride = 1, dilation = 1, pad_begin = 0;
};

// y [nc, axes' out ...] = pool of x [nc, axes' in ...]; an output whose window lies wholly in the padding
// is -inf (max) or 0 (average).
void pool_separable_f32(bool is_max, bool count_include_pad, const std::vector<PoolAxis>& axes, int64_t nc,
                        const float* x, float* y, ThreadPool* pool);
// The max pool over u8 / s8 (a QDQ model's MaxPool on its quantized values: fuse_qdq), the same passes.
void max_pool_separable_8bit(bool is_signed, const std::vector<PoolAxis>& axes, int64_t nc, const void* x,
                             void* y, ThreadPool* pool);

}  // namespace tessera::kernels::x86
