// 2-D MaxPool over NCHW f32 that also returns each maximum's index (SegNet's and ENet's encoders, whose
// MaxUnpool puts the values back): per plane, each output pixel's window clipped to the image, the first
// maximum (a NaN wins), its index flat over the input tensor — row-major over the plane, or column-major
// (storage_order 1) — plus the plane's offset. A window wholly in the padding gives 0 at the plane's first
// element, as the reference does.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86 {

// p.g: planes in n (N * C), h, w, the window, strides, dilations and pads; p.oh, p.ow the output size.
void max_pool2d_indices_f32(const PoolParams& p, const float* x, float* y, int64_t* indices,
                            bool column_major, ThreadPool* pool);

// MaxUnpool at its natural output size: y (`total` elements of `elem` bytes) zero, then y[idx[j]] = x[j] for
// j < n in order (a repeated index keeps the last value, as the reference). Every index in [0, total): the
// caller checks (and hands a bad one to the reference kernel, which names it).
void max_unpool_scatter(const void* x, size_t elem, const int64_t* idx, int64_t n, int64_t total, void* y);

}  // namespace tessera::kernels::x86
