// The graph optimization pipeline the runtime runs after import and shape
// inference. Level 0 runs nothing; higher levels run more passes.
#pragma once

#include "ir/graph.h"

namespace tessera::passes {

void run_pipeline(ir::Model& model, int level);

}  // namespace tessera::passes
