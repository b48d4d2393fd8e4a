// Small helpers the fusion passes share.
#pragma once

#include <algorithm>
#include <optional>

#include "ir/graph.h"

namespace tessera::passes {

inline bool is_graph_output(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

// The only node that reads v (v is not a graph output and is read by nothing
// else, subgraphs included), or nullptr.
inline ir::Node* sole_consumer(const ir::Graph& g, const ir::Value* v) {
  if (!v || is_graph_output(g, v) || v->uses.size() != 1) return nullptr;
  ir::Node* n = v->uses[0].first;
  return n->owner == &g ? n : nullptr;
}

// An initializer the user cannot override (not also a graph input).
inline bool is_constant(const ir::Graph& g, const ir::Value* v) {
  return v && v->initializer && std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end();
}

inline bool is_onnx_op(const ir::Node* n, const char* op) { return n && n->domain.empty() && n->op_type == op; }

inline bool is_f32(const ir::Value* v) { return v && v->type.elem == DType::f32; }

// A constant f32 scalar (any shape with one element).
inline std::optional<float> constant_scalar(const ir::Value* v) {
  if (!v || !v->initializer || v->initializer->dtype() != DType::f32 || v->initializer->numel() != 1)
    return std::nullopt;
  return v->initializer->data<float>()[0];
}

}  // namespace tessera::passes
