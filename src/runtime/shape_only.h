// Nodes whose outputs depend only on the shapes of the graph's inputs (and on
// constants): the Shape -> Gather -> Unsqueeze -> Concat -> Reshape arithmetic
// exporters emit for dynamic axes. A memory plan is made per set of input
// shapes, so the runtime evaluates these nodes once, on the recording run, and
// later runs with the same shapes reuse their outputs instead of running
// hundreds of tiny kernels (GPT-2: ~500 of ~900 nodes).
//
// Conservative by construction: a value's shape counts as determined by the
// input shapes only when its producer is on an allowlist of ops whose output
// shape follows from input shapes and attributes (shape-parameter inputs such
// as Reshape's must themselves be shape-only); anything data-dependent
// (NonZero, TopK, control flow, random ops, ...) ends the chain.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace tessera::runtime {

// One flag per node of g, in g.nodes() order.
std::vector<bool> shape_only_nodes(const ir::Graph& g);

}  // namespace tessera::runtime
