// fuse_conv: a 2-D or 3-D f32 Conv with constant weights becomes tessera.FusedConv, with
// a following residual Add (the other operand has the conv output's shape) and
// a Relu / Clip / SiLU (Mul(x, Sigmoid(x))) folded into its epilogue — the ResNet, MobileNet and
// EfficientNet blocks:
//   Conv(X, W, B?) [-> Add(., R)] [-> Relu | Clip(., lo, hi) | SiLU]
// auto_pad is resolved to explicit pads when the input's spatial dims are known.
// A 1-D Conv (audio front ends: Whisper's, wav2vec's) first becomes the 2-D Conv of height 1 between two
// Reshapes, so that it runs on the 2-D kernels (it ran on the reference kernel, 0.6 GFLOP/s).
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

std::vector<int64_t> ints_or(const ir::Node* n, const char* key, std::vector<int64_t> def) {
  const Attribute* a = n->attr(key);
  return a && a->kind == Attribute::Kind::ints && !a->ints.empty() ? a->ints : def;
}

bool same_shape(const ir::TypeInfo& a, const ir::TypeInfo& b) {
  return a.shape && b.shape && a.shape->size() == b.shape->size() && *a.shape == *b.shape &&
         std::all_of(a.shape->begin(), a.shape->end(),
                     [](const ir::Dim& d) { return d.known() || !d.symbol.empty(); });
}

struct Match {
  ir::Node* conv = nullptr;
  std::vector<ir::Node*> absorbed;
  ir::Value* residual = nullptr;
  ir::Value* out = nullptr;
  std::vector<int64_t> kernel, strides, dilations, pads;
  int64_t group = 1;
  std::optional<FusedActivation> act;
};

bool match_conv(const ir::Graph& g, ir::Node* n, Match& m) {
  if (!is_onnx_op(n, "Conv") || n->inputs.size() < 2 || !is_f32(n->inputs[0])) return false;
  const ir::Value* w = n->inputs[1];
  if (!is_constant(g, w) || w->initializer->dtype() != DType::f32 ||
      (w->initializer->rank() != 4 && w->initializer->rank() != 5))
    return false;
  if (n->inputs.size() > 2 && n->inputs[2] && !is_constant(g, n->inputs[2])) return false;
  const auto& xs = n->inputs[0]->type.shape;
  const Tensor& wt = *w->initializer;
  const size_t r = size_t(wt.rank() - 2);  // spatial dims: 2, or 3 (a video model's Conv3d)
  if (!xs || xs->size() != r + 2) return false;
  m.kernel = ints_or(n, "kernel_shape", std::vector<int64_t>(wt.shape().begin() + 2, wt.shape().end()));
  m.strides = ints_or(n, "strides", std::vector<int64_t>(r, 1));
  m.dilations = ints_or(n, "dilations", std::vector<int64_t>(r, 1));
  m.pads = ints_or(n, "pads", std::vector<int64_t>(2 * r, 0));
  const Attribute* gr = n->attr("group");
  m.group = gr ? gr->i : 1;
  if (m.kernel.size() != r || m.strides.size() != r || m.dilations.size() != r || m.pads.size() != 2 * r)
    return false;
  const Attribute* ap = n->attr("auto_pad");
  const std::string auto_pad = ap ? ap->s : "NOTSET";
  if (auto_pad == "VALID") {
    m.pads.assign(2 * r, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < r; ++i) {
      const ir::Dim& d = (*xs)[size_t(2 + i)];
      if (!d.known()) return false;
      const int64_t out = (d.value + m.strides[size_t(i)] - 1) / m.strides[size_t(i)];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * m.strides[size_t(i)] +
                                   m.dilations[size_t(i)] * (m.kernel[size_t(i)] - 1) + 1 - d.value);
      const int64_t small = total / 2, big = total - small;
      m.pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      m.pads[i + r] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    return false;
  }
  m.conv = n;
  m.out = n->outputs[0];
  return m.out != nullptr;
}

void absorb(const ir::Graph& g, Match& m, const std::vector<const ir::Node*>& taken) {
  ir::Node* c = sole_consumer(g, m.out);
  if (std::find(taken.begin(), taken.end(), c) != taken.end()) return;
  if (is_onnx_op(c, "Add") && c->inputs.size() == 2) {
    ir::Value* other = c->inputs[0] == m.out ? c->inputs[1] : c->inputs[0];
    if (other && other != m.out && is_f32(other) && same_shape(other->type, m.out->type) &&
        same_shape(c->outputs[0]->type, m.out->type)) {
      m.residual = other;
      m.absorbed.push_back(c);
      m.out = c->outputs[0];
      c = sole_consumer(g, m.out);
    }
  }
  if (auto act = match_activation(c, m.out)) {
    m.act = *act;
    m.absorbed.push_back(c);
    m.out = c->outputs[0];
  } else if (auto [sig, mul] = match_silu(g, m.out);
             mul && std::find(taken.begin(), taken.end(), mul) == taken.end()) {
    m.act = FusedActivation{"Silu"};
    m.absorbed.insert(m.absorbed.end(), {sig, mul});
    m.out = mul->outputs[0];
  }
}

