// Small helpers the fusion passes share.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ew_program.h"
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

// Strassen GEMMs for constant weights (fuse_gemm; layout_nhwc's pointwise convs) unless TESSERA_STRASSEN=0.
inline bool strassen_enabled() {
  static const bool enabled = [] {
    const char* e = std::getenv("TESSERA_STRASSEN");
    return !(e && std::string_view(e) == "0");
  }();
  return enabled;
}

// An initializer the user cannot override (not also a graph input).
inline bool is_constant(const ir::Graph& g, const ir::Value* v) {
  return v && v->initializer && std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end();
}

inline bool is_onnx_op(const ir::Node* n, const char* op) {
  return n && n->domain.empty() && n->op_type == op;
}

inline bool is_f32(const ir::Value* v) {
  return v && v->type.elem == DType::f32;
}

// A constant f32 scalar (any shape with one element).
inline std::optional<float> constant_scalar(const ir::Value* v) {
  if (!v || !v->initializer || v->initializer->dtype() != DType::f32 || v->initializer->numel() != 1)
    return std::nullopt;
  return v->initializer->data<float>()[0];
}

// An activation a fused op applies in its epilogue ("Relu", "Clip" with bounds, "Silu", the GELUs).
struct FusedActivation {
  std::string op;
  float lo = 0, hi = 0;
};

// `c` as an activation of `x` the fused kernels can apply: Relu, HardSwish, or Clip with
// constant (or absent) bounds; with `gelu` (GEMM epilogues) also Gelu, as "Gelu" / "GeluTanh".
inline std::optional<FusedActivation> match_activation(const ir::Node* c, const ir::Value* x,
                                                       bool gelu = false) {
  if (is_onnx_op(c, "Relu")) return FusedActivation{"Relu"};
  if (is_onnx_op(c, "HardSwish") && c->inputs.size() == 1 && c->inputs[0] == x)
    return FusedActivation{"HardSwish"};
  if (gelu && is_onnx_op(c, "Gelu") && c->inputs.size() == 1 && c->inputs[0] == x) {
    const Attribute* a = c->attr("approximate");
    const std::string approx = a && a->kind == Attribute::Kind::s ? a->s : "none";
    if (approx == "none") return FusedActivation{"Gelu"};
    if (approx == "tanh") return FusedActivation{"GeluTanh"};
    return std::nullopt;
  }
  if (!is_onnx_op(c, "Clip") || c->inputs.empty() || c->inputs[0] != x) return std::nullopt;
  auto lo =
      c->inputs.size() > 1 && c->inputs[1] ? constant_scalar(c->inputs[1]) : std::optional<float>(-3.4e38f);
  auto hi =
      c->inputs.size() > 2 && c->inputs[2] ? constant_scalar(c->inputs[2]) : std::optional<float>(3.4e38f);
  if (!lo || !hi) return std::nullopt;
  return FusedActivation{"Clip", *lo, *hi};
}

// SiLU of x as the exporters write it, Mul(x, Sigmoid(x)), where x feeds just those two nodes and the
// Sigmoid just the Mul: {the Sigmoid, the Mul} (both fold into an epilogue as "Silu"), else {nullptr,
// nullptr}.
inline std::pair<ir::Node*, ir::Node*> match_silu(const ir::Graph& g, const ir::Value* x) {
  if (!x || is_graph_output(g, x) || x->uses.size() != 2) return {nullptr, nullptr};
  for (int s = 0; s < 2; ++s) {
    ir::Node* sig = x->uses[size_t(s)].first;
    ir::Node* mul = x->uses[size_t(1 - s)].first;
    if (!is_onnx_op(sig, "Sigmoid") || sig->inputs.size() != 1 || sig->outputs.size() != 1 ||
        sig->owner != &g || sole_consumer(g, sig->outputs[0]) != mul)
      continue;
    if (!is_onnx_op(mul, "Mul") || mul->inputs.size() != 2 || mul->outputs.size() != 1 || mul->owner != &g)
      continue;
    const bool operands = (mul->inputs[0] == x && mul->inputs[1] == sig->outputs[0]) ||
                          (mul->inputs[1] == x && mul->inputs[0] == sig->outputs[0]);
    if (operands && mul->outputs[0] && is_f32(mul->outputs[0])) return {sig, mul};
  }
  return {nullptr, nullptr};
}

// Attribute getters: the value when present with the expected kind, else the default.
inline std::vector<int64_t> ints_attr(const ir::Node* n, const char* key, std::vector<int64_t> def) {
  const Attribute* a = n->attr(key);
  return a && a->kind == Attribute::Kind::ints && !a->ints.empty() ? a->ints : def;
}
inline int64_t int_attr(const ir::Node* n, const char* key, int64_t def) {
  const Attribute* a = n->attr(key);
  return a && a->kind == Attribute::Kind::i ? a->i : def;
}
inline float float_attr(const ir::Node* n, const char* key, float def) {
  const Attribute* a = n->attr(key);
  return a && a->kind == Attribute::Kind::f ? a->f : def;
}
inline std::string string_attr(const ir::Node* n, const char* key, std::string def) {
  const Attribute* a = n->attr(key);
  return a && a->kind == Attribute::Kind::s ? a->s : def;
}

