// lift_1d: the regions of 1-D convolutions ([N, C, L] values: audio front ends, WaveNet-style dilated stacks,
// PointNet's shared MLPs) rewritten as 2-D ones of height 1 ([N, C, 1, L]), so that the 2-D passes and
// kernels take them whole: fuse_conv folds the residual Add and the activation after each conv, layout_nhwc
// runs the region in NHWC, and values move between the ops without Reshapes. (fuse_conv alone lifted each
// conv between two Reshapes, which stopped both: every conv paid two Transposes and an unfused Add / Relu —
// WaveNet's 124 Transposes took 11% of its time.)
//
// The region grows from each 1-D Conv with a constant weight through the ops whose meaning survives the
// unit axis: elementwise ops (onnx_pointwise; constants of rank 2-3 reshaped to broadcast the same way), Pad,
// Split / Concat / Softmax along a mapped axis, BatchNormalization, the Reduce ops (keepdims = 0 also reduces
// the unit axis, so their result is unchanged) and the global pools. A value read outside the region, or a
// graph output, gets a Reshape back to 3-D; a 3-D value from outside, one to 4-D (Reshapes are views at run
// time).
#include <set>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

bool rank3_f32(const ir::Value* v) {
  return v && is_f32(v) && v->type.shape && v->type.shape->size() == 3;
}

bool is_reduce(const ir::Node* n) {
  static const std::set<std::string, std::less<>> ops = {"ReduceMax", "ReduceMin",       "ReduceMean",
                                                         "ReduceSum", "ReduceProd",      "ReduceL1",
                                                         "ReduceL2",  "ReduceSumSquare", "ReduceLogSumExp"};
  return n->domain.empty() && ops.count(n->op_type) > 0;
}

// 3-D axis -> 4-D axis (the unit axis is inserted at 2).
int64_t lift_axis(int64_t a) {
  return a < 2 ? a : 3;
}

// An axis attribute of a 3-D op, normalized, or nullopt.
std::optional<int64_t> axis_of(const ir::Node* n, int64_t def) {
  int64_t a = int_attr(n, "axis", def);
  if (a < -3 || a > 2) return std::nullopt;
  return a < 0 ? a + 3 : a;
}

