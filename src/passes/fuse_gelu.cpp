// fuse_gelu: the GELU subgraphs the exporters write become one ONNX Gelu node
// (opset 20 semantics). fuse_gemm then folds a Gelu that follows a GEMM into
// its epilogue, and a Gelu elsewhere runs as one vector pass.
//   erf:  x * 0.5 * (1 + erf(x / sqrt 2))                          -> Gelu(x)
//   tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  -> Gelu(x, approximate = "tanh")
// Matched by structure, not by one node order: a tree of Muls is flattened into
// its factors (any association and operand order; x / c counts as the factor
// x and 1/c), x^3 may be Pow(x, 3) or a product of three x, and the constants
// of each product multiply out to the formula's. Every intermediate must be
// used only inside the subgraph; x itself may be used anywhere.
#include <cmath>
#include <set>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

struct Factors {
  std::vector<ir::Value*> values;  // non-constant factors
  double constant = 1.0;           // product of the constant factors
  std::vector<ir::Node*> nodes;    // the Mul / Div / Pow nodes flattened
};

bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::fabs(b);
}

std::optional<double> scalar(const ir::Graph& g, const ir::Value* v) {
  if (!is_constant(g, v)) return std::nullopt;
  const auto s = constant_scalar(v);
  return s ? std::optional<double>(*s) : std::nullopt;
}

// Flattens the product that v is. A node is entered only when v is its sole
// output and v is read once (by the product being built) — or v is the root.
void flatten(const ir::Graph& g, ir::Value* v, bool root, Factors& f) {
  if (auto c = scalar(g, v)) {
    f.constant *= *c;
    return;
  }
  ir::Node* p = v->producer;
  const bool enter = p && p->owner == &g && p->outputs.size() == 1 && is_f32(v) &&
                     (root || (v->uses.size() == 1 && !is_graph_output(g, v))) && p->inputs.size() == 2 &&
                     p->inputs[0] && p->inputs[1];
  if (enter && is_onnx_op(p, "Mul")) {
    f.nodes.push_back(p);
    flatten(g, p->inputs[0], false, f);
    flatten(g, p->inputs[1], false, f);
    return;
  }
  if (enter && is_onnx_op(p, "Div")) {
    if (auto c = scalar(g, p->inputs[1]); c && *c != 0.0) {
      f.nodes.push_back(p);
      flatten(g, p->inputs[0], false, f);
      f.constant /= *c;
      return;
    }
  }
  if (enter && is_onnx_op(p, "Pow")) {
    if (auto e = scalar(g, p->inputs[1]); e && *e == 3.0 && !scalar(g, p->inputs[0])) {
      f.nodes.push_back(p);
      for (int i = 0; i < 3; ++i) f.values.push_back(p->inputs[0]);
      return;
    }
  }
  f.values.push_back(v);
}

// v = Add(c, w) or Add(w, c) with constant c, v read once: returns w (and the Add).
ir::Value* add_constant_operand(const ir::Graph& g, ir::Value* v, double c, std::vector<ir::Node*>& nodes) {
  ir::Node* p = v ? v->producer : nullptr;
  if (!is_onnx_op(p, "Add") || p->owner != &g || p->inputs.size() != 2 || v->uses.size() != 1 ||
      is_graph_output(g, v))
    return nullptr;
  for (int i = 0; i < 2; ++i) {
    const auto k = scalar(g, p->inputs[size_t(i)]);
    if (k && close(*k, c) && p->inputs[size_t(1 - i)]) {
      nodes.push_back(p);
      return p->inputs[size_t(1 - i)];
    }
  }
  return nullptr;
}

// v = op(w) with v read once: returns w.
ir::Value* unary_operand(const ir::Graph& g, ir::Value* v, const char* op, std::vector<ir::Node*>& nodes) {
  ir::Node* p = v ? v->producer : nullptr;
  if (!is_onnx_op(p, op) || p->owner != &g || p->inputs.size() != 1 || v->uses.size() != 1 ||
      is_graph_output(g, v))
    return nullptr;
  nodes.push_back(p);
  return p->inputs[0];
}

