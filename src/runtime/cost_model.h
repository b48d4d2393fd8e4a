// Work an executed node did, for the profiler's GFLOP/s, GB/s and roofline
// columns: FLOPs counted as 2 per multiply-add for contractions (MatMul, Gemm,
// Conv and their fused forms), 1 per output element otherwise; bytes as every
// tensor input read once plus every output written once. These are the usual
// roofline conventions, not a cycle model.
#pragma once

#include <string>
#include <vector>

#include "core/kernel_context.h"

namespace tessera::runtime {

struct NodeCost {
  double flops = 0;
  double bytes = 0;
  std::string shapes;  // "f32[1,3,224,224] f32[64,3,7,7] -> f32[1,64,112,112]"
};

NodeCost node_cost(const KernelContext& ctx, const std::vector<DataValue>& outputs);

}  // namespace tessera::runtime
