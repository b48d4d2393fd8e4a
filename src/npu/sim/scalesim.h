// `scalesim` timing mode: SCALE-Sim v2's compute cycles (CALC bandwidth mode), exactly.
//
// A conv layer maps to a GEMM of M = output pixels, N = filters, K = R*S*C, the output size being
// SCALE-Sim's unpadded ceil((H - R + s) / s). On an R x C array:
//   ws: K on rows, N on columns, M streamed; F = ceil(K/R)*ceil(N/C) folds of 2R + C + M - 2 cycles
//   os: M on rows, N on columns, K streamed; F = ceil(M/R)*ceil(N/C) folds of R + C + K - 2 cycles
//   is: K on rows, M on columns, N streamed; F = ceil(K/R)*ceil(M/C) folds of 2R + C + N - 2 cycles
// and SCALE-Sim reports F * cycles_per_fold - 1 (the index of the last cycle).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "npu/arch/arch_config.h"

namespace tessera::npu {

struct TopologyLayer {
  std::string name;
  int64_t ifmap_h = 0, ifmap_w = 0, filter_h = 0, filter_w = 0, channels = 0, num_filters = 0, stride = 1;
  int64_t ofmap_h() const;  // SCALE-Sim: ceil((H - R + s) / s), no padding
  int64_t ofmap_w() const;
  int64_t gemm_m() const { return ofmap_h() * ofmap_w(); }
  int64_t gemm_n() const { return num_filters; }
  int64_t gemm_k() const { return filter_h * filter_w * channels; }
};

// A SCALE-Sim topology CSV: a header line, then "name, H, W, R, S, C, N, stride," rows
// (trailing commas and blank lines allowed). Throws tessera::Error naming the line on bad input.
std::vector<TopologyLayer> parse_topology_csv(const std::string& text);
std::vector<TopologyLayer> read_topology_csv(const std::string& path);
// A GEMM as a one-layer topology (M x N x K): a 1x1 conv of M pixels.
TopologyLayer gemm_layer(const std::string& name, int64_t m, int64_t n, int64_t k);

struct ScaleSimResult {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  int64_t folds = 0;
  int64_t cycles_per_fold = 0;
  int64_t total_cycles = 0;  // as SCALE-Sim reports it (folds * cycles_per_fold - 1)
  int64_t stall_cycles = 0;  // always 0 in CALC mode
  double overall_util = 0;   // % : MACs / (R*C*total_cycles)
  double mapping_eff = 0;    // % : mean over folds of used PEs / (R*C)
  double compute_util = 0;   // % : mean over folds of MACs / (R*C*fold cycles)
  int64_t macs() const { return m * n * k; }
};

ScaleSimResult scalesim_gemm(const std::string& name, int64_t m, int64_t n, int64_t k, int rows, int cols,
                             Dataflow df);
ScaleSimResult scalesim_layer(const TopologyLayer& l, const ArchConfig& a);
std::vector<ScaleSimResult> scalesim_topology(const std::vector<TopologyLayer>& layers, const ArchConfig& a);

// SCALE-Sim's COMPUTE_REPORT.csv:
// "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,"
void write_compute_report(std::ostream& os, const std::vector<ScaleSimResult>& results);

}  // namespace tessera::npu
