// fuse_rmsnorm: RMSNorm as exporters write it (T5's and LLaMA's, HuggingFace's x * rsqrt(mean(x^2) + eps)
// * weight) becomes one ONNX RMSNormalization (opset 23 semantics), which runs as one vectorized pass over
// each row instead of five or six elementwise and reduction nodes:
//   ms = ReduceMean(x^2, [-1]); r = Reciprocal(Sqrt(ms + eps)); y = x * r [* gamma]
//   ==>   RMSNormalization(x, gamma or ones, axis = -1, epsilon = eps)
// x^2 may be Pow(x, 2) or Mul(x, x); the normalization x * Reciprocal(Sqrt(.)), x / Sqrt(.) or
// x * Pow(., -0.5), operands in either order; gamma a constant of the last axis's size. Every intermediate
// must be used only inside the pattern (x itself anywhere: it is the residual stream).
#include <set>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

ir::Value* other(const ir::Node* n, const ir::Value* v) {
  if (n->inputs.size() != 2) return nullptr;
  return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : nullptr;
}

// A constant f32 vector of `len` elements (shape [len], or 1s then len).
bool row_constant(const ir::Graph& g, const ir::Value* v, int64_t len) {
  if (!is_constant(g, v) || v->initializer->dtype() != DType::f32 || v->initializer->numel() != len)
    return false;
  const Tensor& t = *v->initializer;
  return t.rank() >= 1 && t.dim(-1) == len;
}

bool mean_of_last_axis(const ir::Graph& g, const ir::Node* n, const ir::Value* v, int64_t rank) {
  if (!is_onnx_op(n, "ReduceMean") || n->inputs.empty() || n->inputs[0] != v || n->outputs.size() != 1 ||
      int_attr(n, "keepdims", 1) != 1)
    return false;
  const auto axes = reduce_axes(g, n, rank);
  return axes && axes->size() == 1 && (*axes)[0] == rank - 1;
}

bool fuse(ir::Graph& g, ir::Node* sq, std::set<const ir::Node*>& removed) {
  // the square of x: Pow(x, 2) or Mul(x, x)
  if (sq->inputs.empty() || sq->outputs.size() != 1 || sq->owner != &g) return false;
  ir::Value* x = sq->inputs[0];
  if (is_onnx_op(sq, "Pow")) {
    const auto e = sq->inputs.size() == 2 ? constant_scalar(sq->inputs[1]) : std::nullopt;
    if (!e || *e != 2.0f) return false;
  } else if (!is_onnx_op(sq, "Mul") || sq->inputs.size() != 2 || sq->inputs[1] != x) {
    return false;
  }
  if (!is_f32(x) || !x->type.shape || x->type.shape->empty() || !x->type.shape->back().known()) return false;
  const int64_t rank = int64_t(x->type.shape->size()), len = x->type.shape->back().value;
  ir::Node* mean = sole_consumer(g, sq->outputs[0]);
  if (!mean || !mean_of_last_axis(g, mean, sq->outputs[0], rank)) return false;
  ir::Node* add = sole_consumer(g, mean->outputs[0]);
  if (!is_onnx_op(add, "Add")) return false;
  const auto eps = constant_scalar(other(add, mean->outputs[0]));
  if (!eps) return false;
  std::vector<ir::Node*> gone = {sq, mean, add};
  // the normalization: x times 1 / sqrt, or over sqrt
  ir::Node* norm = nullptr;
  ir::Node* next = sole_consumer(g, add->outputs[0]);
  if (is_onnx_op(next, "Sqrt")) {
    gone.push_back(next);
    ir::Node* after = sole_consumer(g, next->outputs[0]);
    if (is_onnx_op(after, "Div") && after->inputs.size() == 2 && after->inputs[0] == x &&
        after->inputs[1] == next->outputs[0]) {
      norm = after;
    } else if (is_onnx_op(after, "Reciprocal")) {
      gone.push_back(after);
      norm = sole_consumer(g, after->outputs[0]);
      if (!is_onnx_op(norm, "Mul") || other(norm, after->outputs[0]) != x) return false;
    }
  } else if (is_onnx_op(next, "Pow")) {
    const auto e = next->inputs.size() == 2 && next->inputs[0] == add->outputs[0]
                       ? constant_scalar(next->inputs[1])
                       : std::nullopt;
    if (!e || *e != -0.5f) return false;
    gone.push_back(next);
    norm = sole_consumer(g, next->outputs[0]);
    if (!is_onnx_op(norm, "Mul") || other(norm, next->outputs[0]) != x) return false;
  }
  if (!norm || norm->outputs.size() != 1) return false;
  gone.push_back(norm);
  ir::Value* out = norm->outputs[0];
  ir::Value* gamma = nullptr;
  if (ir::Node* m = sole_consumer(g, out); is_onnx_op(m, "Mul") && row_constant(g, other(m, out), len))
    gamma = other(m, out), out = m->outputs[0], gone.push_back(m);
  if (!out || !is_f32(out)) return false;
  for (const ir::Node* n : gone)
    if (removed.count(n)) return false;
  const std::string name = mean->name;
  for (ir::Node* n : gone) removed.insert(n), g.remove_node(n);
  if (!gamma) {
    Tensor ones(DType::f32, {len});
    for (int64_t i = 0; i < len; ++i) ones.data<float>()[i] = 1.0f;
    gamma = g.add_value(g.unique_name(name + "_gamma"));
    gamma->type = ir::TypeInfo::tensor_of(ones);
    gamma->initializer = std::move(ones);
  }
  ir::Node* rms = g.add_node("RMSNormalization", name);
  rms->opset = 23;
  set_attr_int(rms, "axis", -1);
  set_attr_float(rms, "epsilon", *eps);
  g.connect_input(rms, x);
  g.connect_input(rms, gamma);
  g.connect_output(rms, out);
  return true;
}

}  // namespace

void fuse_rmsnorm(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::set<const ir::Node*> removed;  // by an earlier match (freed: never dereferenced)
  bool any = false;
  for (ir::Node* n : nodes)
    if (!removed.count(n) && fuse(g, n, removed)) any = true;
  if (any) g.topological_sort();
}

}  // namespace tessera::passes
