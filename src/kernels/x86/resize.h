// Resize of the two trailing (spatial) axes of an NCHW f32 tensor, each output index reading two input
// indices with weights (nearest: one weight 1, the other 0; linear: 1 - f, f), as kernels/ref/resize.h plans
// them: a row of the output blends two input rows (a copy where one weight is 0), then reads two columns of
// the blend. A weight of 0 reads nothing (a NaN or infinity beside a nearest sample stays out, as in the
// reference).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

struct ResizeAxis {
  const int64_t* i0;  // per output index: the two input indices and their weights
  const int64_t* i1;
  const float* w0;
  const float* w1;
};

// x [planes, h, w] -> y [planes, oh, ow].
void resize2d_f32(const float* x, int64_t planes, int64_t h, int64_t w, const ResizeAxis& rows,
                  const ResizeAxis& cols, int64_t oh, int64_t ow, float* y, ThreadPool* pool);

// The same over channels-last maps: x [n, h, w, c] -> y [n, oh, ow, c], each output pixel's channels from the
// same blends of whole input pixels (the same arithmetic as resize2d_f32's, element for element).
void resize2d_nhwc_f32(const float* x, int64_t n, int64_t h, int64_t w, int64_t c, const ResizeAxis& rows,
                       const ResizeAxis& cols, int64_t oh, int64_t ow, float* y, ThreadPool* pool);

}  // namespace tessera::kernels::x86
