// fuse_pw_dw: an NHWC pointwise tessera.FusedConv (1x1, stride 1, no padding,
// group 1, no residual) whose only reader is an NHWC depthwise FusedConv (no
// residual) becomes one tessera.FusedPwDwConv: the expanded intermediate then
// lives a band of rows at a time in cache instead of going to memory and back
// (kernels/x86/conv_nhwc.h, conv2d_pw_dw_nhwc_f32). This is the expansion and
// depthwise pair of every inverted-residual block (MobileNetV2/V3, EfficientNet,
// MnasNet). A pointwise FusedConv that is the pair's only reader (the block's
// projection, with or without the block's residual) joins it too: its input, the
// depthwise output, then stays in cache as well; so does one that is the only
// reader of a depthwise conv without an expansion (a block without one, every
// depthwise-separable conv of MobileNetV1 or Xception). So does a stem conv
// (an image model's first, reading the NCHW image: layout_nhwc's input_layout
// NCHW) whose only reader is a depthwise conv without an expansion: its output,
// the largest map of such a model (MobileNetV2: 112 x 112 x 32), is then made
// a band at a time as well. Runs after layout_nhwc, whose packed weights it reuses.
#include <unordered_set>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

// A direct NHWC FusedConv reading NHWC, without a residual unless `residual_ok`.
bool is_nhwc_conv(const ir::Node* n, bool residual_ok = false) {
  if (!n || n->domain != "tessera" || n->op_type != "FusedConv" || n->outputs.size() != 1) return false;
  return string_attr(n, "layout", "") == "NHWC" && string_attr(n, "input_layout", "NHWC") == "NHWC" &&
         int_attr(n, "winograd", 0) == 0 && n->inputs.size() >= 2 && n->inputs[0] && n->inputs[1] &&
         (residual_ok || n->inputs.size() < 4 || !n->inputs[3]);
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

// A stem FusedConv (layout NHWC over an NCHW input, group 1, no residual) whose only reader is dw.
bool stem_of(const ir::Graph& g, const ir::Node* s, const ir::Node* dw) {
  return s && s->domain == "tessera" && s->op_type == "FusedConv" && s->outputs.size() == 1 &&
         string_attr(s, "layout", "") == "NHWC" && string_attr(s, "input_layout", "NHWC") == "NCHW" &&
         int_attr(s, "group", 1) == 1 && int_attr(s, "winograd", 0) == 0 && s->inputs.size() >= 2 &&
         s->inputs[0] && s->inputs[1] && (s->inputs.size() < 4 || !s->inputs[3]) &&
         sole_consumer(g, s->outputs[0]) == dw && !is_graph_output(g, s->outputs[0]);
}

// The input at i, or nullptr.
ir::Value* input_at(const ir::Node* n, size_t i) {
  return i < n->inputs.size() ? n->inputs[i] : nullptr;
}

// The projection of depthwise conv dw over e channels: its output's only reader, a pointwise conv (so the
// projection's residual cannot depend on that output) — unless that conv is itself the expansion of a next
// pair (no residual, read only by a depthwise conv): the pair keeps it, whose intermediate is the wider one.
ir::Node* projection_of(const ir::Graph& g, const ir::Node* dw, int64_t e) {
  ir::Node* pj = sole_consumer(g, dw->outputs[0]);
  if (!is_nhwc_conv(pj, /*residual_ok=*/true) || pj->inputs[0] != dw->outputs[0] || !pointwise(pj))
    return nullptr;
  const auto ws = ints_attr(pj, "weight_shape", {});
  if (ws.size() != 4 || ws[1] != e) return nullptr;
  if (is_nhwc_conv(pj)) {
    const ir::Node* next = sole_consumer(g, pj->outputs[0]);
    if (is_nhwc_conv(next) && next->inputs[0] == pj->outputs[0] && depthwise_of(next, ws[0])) return nullptr;
  }
  return pj;
}

// Replaces [pw ->] dw [-> pj] (pw or pj may be null, not both) by one FusedPwDwConv over e channels.
void fuse(ir::Graph& g, ir::Node* pw, ir::Node* dw, ir::Node* pj, int64_t e) {
  ir::Node* f = g.add_node("FusedPwDwConv", dw->name);
  f->domain = "tessera";
  f->opset = 1;
  set_attr_int(f, "channels", e);
  for (const char* k : {"kernel_shape", "strides", "dilations", "pads", "activation", "clip_min", "clip_max"})
    if (const Attribute* a = dw->attr(k)) f->attrs[k] = *a;
  ir::Value *w1 = nullptr, *b1 = nullptr, *w3 = nullptr, *b3 = nullptr, *r3 = nullptr;
  ir::Value* x = pw ? pw->inputs[0] : dw->inputs[0];
  if (pw) {
    set_activation_attrs(f, fused_activation_of(pw), "pw_");
    w1 = pw->inputs[1], b1 = input_at(pw, 2);
    if (string_attr(pw, "input_layout", "NHWC") == "NCHW") {  // a stem producer: its geometry too
      Attribute lay;
      lay.kind = Attribute::Kind::s;
      lay.s = "NCHW";
      f->attrs["pw_input_layout"] = lay;
      for (const char* k : {"kernel_shape", "strides", "dilations", "pads"})
        if (const Attribute* a = pw->attr(k)) f->attrs[std::string("pw_") + k] = *a;
    }
  }
  ir::Value* w2 = dw->inputs[1];
  ir::Value* b2 = input_at(dw, 2);
  ir::Value* y = dw->outputs[0];
  if (pj) {
    set_attr_int(f, "proj_channels", ints_attr(pj, "weight_shape", {})[0]);
    set_activation_attrs(f, fused_activation_of(pj), "proj_");
    w3 = pj->inputs[1], b3 = input_at(pj, 2), r3 = input_at(pj, 3);
    y = pj->outputs[0];
  }
  for (ir::Node* n : {pj, dw, pw})
    if (n) g.remove_node(n);
  for (ir::Value* v : {x, w1, b1, w2, b2}) g.connect_input(f, v);
  if (w3)
    for (ir::Value* v : {w3, b3, r3}) g.connect_input(f, v);
  g.connect_output(f, y);
}

// Fuses n, a pointwise conv, with its depthwise reader (and that one's projection); or n, a depthwise conv
// that no pointwise conv expands into, with its projection. Returns the nodes removed from the graph (only
// their addresses: the nodes are gone), or nothing.
std::vector<const ir::Node*> try_fuse(ir::Graph& g, ir::Node* n) {
  if (!is_nhwc_conv(n)) return {};
  const auto ws = ints_attr(n, "weight_shape", {});
  if (ws.size() != 4) return {};
  if (pointwise(n)) {
    const int64_t e = ws[0];
    ir::Node* dw = sole_consumer(g, n->outputs[0]);
    if (!is_nhwc_conv(dw) || dw->inputs[0] != n->outputs[0] || !depthwise_of(dw, e)) return {};
    ir::Node* pj = projection_of(g, dw, e);
    fuse(g, n, dw, pj, e);
    if (pj) return {n, dw, pj};
    return {n, dw};
  }
  // A depthwise conv whose input comes from a pointwise conv that would pair with it was taken by that conv,
  // which comes first in the graph's order.
  if (!depthwise_of(n, ws[0])) return {};
  ir::Node* pj = projection_of(g, n, ws[0]);
  ir::Node* stem = n->inputs[0]->producer;
  const std::vector<int64_t> sws = stem ? ints_attr(stem, "weight_shape", {}) : std::vector<int64_t>{};
  if (stem_of(g, stem, n) && sws.size() == 4 && sws[0] == ws[0]) {
    fuse(g, stem, n, pj, ws[0]);
    if (pj) return {stem, n, pj};
    return {stem, n};
  }
  if (!pj) return {};
  fuse(g, nullptr, n, pj, ws[0]);
  return {n, pj};
}

}  // namespace

void fuse_pw_dw(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::unordered_set<const ir::Node*> removed;  // fused away: not to be looked at again
  for (ir::Node* n : nodes) {
    if (removed.count(n)) continue;
    const std::vector<const ir::Node*> gone = try_fuse(g, n);
    removed.insert(gone.begin(), gone.end());
  }
  if (!removed.empty()) {
    g.topological_sort();
    g.remove_unused_values();
  }
}

}  // namespace tessera::passes
