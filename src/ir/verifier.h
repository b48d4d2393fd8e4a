// Structural verification of a Graph against the op registry.
#pragma once

#include "ir/graph.h"

namespace tessera::ir {

// Checks, for g and (recursively) every subgraph:
//  - every node's (domain, op_type) has a schema in OpRegistry
//    (else Error unsupported: "node 'x' (Foo): unsupported op Foo in domain 'd'");
//  - input / output counts are within the schema's [min, max] (max -1: variadic);
//  - attributes the schema declares have the declared kind (undeclared ones are allowed);
//  - every non-omitted input is a value visible from the node (this graph or an
//    enclosing one) that is a graph input, an initializer or produced by a node
//    that comes earlier in the node order (or by a node of an enclosing graph);
//  - every graph output is produced, or is an input or initializer.
// Throws tessera::Error (invalid_model, or unsupported for unknown ops) naming the node.
void verify(const Graph& g);

}  // namespace tessera::ir
