// fuse_rmsnorm: RMSNorm as exporters write it (T5's and LLaMA's, HuggingFace's x * rsqrt(mean(x^2) + eps)
// * weight) becomes one ONNX RMSNormalization (opset 23 semantics), which runs as one vectorized pass over
// each row instead of five or six elementwise and reduction nodes:
//   ms = ReduceMean(x^2, [-1]); r = Reciprocal(Sqrt(ms + eps)); y = x * r [* gamma]
//   ==>   RMSNormalization(x, gamma or ones, axis = -1, epsilon = eps)
// x^2 may be Pow(x, 2) or Mul(x, x); the normalization x * Reciprocal(Sqrt(.)), x / Sqrt(.) or
// x * Pow(., -0.5), operands in either order; gamma a constant of the last axis's size. Every intermediate
// must be used only inside the pattern (x itself anywhere: it is the residual stream).
#include <set>

#include "passes/norm_fusion.h"
#include "passes/pass_manager.h"

namespace tessera::passes {

namespace {

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
  const int64_t len = x->type.shape->back().value;
  ir::Node* mean = sole_consumer(g, sq->outputs[0]);
  if (!mean || !mean_of_last_axis(g, mean, sq->outputs[0])) return false;
  ir::Node* add = sole_consumer(g, mean->outputs[0]);
  if (!is_onnx_op(add, "Add")) return false;
  const auto eps = constant_scalar(other_operand(add, mean->outputs[0]));
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
      if (!is_onnx_op(norm, "Mul") || other_operand(norm, after->outputs[0]) != x) return false;
    }
  } else if (is_onnx_op(next, "Pow")) {
    const auto e = next->inputs.size() == 2 && next->inputs[0] == add->outputs[0]
                       ? constant_scalar(next->inputs[1])
                       : std::nullopt;
    if (!e || *e != -0.5f) return false;
    gone.push_back(next);
    norm = sole_consumer(g, next->outputs[0]);
    if (!is_onnx_op(norm, "Mul") || other_operand(norm, next->outputs[0]) != x) return false;
  }
  if (!norm || norm->outputs.size() != 1) return false;
  gone.push_back(norm);
  ir::Value* out = norm->outputs[0];
  ir::Value* gamma = nullptr;
  if (ir::Node* m = sole_consumer(g, out);
      is_onnx_op(m, "Mul") && row_constant(g, other_operand(m, out), len))
    gamma = other_operand(m, out), out = m->outputs[0], gone.push_back(m);
  if (!out || !is_f32(out)) return false;
  const std::string name = mean->name;
  for (ir::Node* n : gone) removed.insert(n), g.remove_node(n);
  if (!gamma) gamma = ones_row(g, name + "_gamma", len);
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
  fuse_each_node(g, fuse);
}

}  // namespace tessera::passes
