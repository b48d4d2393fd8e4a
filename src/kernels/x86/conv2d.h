// f32 2-D convolution, NCHW, for the CPU backend:
//  - 1x1 / stride 1 / no padding: a GEMM on the input as it lies (no copy);
//  - general: im2col of one image (and group) into scratch, then GEMM;
//  - depthwise (groups == C == OC): a direct kernel over output rows.
// Bias, residual add and ReLU/Clip are fused into the GEMM epilogue.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

struct Conv2dParams {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input
  int64_t oc = 0, kh = 1, kw = 1;      // weights [oc, c/groups, kh, kw]
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int64_t groups = 1;
  int64_t oh() const { return (h + pad_t + pad_b - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pad_l + pad_r - dw * (kw - 1) - 1) / sw + 1; }
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && pad_t == 0 && pad_l == 0 && pad_b == 0 && pad_r == 0;
  }
  bool is_depthwise() const { return groups == c && groups == oc && groups > 1; }
};

struct ConvEpilogue {
  const float* bias = nullptr;      // [oc]
  const float* residual = nullptr;  // same shape as the output
  Activation act = Activation::none;
  float clip_min = 0, clip_max = 0;
};

// Floats of scratch conv2d_f32 needs (0 for pointwise and depthwise).
size_t conv2d_scratch_floats(const Conv2dParams& p);

void conv2d_f32(const Conv2dParams& p, const float* x, const float* w, const ConvEpilogue& ep, float* y,
                float* scratch, ThreadPool* pool);

// A 2-D transposed convolution (ONNX ConvTranspose, group 1), NCHW: input pixel (iy, ix) adds
// x * w[c][o][r][q] to output pixel (iy * sh - pad_t + r * dh, ix * sw - pad_l + q * dw); outputs outside
// [0, oh) x [0, ow) are dropped.
struct ConvTranspose2dParams {
  int64_t n = 1, c = 0, h = 0, w = 0, oc = 0, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pad_t = 0, pad_l = 0, oh = 0, ow = 0;
};
// y [n, oc, oh, ow] = bias + ConvTranspose(x [n, c, h, w], w [c, oc, kh, kw]): every tap's products of an
// image as one GEMM (W^T X: [oc * kh * kw, h * w], K = c), then scattered into y (col2im), threaded over
// output channels.
void conv_transpose2d_f32(const ConvTranspose2dParams& p, const float* x, const float* w, const float* bias,
                          float* y, ThreadPool* pool);

}  // namespace tessera::kernels::x86