// Attribute setters for nodes a pass creates.
inline void set_attr_int(ir::Node* n, const std::string& key, int64_t v) {
  n->attrs[key] = Attribute::of_int(v);
}
inline void set_attr_float(ir::Node* n, const std::string& key, float v) {
  n->attrs[key] = Attribute::of_float(v);
}
inline void set_attr_ints(ir::Node* n, const std::string& key, std::vector<int64_t> v) {
  n->attrs[key] = Attribute::of_ints(std::move(v));
}

// Writes the activation / clip_min / clip_max attributes of a fused node; `prefix` names another
// stage's ("pw_": FusedPwDwConv's pointwise conv).
inline void set_activation_attrs(ir::Node* f, const FusedActivation& a, const std::string& prefix = "") {
  f->attrs[prefix + "activation"] = Attribute::of_string(a.op);
  f->attrs[prefix + "clip_min"] = Attribute::of_float(a.lo);
  f->attrs[prefix + "clip_max"] = Attribute::of_float(a.hi);
}

// A new tessera.FusedGemm node over B (K x N) packed in blocks of kc rows and panels nr wide (strassen:
// StrassenB's pieces, coded: CodedB's; split: the packing followed by B split for AMX, gemm_amx.h); its
// inputs, output and activation are the caller's to connect.
inline ir::Node* add_fused_gemm(ir::Graph& g, const std::string& name, int64_t k, int64_t n, int64_t kc,
                                int64_t nr, bool strassen, bool coded = false, bool split = false) {
  ir::Node* f = g.add_node("FusedGemm", name);
  f->domain = "tessera";
  f->opset = 1;
  set_attr_int(f, "K", k);
  set_attr_int(f, "N", n);
  set_attr_int(f, "kc", kc);
  set_attr_int(f, "nr", nr);
  if (strassen) set_attr_int(f, "strassen", 1);
  if (coded) set_attr_int(f, "coded", 1);
  if (split) set_attr_int(f, "split", 1);
  return f;
}

// The activation a fused node's attributes name (set_activation_attrs without a prefix).
// A Reduce* node's axes: its attribute (opsets < 18) or constant int64 second input (18+), each made
// non-negative for `rank`; nullopt where they are not known at session creation.
inline std::optional<std::vector<int64_t>> reduce_axes(const ir::Graph& g, const ir::Node* n, int64_t rank) {
  std::vector<int64_t> axes = ints_attr(n, "axes", {});
  if (n->inputs.size() > 1 && n->inputs[1]) {
    const ir::Value* a = n->inputs[1];
    if (!is_constant(g, a) || a->initializer->dtype() != DType::i64) return std::nullopt;
    const Tensor t = a->initializer->contiguous();
    axes.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  }
  for (int64_t& x : axes) x = x < 0 ? x + rank : x;
  return axes;
}

// An ONNX op that computes each output element from the same element of its (broadcast) inputs alone — an
// elementwise program's op (core/ew_program.def) with its arity, or one of the others below — so that it
// means the same whatever layout or unit axes its operands take (layout_nhwc's twins, lift_1d's lifted maps).
inline bool onnx_pointwise(const ir::Node* n) {
  static const std::set<std::string, std::less<>> kOthers = {
      "Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "Softplus",   "Softsign",
      "Tanh", "Sigmoid",   "Exp",         "Erf",       "Neg", "Abs",  "Sqrt", "Reciprocal", "Floor",
      "Ceil", "Round",     "Sign",        "Clip",      "Max", "Min",  "Pow",  "Gelu",       "ThresholdedRelu",
      "PRelu"};
  if (!n->domain.empty() || n->outputs.size() != 1 || !n->subgraphs().empty() || n->inputs.empty())
    return false;
  const auto op = ew_from_onnx(n->op_type);
  return op ? int(n->inputs.size()) == ew_arity(*op) : kOthers.count(n->op_type) != 0;
}

// A new initializer holding t, named after base.
inline ir::Value* add_constant(ir::Graph& g, const std::string& base, Tensor t) {
  ir::Value* c = g.add_value(g.unique_name(base));
  c->type = ir::TypeInfo::tensor_of(t);
  c->initializer = std::move(t);
  return c;
}

// A new int64 1-D initializer holding v.
inline ir::Value* add_i64_const(ir::Graph& g, const std::string& base, const std::vector<int64_t>& v) {
  Tensor t(DType::i64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return add_constant(g, base, std::move(t));
}

// Node p's output idx becomes `to`; the value there before keeps its name and uses but loses its producer.
inline void move_output(ir::Node* p, int idx, ir::Value* to) {
  ir::Value* from = p->outputs[size_t(idx)];
  p->outputs[size_t(idx)] = to;
  to->producer = p, to->producer_output = idx;
  from->producer = nullptr, from->producer_output = -1;
}

// out = Reshape(in, shape) (opset 14: a 0 keeps the input's dim, -1 is inferred).
inline ir::Node* add_reshape(ir::Graph& g, const std::string& name, ir::Value* in,
                             const std::vector<int64_t>& shape, ir::Value* out) {
  ir::Node* r = g.add_node("Reshape", g.unique_name(name));
  r->opset = 14;
  g.connect_input(r, in);
  g.connect_input(r, add_i64_const(g, name + "_shape", shape));
  g.connect_output(r, out);
  return r;
}

inline FusedActivation fused_activation_of(const ir::Node* n) {
  return {string_attr(n, "activation", ""), float_attr(n, "clip_min", 0), float_attr(n, "clip_max", 0)};
}

}  // namespace tessera::passes
