// fuse_channel_shuffle: ShuffleNet's channel shuffle, as the exporters write it,
//   Z = Concat(X0, X1, ..., axis a)                 (optional)
//   Reshape(Z) -> [..., G, C / G, ...]               (axis a split into groups)
//   Transpose(perm swapping a and a + 1)
//   Reshape -> [..., C, ...]                         (Z's shape again)
//   Split(axis a) -> Y0, Y1, ...                     (optional)
// becomes one tessera.ChannelShuffle(X0, X1, ...) -> Y0, Y1, ... (ir/ops/fused.cpp): one pass over the
// data instead of three copies and the two Reshapes' nodes (layout_nhwc runs first, so in an NHWC region
// the axis is the last and the shuffle an interleave within each pixel). Every intermediate must be read
// only by the next node of the chain and the shapes static.
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

struct Match {
  std::vector<ir::Value*> inputs, outputs;
  std::vector<int64_t> splits;
  int64_t axis = 0, groups = 0;
  std::vector<ir::Node*> nodes;  // everything the ChannelShuffle replaces
  std::string name;
};

int64_t normalized_axis(const ir::Node* n, int64_t rank, int64_t def) {
  const int64_t a = int_attr(n, "axis", def);
  return a < 0 ? a + rank : a;
}

bool match(const ir::Graph& g, ir::Node* t, Match& m) {
  if (!is_onnx_op(t, "Transpose") || t->inputs.size() != 1 || t->outputs.size() != 1) return false;
  ir::Value* x1 = t->inputs[0];
  ir::Node* r1 = x1 ? x1->producer : nullptr;
  if (!is_onnx_op(r1, "Reshape") || r1->owner != &g || sole_consumer(g, x1) != t || r1->inputs.empty())
    return false;
  ir::Value* x0 = r1->inputs[0];
  const auto s0 = x0 ? x0->type.static_shape() : std::nullopt;
  const auto s1 = x1->type.static_shape();
  if (!s0 || !s1 || s1->size() != s0->size() + 1 || x0->type.elem == DType::string ||
      x0->type.elem == DType::undefined)
    return false;
  const int64_t rank = int64_t(s1->size());
  // the perm swaps axes a and a + 1 and keeps the others
  const std::vector<int64_t> perm = ints_attr(t, "perm", {});
  if (int64_t(perm.size()) != rank) return false;
  int64_t a = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (perm[size_t(d)] != d) {
      if (a < 0 && d + 1 < rank && perm[size_t(d)] == d + 1 && perm[size_t(d + 1)] == d) a = d;
      if (d != a && d != a + 1) return false;
    }
  if (a < 0) return false;
  // x1 is x0 with axis a split into [G, C / G]
  for (int64_t d = 0; d < rank - 1; ++d) {
    const int64_t want = d < a   ? (*s1)[size_t(d)]
                         : d > a ? (*s1)[size_t(d + 1)]
                                 : (*s1)[size_t(a)] * (*s1)[size_t(a + 1)];
    if ((*s0)[size_t(d)] != want) return false;
  }
  ir::Node* r2 = sole_consumer(g, t->outputs[0]);
  if (!is_onnx_op(r2, "Reshape") || r2->outputs.size() != 1 || !r2->outputs[0] ||
      r2->outputs[0]->type.static_shape() != s0)
    return false;
  m = Match{};
  m.axis = a, m.groups = (*s1)[size_t(a)];
  m.nodes = {r1, t, r2};
  m.name = t->name;
  const int64_t c = (*s0)[size_t(a)];
  ir::Node* cat = x0->producer;
  bool whole_inputs = is_onnx_op(cat, "Concat") && cat->owner == &g && sole_consumer(g, x0) == r1 &&
                      normalized_axis(cat, rank - 1, 0) == a && !cat->inputs.empty();
  if (whole_inputs)
    for (const ir::Value* v : cat->inputs) whole_inputs = whole_inputs && v && v->type.elem == x0->type.elem;
  if (whole_inputs) {
    m.inputs = cat->inputs;
    m.nodes.push_back(cat);
  } else {
    m.inputs = {x0};
  }
  ir::Value* x2 = r2->outputs[0];
  ir::Node* split = sole_consumer(g, x2);
  bool split_outputs = is_onnx_op(split, "Split") && normalized_axis(split, rank - 1, 0) == a &&
                       split->inputs[0] == x2 && !split->outputs.empty();
  std::vector<int64_t> sizes;
  if (split_outputs)
    for (const ir::Value* v : split->outputs) {
      const auto s = v ? v->type.static_shape() : std::nullopt;
      split_outputs = split_outputs && s && s->size() == s0->size();
      if (split_outputs) sizes.push_back((*s)[size_t(a)]);
    }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (split_outputs && total == c) {
    m.outputs = split->outputs;
    m.splits = sizes;
    m.nodes.push_back(split);
  } else {
    m.outputs = {x2};
    m.splits = {c};
  }
  return m.groups > 0 && c % m.groups == 0;
}

}  // namespace

void fuse_channel_shuffle(ir::Graph& g) {
  std::vector<Match> found;
  for (const auto& n : g.nodes()) {
    Match m;
    if (match(g, n.get(), m)) found.push_back(std::move(m));
  }
  for (Match& m : found) {
    for (ir::Node* n : m.nodes) g.remove_node(n);
    ir::Node* f = g.add_node("ChannelShuffle", m.name);
    f->domain = "tessera";
    f->opset = 1;
    f->attrs["axis"] = Attribute::of_int(m.axis);
    f->attrs["groups"] = Attribute::of_int(m.groups);
    f->attrs["splits"] = Attribute::of_ints(m.splits);
    for (ir::Value* v : m.inputs) g.connect_input(f, v);
    for (ir::Value* v : m.outputs) g.connect_output(f, v);
  }
  g.remove_unused_values();
}

}  // namespace tessera::passes