// Whether node n can run on the lifted values: its tensor inputs are region candidates (3-D f32) or
// constants it can reshape (elementwise operands of any rank up to 3, its own parameter inputs), and its
// outputs are 3-D f32 (a Reduce's with keepdims = 0 may be lower: it reduces the unit axis too).
bool liftable(const ir::Graph& g, const ir::Node* n) {
  if (!n->domain.empty() || n->outputs.empty() || !n->subgraphs().empty()) return false;
  auto out3 = [&] {
    for (const ir::Value* o : n->outputs)
      if (o && !rank3_f32(o)) return false;
    return true;
  };
  const std::string& op = n->op_type;
  auto data3 = [&](const ir::Value* v) { return rank3_f32(v) && !is_constant(g, v); };
  if (op == "Conv") {
    for (const char* key : {"kernel_shape", "strides", "dilations"})
      if (n->attr(key) && ints_attr(n, key, {}).size() != 1) return false;
    if (n->attr("pads") && ints_attr(n, "pads", {}).size() != 2) return false;
    return n->inputs.size() >= 2 && data3(n->inputs[0]) && is_constant(g, n->inputs[1]) &&
           n->inputs[1]->initializer->rank() == 3 &&
           (n->inputs.size() < 3 || !n->inputs[2] || is_constant(g, n->inputs[2])) && out3();
  }
  if (onnx_pointwise(n) || op == "Identity") {
    // operands: lifted maps, constants (reshaped below to broadcast as before), or runtime values of rank
    // 0-1 (a runtime operand of rank 2+ would broadcast against the unit axis)
    bool any3 = false;
    for (const ir::Value* v : n->inputs) {
      if (!v) return false;
      if (data3(v))
        any3 = true;
      else if (!(v->type.shape &&
                 (v->type.shape->size() <= 1 || (is_constant(g, v) && v->type.shape->size() <= 3))))
        return false;
    }
    return any3 && out3();
  }
  if (op == "BatchNormalization") {
    for (size_t i = 1; i < n->inputs.size(); ++i)
      if (!n->inputs[i] || !is_constant(g, n->inputs[i])) return false;
    return data3(n->inputs[0]) && n->outputs.size() == 1 && out3();
  }
  if (op == "Softmax" || op == "LogSoftmax")
    return n->opset >= 13 && data3(n->inputs[0]) && axis_of(n, -1) && out3();
  if (op == "Split") {
    if (!data3(n->inputs[0]) || !axis_of(n, 0) || !out3()) return false;
    return n->inputs.size() < 2 || !n->inputs[1] || is_constant(g, n->inputs[1]);
  }
  if (op == "Concat") {
    for (const ir::Value* v : n->inputs)
      if (!data3(v)) return false;
    return axis_of(n, 0).has_value() && out3();
  }
  if (op == "Pad") {
    if (!data3(n->inputs[0]) || !out3() || n->opset < 11) return false;
    if (n->inputs.size() < 2 || !is_constant(g, n->inputs[1]) ||
        n->inputs[1]->initializer->dtype() != DType::i64 || n->inputs[1]->initializer->numel() != 6)
      return false;
    if (n->inputs.size() > 2 && n->inputs[2] && !is_constant(g, n->inputs[2])) return false;
    return n->inputs.size() < 4 || !n->inputs[3];  // no axes input
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return data3(n->inputs[0]) && out3();
  if (is_reduce(n)) {
    if (!data3(n->inputs[0]) || n->outputs.size() != 1 || !n->outputs[0] || !is_f32(n->outputs[0]))
      return false;
    const auto axes = reduce_axes(g, n, 3);
    if (!axes || axes->empty()) return false;
    for (int64_t a : *axes)
      if (a < 0 || a > 2) return false;
    return int_attr(n, "keepdims", 1) == 0 || rank3_f32(n->outputs[0]);
  }
  return false;
}

// A constant operand of an elementwise op, reshaped so that it broadcasts against [N, C, 1, L] as it did
// against [N, C, L] (rank 0-1 already does).
ir::Value* lift_operand(ir::Graph& g, ir::Value* v) {
  const Tensor& t = *v->initializer;
  if (t.rank() <= 1) return v;
  Shape s = t.shape();
  while (s.size() < 3) s.insert(s.begin(), 1);
  s.insert(s.begin() + 2, 1);
  return add_constant(g, v->name + "_4d", t.contiguous().reshape(s));
}

void rewrite_node(ir::Graph& g, ir::Node* n) {
  const std::string& op = n->op_type;
  if (op == "Conv") {
    const Tensor& w = *n->inputs[1]->initializer;
    g.set_input(n, 1,
                add_constant(g, n->inputs[1]->name + "_4d",
                             w.contiguous().reshape({w.dim(0), w.dim(1), 1, w.dim(2)})));
    const std::vector<int64_t> ks = ints_attr(n, "kernel_shape", std::vector<int64_t>{w.dim(2)});
    const std::vector<int64_t> st = ints_attr(n, "strides", std::vector<int64_t>{1});
    const std::vector<int64_t> dl = ints_attr(n, "dilations", std::vector<int64_t>{1});
    const std::vector<int64_t> pd = ints_attr(n, "pads", std::vector<int64_t>{0, 0});
    set_attr_ints(n, "kernel_shape", std::vector<int64_t>{1, ks[0]});
    set_attr_ints(n, "strides", std::vector<int64_t>{1, st[0]});
    set_attr_ints(n, "dilations", std::vector<int64_t>{1, dl[0]});
    set_attr_ints(n, "pads", std::vector<int64_t>{0, pd[0], 0, pd[1]});
  } else if (onnx_pointwise(n)) {
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (is_constant(g, n->inputs[i])) g.set_input(n, i, lift_operand(g, n->inputs[i]));
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "Split" || op == "Concat") {
    set_attr_int(n, "axis", lift_axis(*axis_of(n, op == "Split" || op == "Concat" ? 0 : -1)));
  } else if (op == "Pad") {
    const Tensor p = n->inputs[1]->initializer->contiguous();
    const int64_t* q = p.data<int64_t>();
    const std::vector<int64_t> p4{q[0], q[1], 0, q[2], q[3], q[4], 0, q[5]};
    g.set_input(n, 1, add_i64_const(g, n->inputs[1]->name + "_4d", p4));
  } else if (is_reduce(n)) {
    const std::vector<int64_t> axes3 = *reduce_axes(g, n, 3);
    std::vector<int64_t> axes;
    for (int64_t a : axes3) axes.push_back(lift_axis(a));
    // with the length reduced, the unit axis too: kept, it changes nothing; dropped, the result keeps its
    // rank (and the spatial pair is what layout_nhwc reduces on the NHWC twin)
    if (std::find(axes.begin(), axes.end(), 3) != axes.end() || int_attr(n, "keepdims", 1) == 0)
      axes.push_back(2);
    std::sort(axes.begin(), axes.end());
    if (n->inputs.size() > 1 && n->inputs[1])
      g.set_input(n, 1, add_i64_const(g, n->name + "_axes_4d", axes));
    else
      set_attr_ints(n, "axes", axes);
  }
}

}  // namespace

