// ir::verify comes from the frontend branch (src/ir/verifier.h). Until that
// header is in the tree, declare it here; runtime/fallbacks.cpp supplies a
// weak no-op definition that the real one overrides.
#pragma once

#if __has_include("ir/verifier.h")
#include "ir/verifier.h"
#define TESSERA_HAVE_IR_VERIFIER 1
#else
#include "ir/graph.h"
namespace tessera::ir {
void verify(const Graph& g);
}  // namespace tessera::ir
#define TESSERA_HAVE_IR_VERIFIER 0
#endif
