// fold_batchnorm: Conv(X, W, B?) -> BatchNormalization(scale, bias, mean, var)
// in inference mode, with all of W, B, scale, bias, mean, var constant, becomes
// one Conv with W'[o] = W[o] * s[o] and B'[o] = (B[o] - mean[o]) * s[o] + bias[o],
// s = scale / sqrt(var + epsilon). The folding is done in double.
// A BatchNormalization that no conv feeds (DenseNet's BN -> ReLU -> Conv, a pre-activation ResNet) becomes
// Mul(X, s) + t with t = bias - mean * s, constants shaped [C, 1, ...] to broadcast over X's spatial dims:
// the elementwise passes fuse it with what follows, and the NHWC region runs it on channels-last twins.
#include <cmath>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

bool constant_vector(const ir::Graph& g, const ir::Value* v, int64_t n) {
  return is_constant(g, v) && v->initializer->dtype() == DType::f32 && v->initializer->numel() == n;
}

bool try_fold(ir::Graph& g, ir::Node* conv) {
  if (!is_onnx_op(conv, "Conv") || conv->inputs.size() < 2 || conv->outputs.size() != 1) return false;
  ir::Value* w = conv->inputs[1];
  if (!is_constant(g, w) || w->initializer->dtype() != DType::f32 || w->initializer->rank() < 3) return false;
  const int64_t oc = w->initializer->dim(0);
  ir::Value* b = conv->inputs.size() > 2 ? conv->inputs[2] : nullptr;
  if (b && !constant_vector(g, b, oc)) return false;
  ir::Node* bn = sole_consumer(g, conv->outputs[0]);
  if (!is_onnx_op(bn, "BatchNormalization") || bn->inputs.size() != 5 || bn->inputs[0] != conv->outputs[0])
    return false;
  if (bn->outputs.empty() || !bn->outputs[0]) return false;
  for (size_t i = 1; i < bn->outputs.size(); ++i)
    if (bn->outputs[i]) return false;  // training-mode outputs
  const Attribute* tm = bn->attr("training_mode");
  if (tm && tm->i != 0) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!constant_vector(g, bn->inputs[i], oc)) return false;
  const Attribute* ea = bn->attr("epsilon");
  const double eps = ea ? ea->f : 1e-5;
  const Tensor wt = w->initializer->contiguous();
  const Tensor sc = bn->inputs[1]->initializer->contiguous(), bi = bn->inputs[2]->initializer->contiguous(),
               mu = bn->inputs[3]->initializer->contiguous(), var = bn->inputs[4]->initializer->contiguous();
  Tensor nw(DType::f32, wt.shape()), nb(DType::f32, {oc});
  const int64_t per = wt.numel() / oc;
  for (int64_t o = 0; o < oc; ++o) {
    const double s = double(sc.data<float>()[o]) / std::sqrt(double(var.data<float>()[o]) + eps);
    for (int64_t i = 0; i < per; ++i)
      nw.data<float>()[o * per + i] = float(wt.data<float>()[o * per + i] * s);
    const double b0 = b ? double(b->initializer->contiguous().data<float>()[o]) : 0.0;
    nb.data<float>()[o] = float((b0 - mu.data<float>()[o]) * s + bi.data<float>()[o]);
  }
  ir::Value* wv = g.add_value(g.unique_name(w->name + "_bn"));
  wv->type = ir::TypeInfo::tensor_of(nw);
  wv->initializer = std::move(nw);
  ir::Value* bv = g.add_value(g.unique_name(bn->name + "_bias"));
  bv->type = ir::TypeInfo::tensor_of(nb);
  bv->initializer = std::move(nb);
  g.set_input(conv, 1, wv);
  if (conv->inputs.size() > 2)
    g.set_input(conv, 2, bv);
  else
    g.connect_input(conv, bv);
  ir::Value* mid = conv->outputs[0];
  ir::Value* out = bn->outputs[0];
  g.remove_node(bn);
  mid->producer = nullptr;
  conv->outputs[0] = out;
  out->producer = conv;
  out->producer_output = 0;
  return true;
}

// The inference-mode BatchNormalization n (constant f32 parameters of X's channel count) as Mul + Add.
bool try_affine(ir::Graph& g, ir::Node* bn) {
  if (!is_onnx_op(bn, "BatchNormalization") || bn->inputs.size() != 5 || bn->outputs.empty() ||
      !bn->outputs[0])
    return false;
  for (size_t i = 1; i < bn->outputs.size(); ++i)
    if (bn->outputs[i]) return false;
  const Attribute* tm = bn->attr("training_mode");
  if (tm && tm->i != 0) return false;
  ir::Value* x = bn->inputs[0];
  if (!x || !is_f32(x) || !x->type.shape || x->type.shape->size() < 2 || !(*x->type.shape)[1].known())
    return false;
  const int64_t c = (*x->type.shape)[1].value, rank = int64_t(x->type.shape->size());
  for (size_t i = 1; i < 5; ++i)
    if (!constant_vector(g, bn->inputs[i], c)) return false;
  const Attribute* ea = bn->attr("epsilon");
  const double eps = ea ? ea->f : 1e-5;
  const Tensor sc = bn->inputs[1]->initializer->contiguous(), bi = bn->inputs[2]->initializer->contiguous(),
               mu = bn->inputs[3]->initializer->contiguous(), var = bn->inputs[4]->initializer->contiguous();
  std::vector<int64_t> shape(size_t(rank - 1), 1);
  shape[0] = c;
  Tensor ts(DType::f32, shape), tt(DType::f32, shape);
  for (int64_t o = 0; o < c; ++o) {
    const double k = double(sc.data<float>()[o]) / std::sqrt(double(var.data<float>()[o]) + eps);
    ts.data<float>()[o] = float(k);
    tt.data<float>()[o] = float(double(bi.data<float>()[o]) - double(mu.data<float>()[o]) * k);
  }
  auto constant = [&](const std::string& base, Tensor t) {
    ir::Value* v = g.add_value(g.unique_name(base));
    v->type = ir::TypeInfo::tensor_of(t);
    v->initializer = std::move(t);
    return v;
  };
  ir::Value* out = bn->outputs[0];
  ir::Value* scaled = g.add_value(g.unique_name(bn->name + "_scaled"));
  scaled->type = out->type;
  ir::Value* s_v = constant(bn->name + "_s", std::move(ts));
  ir::Value* t_v = constant(bn->name + "_t", std::move(tt));
  const std::string name = bn->name;
  g.remove_node(bn);
  ir::Node* mul = g.add_node("Mul", g.unique_name(name + "_scale"));
  ir::Node* add = g.add_node("Add", name);
  mul->opset = add->opset = 14;
  g.connect_input(mul, x);
  g.connect_input(mul, s_v);
  g.connect_output(mul, scaled);
  g.connect_input(add, scaled);
  g.connect_input(add, t_v);
  g.connect_output(add, out);
  return true;
}

}  // namespace

void fold_batchnorm(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  bool any = false;
  for (ir::Node* n : nodes) any |= try_fold(g, n);
  if (any) g.remove_unused_values();
  nodes.clear();
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  bool affine = false;
  for (ir::Node* n : nodes) affine |= try_affine(g, n);
  if (affine) {
    g.topological_sort();
    g.remove_unused_values();
  }
}

}  // namespace tessera::passes