void lift_1d(ir::Graph& g) {
  // the region: grown from the 1-D convs through liftable neighbours
  // (sets for membership, vectors for a deterministic order of the new names)
  std::set<ir::Node*> nodes;
  std::vector<ir::Node*> node_order, work;
  auto add_node = [&](ir::Node* m) {
    if (nodes.insert(m).second) node_order.push_back(m), work.push_back(m);
  };
  for (const auto& n : g.nodes())
    if (is_onnx_op(n.get(), "Conv") && liftable(g, n.get())) add_node(n.get());
  if (nodes.empty()) return;
  std::set<ir::Value*> values;
  std::vector<ir::Value*> value_order;
  auto visit = [&](ir::Value* v) {
    if (!rank3_f32(v) || is_constant(g, v) || !values.insert(v).second) return;
    value_order.push_back(v);
    std::vector<ir::Node*> near;
    if (v->producer && v->producer->owner == &g) near.push_back(v->producer);
    for (const auto& [u, idx] : v->uses)
      if (u->owner == &g) near.push_back(u);
    for (ir::Node* m : near)
      if (!nodes.count(m) && liftable(g, m)) add_node(m);
  };
  while (!work.empty()) {
    ir::Node* n = work.back();
    work.pop_back();
    for (ir::Value* v : n->inputs) visit(v);
    for (ir::Value* v : n->outputs) visit(v);
  }
  // Transposes between [N, C, L] and [N, L, C] at the region's edge (PointNet's points through its transform
  // matrices, a Conformer's conv module, Whisper's frames into the transformer): through the 4-D twin, as
  // Transposes to and from channels-last that layout_nhwc turns into its NHWC twin (no copy).
  auto swap_last = [&](const ir::Node* t) {
    return is_onnx_op(t, "Transpose") && t->inputs.size() == 1 && t->outputs.size() == 1 &&
           rank3_f32(t->inputs[0]) && rank3_f32(t->outputs[0]) &&
           ints_attr(t, "perm", {}) == std::vector<int64_t>{0, 2, 1} &&
           (*t->inputs[0]->type.shape)[2].known();
  };
  std::vector<ir::Node*> exits;
  std::set<ir::Node*> entries, exit_set;
  for (const auto& n : g.nodes()) {
    if (!swap_last(n.get())) continue;
    const bool in = values.count(n->inputs[0]) > 0, out = values.count(n->outputs[0]) > 0;
    if (in && !out) exits.push_back(n.get()), exit_set.insert(n.get());
    if (out && !in) entries.insert(n.get());
  }
  // each region value's 4-D twin: made by its (lifted) producer or by a Reshape from outside; read back as
  // 3-D by a Reshape where the region is left
  for (ir::Value* v : value_order) {
    const auto& s = *v->type.shape;
    ir::Value* v4 = g.add_value(g.unique_name(v->name + "_4d"));
    v4->type = ir::TypeInfo::tensor(DType::f32, std::vector<ir::Dim>{s[0], s[1], ir::Dim(1), s[2]});
    const bool inside = v->producer && nodes.count(v->producer);
    std::vector<std::pair<ir::Node*, int>> region_uses, other_uses;
    for (const auto& u : v->uses)
      (nodes.count(u.first) || exit_set.count(u.first) ? region_uses : other_uses).push_back(u);
    const bool entry = v->producer && entries.count(v->producer);
    if (entry) {
      // v = Transpose(m [N, L, C]): m viewed as [N, 1, L, C], then transposed to channels-first
      ir::Node* t = v->producer;
      ir::Value* m = t->inputs[0];
      const auto& ms = *m->type.shape;
      ir::Value* m4 = g.add_value(g.unique_name(m->name + "_nhwc"));
      m4->type = ir::TypeInfo::tensor(DType::f32, std::vector<ir::Dim>{ms[0], ir::Dim(1), ms[1], ms[2]});
      add_reshape(g, m->name + "_to_2d", m, std::vector<int64_t>{0, 1, -1, ms[2].value}, m4);
      g.set_input(t, 0, m4);
      set_attr_ints(t, "perm", std::vector<int64_t>{0, 3, 1, 2});
    }
    if (inside || entry) {
      move_output(v->producer, v->producer_output, v4);
      if (!other_uses.empty() || is_graph_output(g, v))
        add_reshape(g, v->name + "_to_1d", v4, std::vector<int64_t>{0, 0, -1}, v);
    } else {
      add_reshape(g, v->name + "_to_2d", v, std::vector<int64_t>{0, 0, 1, -1}, v4);
    }
    for (const auto& [u, idx] : region_uses) g.set_input(u, size_t(idx), v4);
  }
  for (ir::Node* n : node_order) rewrite_node(g, n);
  // y = Transpose(x [N, C, L]) out of the region: x's twin to [N, 1, L, C], viewed as [N, L, C]
  for (ir::Node* t : exits) {
    ir::Value* x4 = t->inputs[0];  // rewired to the twin above
    ir::Value* y = t->outputs[0];
    const auto& xs = *x4->type.shape;
    ir::Value* t4 = g.add_value(g.unique_name(y->name + "_nhwc"));
    t4->type = ir::TypeInfo::tensor(DType::f32, std::vector<ir::Dim>{xs[0], ir::Dim(1), xs[3], xs[1]});
    set_attr_ints(t, "perm", std::vector<int64_t>{0, 2, 3, 1});
    move_output(t, 0, t4);
    add_reshape(g, y->name + "_to_1d", t4, std::vector<int64_t>{0, -1, xs[1].value}, y);
  }
  g.topological_sort();
  g.remove_unused_values();
}

}  // namespace tessera::passes