void rewrite(ir::Graph& g, const Match& m) {
  ir::Value* x = m.conv->inputs[0];
  ir::Value* w = m.conv->inputs[1];
  ir::Value* b = m.conv->inputs.size() > 2 ? m.conv->inputs[2] : nullptr;
  const std::string name = m.conv->name;
  for (ir::Node* n : m.absorbed) g.remove_node(n);
  g.remove_node(m.conv);
  ir::Node* f = g.add_node("FusedConv", name);
  f->domain = "tessera";
  f->opset = 1;
  auto ints = [&](const char* k, const std::vector<int64_t>& v) {
    Attribute a;
    a.kind = Attribute::Kind::ints;
    a.ints = v;
    f->attrs[k] = a;
  };
  ints("kernel_shape", m.kernel);
  ints("strides", m.strides);
  ints("dilations", m.dilations);
  ints("pads", m.pads);
  Attribute gi;
  gi.kind = Attribute::Kind::i;
  gi.i = m.group;
  f->attrs["group"] = gi;
  if (m.act) set_activation_attrs(f, *m.act);
  g.connect_input(f, x);
  g.connect_input(f, w);
  g.connect_input(f, b);
  g.connect_input(f, m.residual);
  g.connect_output(f, m.out);
}

// Conv(X[N, C, L], W[OC, C/g, K]) -> Reshape(Conv(Reshape(X, [N, C, 1, L]), W[OC, C/g, 1, K]), [N, OC, OL]).
bool conv1d_as_2d(ir::Graph& g, ir::Node* n) {
  if (!is_onnx_op(n, "Conv") || n->inputs.size() < 2 || n->outputs.size() != 1 || !n->outputs[0] ||
      !is_f32(n->inputs[0]))
    return false;
  ir::Value* x = n->inputs[0];
  ir::Value* w = n->inputs[1];
  ir::Value* y = n->outputs[0];
  if (!is_constant(g, w) || w->initializer->dtype() != DType::f32 || w->initializer->rank() != 3)
    return false;
  if (!x->type.shape || x->type.shape->size() != 3 || !y->type.shape || y->type.shape->size() != 3)
    return false;
  const auto one = [](const ir::Node* m, const char* k, int64_t def) -> std::optional<std::vector<int64_t>> {
    const Attribute* a = m->attr(k);
    if (!a) return std::vector<int64_t>{def};
    if (a->kind != Attribute::Kind::ints) return std::nullopt;
    return a->ints;
  };
  const auto ks = one(n, "kernel_shape", w->initializer->dim(2)), st = one(n, "strides", 1),
             dl = one(n, "dilations", 1);
  const Attribute* pa = n->attr("pads");
  const std::vector<int64_t> pd =
      pa && pa->kind == Attribute::Kind::ints ? pa->ints : std::vector<int64_t>{0, 0};
  if (!ks || !st || !dl || ks->size() != 1 || st->size() != 1 || dl->size() != 1 || pd.size() != 2)
    return false;
  auto i64 = [&](const std::string& base, std::vector<int64_t> v) { return add_i64_const(g, base, v); };
  auto value = [&](const std::string& base, std::vector<ir::Dim> dims) {
    ir::Value* v = g.add_value(g.unique_name(base));
    v->type = ir::TypeInfo::tensor(DType::f32, std::move(dims));
    return v;
  };
  auto reshape = [&](ir::Value* in, ir::Value* shape, ir::Value* out, const std::string& name) {
    ir::Node* r = g.add_node("Reshape", g.unique_name(name));
    r->opset = 14;
    g.connect_input(r, in);
    g.connect_input(r, shape);
    g.connect_output(r, out);
  };
  const auto& xs = *x->type.shape;
  const auto& ys = *y->type.shape;
  Tensor w4 = w->initializer->contiguous().reshape(
      {w->initializer->dim(0), w->initializer->dim(1), 1, w->initializer->dim(2)});
  ir::Value* wv = g.add_value(g.unique_name(w->name + "_2d"));
  wv->type = ir::TypeInfo::tensor_of(w4);
  wv->initializer = std::move(w4);
  ir::Value* x4 = value(x->name + "_2d", {xs[0], xs[1], ir::Dim(1), xs[2]});
  ir::Value* y4 = value(y->name + "_2d", {ys[0], ys[1], ir::Dim(1), ys[2]});
  reshape(x, i64(n->name + "_to_2d", {0, 0, 1, -1}), x4, n->name + "_to_2d");
  ir::Node* c = g.add_node("Conv", n->name);
  c->opset = n->opset;
  c->attrs = n->attrs;
  set_attr_ints(c, "kernel_shape", {1, (*ks)[0]});
  set_attr_ints(c, "strides", {1, (*st)[0]});
  set_attr_ints(c, "dilations", {1, (*dl)[0]});
  set_attr_ints(c, "pads", {0, pd[0], 0, pd[1]});
  g.connect_input(c, x4);
  g.connect_input(c, wv);
  for (size_t i = 2; i < n->inputs.size(); ++i) g.connect_input(c, n->inputs[i]);
  g.remove_node(n);
  g.connect_output(c, y4);
  reshape(y4, i64(c->name + "_to_1d", {0, 0, -1}), y, c->name + "_to_1d");
  return true;
}

