// fuse_pw_dw: an NHWC pointwise tessera.FusedConv (1x1, stride 1, no padding,
// group 1, no residual) whose only reader is an NHWC depthwise FusedConv (no
// residual) becomes one tessera.FusedPwDwConv: the expanded intermediate then
// lives a band of rows at a time in cache instead of going to memory and back
// (kernels/x86/conv_nhwc.h, conv2d_pw_dw_nhwc_f32). This is the expansion and
// depthwise pair of every inverted-residual block (MobileNetV2/V3, EfficientNet,
// MnasNet); the projection conv after it stays a FusedConv (it may carry the
// block's residual). Runs after layout_nhwc, whose packed weights it reuses.
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

bool is_nhwc_conv(const ir::Node* n) {
  if (!n || n->domain != "tessera" || n->op_type != "FusedConv" || n->outputs.size() != 1) return false;
  const Attribute* lay = n->attr("layout");
  const Attribute* wino = n->attr("winograd");
  return lay && lay->s == "NHWC" && (!wino || wino->i == 0) && n->inputs.size() >= 2 && n->inputs[0] &&
         n->inputs[1] && (n->inputs.size() < 4 || !n->inputs[3]);  // no residual
}

std::vector<int64_t> ints_or(const ir::Node* n, const char* key, std::vector<int64_t> dflt) {
  const Attribute* a = n->attr(key);
  return a ? a->ints : dflt;
}

bool pointwise(const ir::Node* n) {
  const auto ks = ints_or(n, "kernel_shape", {}), st = ints_or(n, "strides", {1, 1}),
             pd = ints_or(n, "pads", {0, 0, 0, 0});
  const Attribute* grp = n->attr("group");
  return ks == std::vector<int64_t>{1, 1} && st == std::vector<int64_t>{1, 1} &&
         pd == std::vector<int64_t>{0, 0, 0, 0} && (!grp || grp->i == 1);
}

bool depthwise_of(const ir::Node* n, int64_t channels) {
  const Attribute* grp = n->attr("group");
  const auto ws = ints_or(n, "weight_shape", {});
  return grp && grp->i == channels && channels > 1 && ws.size() == 4 && ws[0] == channels && ws[1] == 1 &&
         ints_or(n, "kernel_shape", {}).size() == 2;
}

std::string string_attr(const ir::Node* n, const char* key) {
  const Attribute* a = n->attr(key);
  return a ? a->s : std::string();
}

float float_attr(const ir::Node* n, const char* key) {
  const Attribute* a = n->attr(key);
  return a ? a->f : 0.0f;
}

bool try_fuse(ir::Graph& g, ir::Node* pw) {
  if (!is_nhwc_conv(pw) || !pointwise(pw)) return false;
  const auto ws = ints_or(pw, "weight_shape", {});
  if (ws.size() != 4) return false;
  const int64_t e = ws[0];
  ir::Node* dw = sole_consumer(g, pw->outputs[0]);
  if (!is_nhwc_conv(dw) || dw->inputs[0] != pw->outputs[0] || !depthwise_of(dw, e)) return false;
  ir::Node* f = g.add_node("FusedPwDwConv", dw->name);
  f->domain = "tessera";
  f->opset = 1;
  set_attr_int(f, "channels", e);
  for (const char* k : {"kernel_shape", "strides", "dilations", "pads", "activation", "clip_min", "clip_max"})
    if (const Attribute* a = dw->attr(k)) f->attrs[k] = *a;
  FusedActivation pa{string_attr(pw, "activation"), float_attr(pw, "clip_min"), float_attr(pw, "clip_max")};
  Attribute s;
  s.kind = Attribute::Kind::s;
  s.s = pa.op;
  f->attrs["pw_activation"] = s;
  set_attr_float(f, "pw_clip_min", pa.lo);
  set_attr_float(f, "pw_clip_max", pa.hi);
  ir::Value* x = pw->inputs[0];
  ir::Value* w1 = pw->inputs[1];
  ir::Value* b1 = pw->inputs.size() > 2 ? pw->inputs[2] : nullptr;
  ir::Value* w2 = dw->inputs[1];
  ir::Value* b2 = dw->inputs.size() > 2 ? dw->inputs[2] : nullptr;
  ir::Value* y = dw->outputs[0];
  g.remove_node(dw);
  g.remove_node(pw);
  for (ir::Value* v : {x, w1, b1, w2, b2}) g.connect_input(f, v);
  g.connect_output(f, y);
  return true;
}

}  // namespace

void fuse_pw_dw(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::vector<ir::Node*> removed;
  bool any = false;
  for (ir::Node* n : nodes) {
    if (std::find(removed.begin(), removed.end(), n) != removed.end()) continue;
    ir::Node* dw = is_nhwc_conv(n) ? sole_consumer(g, n->outputs[0]) : nullptr;
    if (try_fuse(g, n)) {
      removed.push_back(n);
      removed.push_back(dw);
      any = true;
    }
  }
  if (any) {
    g.topological_sort();
    g.remove_unused_values();
  }
}

}  // namespace tessera::passes
