// fuse_pw_dw: an NHWC pointwise tessera.FusedConv (1x1, stride 1, no padding,
// group 1, no residual) whose only reader is an NHWC depthwise FusedConv (no
// residual) becomes one tessera.FusedPwDwConv: the expanded intermediate then
// lives a band of rows at a time in cache instead of going to memory and back
// (kernels/x86/conv_nhwc.h, conv2d_pw_dw_nhwc_f32). This is the expansion and
// depthwise pair of every inverted-residual block (MobileNetV2/V3, EfficientNet,
// MnasNet); the projection conv after it stays a FusedConv (it may carry the
// block's residual). Runs after layout_nhwc, whose packed weights it reuses.
#include <unordered_set>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

bool is_nhwc_conv(const ir::Node* n) {
  if (!n || n->domain != "tessera" || n->op_type != "FusedConv" || n->outputs.size() != 1) return false;
  return string_attr(n, "layout", "") == "NHWC" && int_attr(n, "winograd", 0) == 0 && n->inputs.size() >= 2 &&
         n->inputs[0] && n->inputs[1] && (n->inputs.size() < 4 || !n->inputs[3]);  // no residual
}

bool pointwise(const ir::Node* n) {
  return ints_attr(n, "kernel_shape", {}) == std::vector<int64_t>{1, 1} &&
         ints_attr(n, "strides", {1, 1}) == std::vector<int64_t>{1, 1} &&
         ints_attr(n, "pads", {0, 0, 0, 0}) == std::vector<int64_t>{0, 0, 0, 0} &&
         int_attr(n, "group", 1) == 1;
}

bool depthwise_of(const ir::Node* n, int64_t channels) {
  const auto ws = ints_attr(n, "weight_shape", {});
  return channels > 1 && int_attr(n, "group", 1) == channels && ws.size() == 4 && ws[0] == channels &&
         ws[1] == 1 && ints_attr(n, "kernel_shape", {}).size() == 2;
}

// Fuses pw with its depthwise reader; returns that reader (removed from the graph with pw), or nullptr.
const ir::Node* try_fuse(ir::Graph& g, ir::Node* pw) {
  if (!is_nhwc_conv(pw) || !pointwise(pw)) return nullptr;
  const auto ws = ints_attr(pw, "weight_shape", {});
  if (ws.size() != 4) return nullptr;
  const int64_t e = ws[0];
  ir::Node* dw = sole_consumer(g, pw->outputs[0]);
  if (!is_nhwc_conv(dw) || dw->inputs[0] != pw->outputs[0] || !depthwise_of(dw, e)) return nullptr;
  ir::Node* f = g.add_node("FusedPwDwConv", dw->name);
  f->domain = "tessera";
  f->opset = 1;
  set_attr_int(f, "channels", e);
  for (const char* k : {"kernel_shape", "strides", "dilations", "pads", "activation", "clip_min", "clip_max"})
    if (const Attribute* a = dw->attr(k)) f->attrs[k] = *a;
  set_activation_attrs(
      f, {string_attr(pw, "activation", ""), float_attr(pw, "clip_min", 0), float_attr(pw, "clip_max", 0)},
      "pw_");
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
  return dw;  // (only its address: the node is gone)
}

}  // namespace

void fuse_pw_dw(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::unordered_set<const ir::Node*> removed;  // fused away: not to be looked at again
  for (ir::Node* n : nodes) {
    if (removed.count(n)) continue;
    if (const ir::Node* dw = try_fuse(g, n)) {
      removed.insert(n);
      removed.insert(dw);
    }
  }
  if (!removed.empty()) {
    g.topological_sort();
    g.remove_unused_values();
  }
}

}  // namespace tessera::passes