// Pad(X, zeros on the spatial dims) -> Conv: the padding becomes the conv's own (causal 1-D convs pad on the
// left by a Pad: WaveNet's 20 of them cost a copy of the map each, 40 us at 4000 x 64).
bool fold_pad(ir::Graph& g, ir::Node* conv) {
  if (!is_onnx_op(conv, "Conv") || conv->inputs.empty() || !conv->inputs[0]) return false;
  ir::Node* pad = conv->inputs[0]->producer;
  if (!is_onnx_op(pad, "Pad") || pad->opset < 11 || sole_consumer(g, conv->inputs[0]) != conv) return false;
  if (string_attr(pad, "mode", "constant") != "constant" ||
      string_attr(conv, "auto_pad", "NOTSET") != "NOTSET")
    return false;
  if (pad->inputs.size() < 2 || !is_constant(g, pad->inputs[1]) ||
      pad->inputs[1]->initializer->dtype() != DType::i64)
    return false;
  if (pad->inputs.size() > 3 && pad->inputs[3]) return false;  // axes
  if (pad->inputs.size() > 2 && pad->inputs[2]) {
    const std::optional<float> v = constant_scalar(pad->inputs[2]);
    if (!v || *v != 0.0f) return false;
  }
  const ir::Value* x = pad->inputs[0];
  if (!x->type.shape) return false;
  const int64_t rank = int64_t(x->type.shape->size()), r = rank - 2;
  const Tensor pt = pad->inputs[1]->initializer->contiguous();
  if (r < 1 || pt.numel() != 2 * rank) return false;
  const int64_t* q = pt.data<int64_t>();
  if (q[0] || q[1] || q[rank] || q[rank + 1]) return false;
  std::vector<int64_t> pads = ints_attr(conv, "pads", std::vector<int64_t>(size_t(2 * r), 0));
  if (int64_t(pads.size()) != 2 * r) return false;
  for (int64_t i = 0; i < r; ++i) {
    if (q[2 + i] < 0 || q[rank + 2 + i] < 0) return false;
    pads[size_t(i)] += q[2 + i];
    pads[size_t(r + i)] += q[rank + 2 + i];
  }
  set_attr_ints(conv, "pads", pads);
  g.set_input(conv, 0, pad->inputs[0]);
  g.remove_node(pad);
  return true;
}

}  // namespace

void fuse_conv(ir::Graph& g) {
  {
    std::vector<ir::Node*> convs;
    for (const auto& n : g.nodes()) convs.push_back(n.get());
    bool any = false;
    for (ir::Node* n : convs) any |= conv1d_as_2d(g, n);
    if (any) g.topological_sort();
  }
  {
    std::vector<ir::Node*> convs;
    for (const auto& n : g.nodes())
      if (is_onnx_op(n.get(), "Conv")) convs.push_back(n.get());
    for (ir::Node* n : convs) fold_pad(g, n);
  }
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::vector<Match> matches;
  std::vector<const ir::Node*> taken;
  for (ir::Node* n : nodes) {
    if (std::find(taken.begin(), taken.end(), n) != taken.end()) continue;
    Match m;
    if (!match_conv(g, n, m)) continue;
    absorb(g, m, taken);
    taken.insert(taken.end(), m.absorbed.begin(), m.absorbed.end());
    matches.push_back(std::move(m));
  }
  for (const Match& m : matches) rewrite(g, m);
}

}  // namespace tessera::passes
