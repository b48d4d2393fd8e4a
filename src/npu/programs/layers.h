// Programs for layers: tiled, double-buffered NPU programs for GEMM and Conv2D (padding, strides,
// dilation, groups, depthwise) for any arch config. This is the compiler's first piece; it knows
// the hardware only through ArchConfig and the ISA.
//
// HBM layout of a layer program:
//   input   NHWC [batch, H, W, C] of in_dtype at input_addr
//   weights pre-tiled: one R x C tile (row-major, zero-padded) per (group, N tile, K chunk), in
//           the order written by pack_conv_weights, at weight_addr
//   output  NHWC [batch, OH, OW, N] of out_dtype at output_addr
// A GEMM Y[M,N] = A[M,K] * B[K,N] is the 1x1 conv of an [1, M, 1, K] input with B as [N, K, 1, 1].
#pragma once

#include <cstdint>
#include <vector>

#include "npu/arch/arch_config.h"
#include "npu/isa/isa.h"
#include "npu/sim/scalesim.h"

namespace tessera::npu {

struct ConvSpec {
  int64_t batch = 1, in_channels = 1, in_h = 1, in_w = 1;
  int64_t out_channels = 1, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  NDType in_dtype = NDType::i8;   // int8, bfloat16 or a float8
  NDType out_dtype = NDType::i32; // int32 for int8 inputs (raw accumulators), else float32; or int8 with scale
  float out_scale = 1.0f;         // epilogue (VPU.ACCMOV): out = act(acc * scale) (+ zero point 0)
  bool relu = false;

  int64_t out_h() const;
  int64_t out_w() const;
  void validate() const;
};

ConvSpec gemm_spec(int64_t m, int64_t n, int64_t k, NDType in = NDType::i8);
// A SCALE-Sim topology layer as a conv with SCALE-Sim's output size ceil((H - R + s) / s): no padding
// at the top/left, and the bottom/right padded just enough for that many outputs, so M = OH*OW matches.
ConvSpec topology_conv_spec(const TopologyLayer& l, NDType in = NDType::i8);

struct LayerProgram {
  Program program;
  uint64_t input_addr = 0, weight_addr = 0, output_addr = 0, hbm_size = 0;
  int64_t weight_tiles = 0;  // DMA.LOADW instructions
  int64_t m_tiles = 0, n_tiles = 0, k_chunks = 0;
};

LayerProgram conv_program(const ConvSpec& s, const ArchConfig& a);

// Lays the OIHW weights (out_channels x in_channels/groups x kernel_h x kernel_w elements of the
// spec's in_dtype, raw bytes) into the pre-tiled form the program loads (bytes at weight_addr).
std::vector<uint8_t> pack_conv_weights(const ConvSpec& s, const ArchConfig& a, const std::vector<uint8_t>& oihw);

}  // namespace tessera::npu
