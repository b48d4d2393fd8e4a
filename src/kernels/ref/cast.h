// Element-type conversion as ONNX Cast defines it, usable by any reference
// kernel: floats truncate toward zero into integers, integers wrap into
// narrower integers, the f8 formats saturate or not, strings parse / print.
#pragma once

#include "core/float_types.h"
#include "core/tensor.h"

namespace tessera::kernels::ref {

struct CastOptions {
  bool saturate = true;                        // f8 formats (and e8m0): clamp to max finite
  E8M0Rounding e8m0_rounding = E8M0Rounding::up;
};

// Converts `x` (any layout) to a new contiguous tensor of type `to`.
// Throws Error(unsupported) for complex types.
Tensor cast_tensor(const Tensor& x, DType to, const CastOptions& opts = {});

}  // namespace tessera::kernels::ref
