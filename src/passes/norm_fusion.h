// Helpers fuse_layernorm and fuse_rmsnorm share: the decomposed norms they match (ReduceMean over the last
// axis, a row of constants, the other operand of a binary node), the ones a scale-less norm gets, and the
// driver that tries every node once.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "passes/rewrite_util.h"

namespace tessera::passes {

// ReduceMean of v over its last axis alone, keepdims.
inline bool mean_of_last_axis(const ir::Graph& g, const ir::Node* n, const ir::Value* v) {
  if (!is_onnx_op(n, "ReduceMean") || n->inputs.empty() || n->inputs[0] != v || n->outputs.size() != 1 ||
      int_attr(n, "keepdims", 1) != 1 || !v->type.shape)
    return false;
  const int64_t rank = int64_t(v->type.shape->size());
  const auto axes = reduce_axes(g, n, rank);
  return axes && axes->size() == 1 && (*axes)[0] == rank - 1;
}

// The other operand of binary node n, given one of them.
inline ir::Value* other_operand(const ir::Node* n, const ir::Value* v) {
  if (n->inputs.size() != 2) return nullptr;
  return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : nullptr;
}

// A constant f32 vector of `len` elements (shape [len], or 1s then len).
inline bool row_constant(const ir::Graph& g, const ir::Value* v, int64_t len) {
  if (!is_constant(g, v) || v->initializer->dtype() != DType::f32 || v->initializer->numel() != len)
    return false;
  const Tensor& t = *v->initializer;
  return t.rank() >= 1 && t.dim(-1) == len;
}

// A new initializer of `len` ones (the scale of a norm written without one).
inline ir::Value* ones_row(ir::Graph& g, const std::string& name, int64_t len) {
  Tensor ones(DType::f32, {len});
  for (int64_t i = 0; i < len; ++i) ones.data<float>()[i] = 1.0f;
  ir::Value* v = g.add_value(g.unique_name(name));
  v->type = ir::TypeInfo::tensor_of(ones);
  v->initializer = std::move(ones);
  return v;
}

// fuse(g, node, removed) on every node of g as it was, skipping those an earlier match removed (freed: never
// dereferenced); the graph re-sorted where any matched.
template <class F>
void fuse_each_node(ir::Graph& g, F&& fuse) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::set<const ir::Node*> removed;
  bool any = false;
  for (ir::Node* n : nodes)
    if (!removed.count(n) && fuse(g, n, removed)) any = true;
  if (any) g.topological_sort();
}

}  // namespace tessera::passes