bool all_same(const std::vector<ir::Value*>& vs, const ir::Value* x) {
  for (const ir::Value* v : vs)
    if (v != x) return false;
  return true;
}

struct Match {
  ir::Value* x = nullptr;
  bool tanh = false;
  std::vector<ir::Node*> nodes;  // everything the Gelu replaces
};

// root's output = x * 0.5 * (1 + erf(...)) or (1 + tanh(...)), the inner argument checked per form.
bool match(const ir::Graph& g, ir::Node* root, Match& m) {
  if (!is_onnx_op(root, "Mul") || root->outputs.size() != 1 || !is_f32(root->outputs[0])) return false;
  Factors top;
  flatten(g, root->outputs[0], true, top);
  if (top.values.size() != 2 || !close(top.constant, 0.5)) return false;
  for (int xi = 0; xi < 2; ++xi) {
    ir::Value* x = top.values[size_t(xi)];
    ir::Value* t = top.values[size_t(1 - xi)];
    if (!is_f32(x)) continue;
    std::vector<ir::Node*> nodes = top.nodes;
    ir::Value* e = add_constant_operand(g, t, 1.0, nodes);
    if (!e) continue;
    std::vector<ir::Node*> inner = nodes;
    if (ir::Value* z = unary_operand(g, e, "Erf", inner)) {
      Factors f;
      flatten(g, z, false, f);
      if (f.values.size() == 1 && f.values[0] == x && close(f.constant, 1.0 / std::sqrt(2.0))) {
        inner.insert(inner.end(), f.nodes.begin(), f.nodes.end());
        m = Match{x, false, inner};
        return true;
      }
      continue;
    }
    inner = nodes;
    if (ir::Value* z = unary_operand(g, e, "Tanh", inner)) {
      // z = sqrt(2/pi) * (x + 0.044715 * x^3)
      Factors f;
      flatten(g, z, false, f);
      if (f.values.size() != 1 || !close(f.constant, std::sqrt(2.0 / 3.14159265358979323846))) continue;
      ir::Node* s = f.values[0]->producer;
      if (!is_onnx_op(s, "Add") || s->owner != &g || s->inputs.size() != 2 || f.values[0]->uses.size() != 1 ||
          is_graph_output(g, f.values[0]))
        continue;
      for (int i = 0; i < 2; ++i) {
        if (s->inputs[size_t(i)] != x || !s->inputs[size_t(1 - i)]) continue;
        Factors cube;
        flatten(g, s->inputs[size_t(1 - i)], false, cube);
        if (cube.values.size() == 3 && all_same(cube.values, x) && close(cube.constant, 0.044715)) {
          inner.insert(inner.end(), f.nodes.begin(), f.nodes.end());
          inner.push_back(s);
          inner.insert(inner.end(), cube.nodes.begin(), cube.nodes.end());
          m = Match{x, true, inner};
          return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

void fuse_gelu(ir::Graph& g) {
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  std::set<const ir::Node*> gone;
  std::vector<std::pair<ir::Node*, Match>> found;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // from the outputs back: largest match first
    Match m;
    if (gone.count(*it) || !match(g, *it, m)) continue;
    bool clash = false;
    for (const ir::Node* n : m.nodes) clash = clash || gone.count(n);
    if (clash) continue;
    gone.insert(m.nodes.begin(), m.nodes.end());
    found.emplace_back(*it, std::move(m));
  }
  for (auto& [root, m] : found) {
    ir::Value* out = root->outputs[0];
    const std::string name = root->name;
    std::set<ir::Node*> unique(m.nodes.begin(), m.nodes.end());
    for (ir::Node* n : unique) g.remove_node(n);
    ir::Node* f = g.add_node("Gelu", name);
    f->opset = 20;
    if (m.tanh) f->attrs["approximate"] = Attribute::of_string("tanh");
    g.connect_input(f, m.x);
    g.connect_output(f, out);
  }
  g.remove_unused_values();
}

}  // namespace tessera::passes
