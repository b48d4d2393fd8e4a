// The graph optimization pipeline the runtime runs after import and shape
// inference (passes.def lists the passes). Level 0 runs nothing.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera::passes {

#define PASS(name, fn, level) void fn(ir::Graph& g);
#include "passes/passes.def"
#undef PASS

// Runs the passes enabled at `level`. When dump_after names a pass, the graph
// text after that pass is stored in *dump (and "" if the pass did not run).
void run_pipeline(ir::Model& model, int level, const std::string& dump_after = {},
                  std::string* dump = nullptr);

std::vector<std::string> pass_names();

}  // namespace tessera::passes
