// fold_constants: a node whose inputs are all constants (initializers the user
// cannot override) is evaluated once here with its reference kernel and
// replaced by an initializer. Exporters route weights through such nodes
// (Identity of a shared bias, Reshape / Transpose / Cast of constants); folding
// them lets the fusion passes see the weights. Nodes with subgraphs, random
// ops and outputs over 256 MiB are left alone.
//
// Note on layering: this pass runs reference kernels (layer 1), which
// DESIGN.md's table did not list for src/passes; constant folding needs an
// evaluator and the reference kernels are the oracle.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/op_registry.h"
#include "kernels/ref/registry.h"
#include "passes/node_eval.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

const std::set<std::string> kNeverFold = {
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
    "Bernoulli",    "Multinomial",   "Dropout"};
constexpr size_t kMaxFoldedBytes = size_t(256) << 20;

bool foldable(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || kNeverFold.count(n.op_type) || !n.subgraphs().empty()) return false;
  if (n.op_type == "Constant") return false;  // the frontend made these initializers already
  bool any = false;
  for (const ir::Value* v : n.inputs) {
    if (!v) continue;
    if (!is_constant(g, v)) return false;
    any = true;
  }
  if (!any) return false;  // e.g. ConstantOfShape without input: leave it
  for (const ir::Value* v : n.outputs)
    if (v && is_graph_output(g, v)) return false;  // keep graph outputs produced by nodes
  return true;
}

// ---- Shape values through symbolic dims (ONNX's "data propagation") ----
// A small int64 tensor computed from shapes (Shape / Size -> Gather -> Mul -> Concat ...) has, per element, a
// known value, a symbolic dim (`batch`) or nothing known. Where every element is known the value is a
// constant (folded here: a graph input's declared dims are checked against every feed, and inference
// derives the others from them); where some are symbols, the Reshape / Expand it shapes gets its output's
// dims (a symbol stays a symbol), and inference carries them on: ViT's [batch, 197, 768] after its patch
// embedding.
// One element: a known value (any int64, -1 included, unlike ir::Dim), an affine function coef * sym + v of a
// symbolic dim (`batch`, `past_len + 1`, `197 * batch`), or nothing known. Affine values let a decoder's
// Range(past_len, past_len + 1) be known to have one element, so its position embedding is [1, 768].
struct Elem {
  bool known = false;
  int64_t v = 0;  // the value, or the affine function's constant
  std::string sym;
  int64_t coef = 1;
  static Elem of(int64_t x) { return Elem{true, x, {}, 1}; }
  static Elem of(const ir::Dim& d) { return d.known() ? of(d.value) : Elem{false, 0, d.symbol, 1}; }
  bool affine() const { return !known && !sym.empty(); }
  bool symbolic() const { return affine() && coef == 1 && v == 0; }  // the dim itself
  ir::Dim dim() const { return known ? ir::Dim(v) : symbolic() ? ir::Dim::sym(sym) : ir::Dim(); }
  // x + y, k * x where both stay affine in one symbol; nothing known otherwise
  friend Elem operator+(const Elem& x, const Elem& y) {
    if (!(x.known || x.affine()) || !(y.known || y.affine())) return Elem{};
    if (x.known && y.known) return of(x.v + y.v);
    if (x.known || y.known) {
      Elem r = x.known ? y : x;
      r.v += x.known ? x.v : y.v;
      return r;
    }
    if (x.sym != y.sym) return Elem{};
    if (x.coef + y.coef == 0) return of(x.v + y.v);
    return Elem{false, x.v + y.v, x.sym, x.coef + y.coef};
  }
  Elem times(int64_t k) const {
    if (known || k == 0) return of(known ? v * k : 0);
    return affine() ? Elem{false, v * k, sym, coef * k} : Elem{};
  }
};

struct ShapeValue {
  bool scalar = false;
  DType dtype = DType::i64;
  std::vector<Elem> d;
};

std::optional<ShapeValue> constant_shape_value(const ir::Value* v) {
  if (!v || !v->initializer) return std::nullopt;
  const Tensor& t = *v->initializer;
  if ((t.dtype() != DType::i64 && t.dtype() != DType::boolean) || t.rank() > 1 || t.numel() > 16)
    return std::nullopt;
  ShapeValue s;
  s.scalar = t.rank() == 0, s.dtype = t.dtype();
  const Tensor c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i)
    s.d.push_back(Elem::of(t.dtype() == DType::i64 ? c.data<int64_t>()[i] : int64_t(c.data<bool>()[i])));
  return s;
}

// Elementwise over two shape values (a scalar or one element broadcasts).
template <class F>
std::optional<ShapeValue> elementwise(const ShapeValue& a, const ShapeValue& b, DType out, const F& f) {
  const size_t n = std::max(a.d.size(), b.d.size());
  if ((a.d.size() != n && a.d.size() != 1) || (b.d.size() != n && b.d.size() != 1)) return std::nullopt;
  ShapeValue r;
  r.scalar = a.scalar && b.scalar, r.dtype = out;
  for (size_t i = 0; i < n; ++i) r.d.push_back(f(a.d[a.d.size() == 1 ? 0 : i], b.d[b.d.size() == 1 ? 0 : i]));
  return r;
}

// Known int64 values of an initializer input (axes, indices), or nullopt.
std::optional<std::vector<int64_t>> ints_of(const ir::Value* v) {
  if (!v || !v->initializer || v->initializer->dtype() != DType::i64) return std::nullopt;
  const Tensor c = v->initializer->contiguous();
  return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
}

std::optional<ShapeValue> eval_shape_value(const ir::Node& n,
                                           const std::map<const ir::Value*, ShapeValue>& sv) {
  auto in = [&](size_t i) -> std::optional<ShapeValue> {
    if (i >= n.inputs.size() || !n.inputs[i]) return std::nullopt;
    if (auto c = constant_shape_value(n.inputs[i])) return c;
    auto it = sv.find(n.inputs[i]);
    return it == sv.end() ? std::nullopt : std::optional<ShapeValue>(it->second);
  };
  const std::string& op = n.op_type;
  if (!n.domain.empty()) return std::nullopt;
  if (op == "Shape" || op == "Size") {
    const ir::Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
    if (!x || x->type.kind != ir::TypeInfo::Kind::tensor || !x->type.shape) return std::nullopt;
    const auto& shape = x->type.shape;
    if (op == "Size") {
      ShapeValue s;
      s.scalar = true;
      // the product of the known dims, times the symbolic one if there is one ([batch, 197]: 197 * batch)
      Elem size = Elem::of(1);
      for (const ir::Dim& d : *shape)
        size = d.known() ? size.times(d.value) : size.known ? Elem::of(d).times(size.v) : Elem{};
      s.d.push_back(size);
      return s;
    }
    const int64_t r = int64_t(shape->size());
    auto bound = [&](const char* key, int64_t dflt) {
      const Attribute* a = n.attr(key);
      int64_t v = a ? a->i : dflt;
      return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r);
    };
    ShapeValue s;
    const int64_t b = bound("start", 0), e = std::max(b, bound("end", r));
    for (int64_t i = b; i < e; ++i) s.d.push_back(Elem::of((*shape)[size_t(i)]));
    return s;
  }
  if (op == "Identity" || (op == "Cast" && n.attr("to") && n.attr("to")->i == 7)) return in(0);
  if (op == "Gather") {
    auto data = in(0);
    auto idx = ints_of(n.inputs.size() > 1 ? n.inputs[1] : nullptr);
    const Attribute* ax = n.attr("axis");
    if (!data || data->scalar || !idx || (ax && ax->i != 0)) return std::nullopt;
    ShapeValue r;
    r.scalar = n.inputs[1]->initializer->rank() == 0, r.dtype = data->dtype;
    for (int64_t i : *idx) {
      const int64_t k = i < 0 ? i + int64_t(data->d.size()) : i;
      if (k < 0 || k >= int64_t(data->d.size())) return std::nullopt;
      r.d.push_back(data->d[size_t(k)]);
    }
    return r;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") {
    auto x = in(0);
    if (!x) return std::nullopt;
    if (op == "Unsqueeze" && !x->scalar) return std::nullopt;
    if (op == "Squeeze" && x->d.size() != 1) return std::nullopt;
    if (op == "Reshape") {  // a vector to one dim ([-1] or its length)
      auto shape = ints_of(n.inputs.size() > 1 ? n.inputs[1] : nullptr);
      if (!shape || shape->size() != 1 || ((*shape)[0] != -1 && (*shape)[0] != int64_t(x->d.size())))
        return std::nullopt;
    }
    x->scalar = op == "Squeeze";
    return x;
  }
  if (op == "Concat") {
    const Attribute* ax = n.attr("axis");
    if (!ax || (ax->i != 0 && ax->i != -1)) return std::nullopt;
    ShapeValue r;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto x = in(i);
      if (!x || x->scalar) return std::nullopt;
      r.dtype = x->dtype;
      r.d.insert(r.d.end(), x->d.begin(), x->d.end());
    }
    return r;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    auto a = in(0), b = in(1);
    if (!a || !b || a->dtype != DType::i64 || b->dtype != DType::i64) return std::nullopt;
    return elementwise(*a, *b, DType::i64, [&](const Elem& x, const Elem& y) {
      if (op == "Add") return x + y;
      if (op == "Sub") return x + y.times(-1);
      if (op == "Mul") return y.known ? x.times(y.v) : x.known ? y.times(x.v) : Elem{};
      if (x.known && y.known) return y.v == 0 ? Elem{} : Elem::of(x.v / y.v);  // truncates, as ONNX's Div
      return y.known && y.v == 1 ? x : Elem{};
    });
  }
  if (op == "Equal") {
    auto a = in(0), b = in(1);
    if (!a || !b || a->dtype != DType::i64 || b->dtype != DType::i64) return std::nullopt;
    return elementwise(*a, *b, DType::boolean, [](const Elem& x, const Elem& y) {
      if (x.known && y.known) return Elem::of(int64_t(x.v == y.v));
      // a symbolic dim is a size: never negative
      if ((x.symbolic() && y.known && y.v < 0) || (y.symbolic() && x.known && x.v < 0)) return Elem::of(0);
      if (x.affine() && y.affine() && x.sym == y.sym && x.coef == y.coef)
        return Elem::of(int64_t(x.v == y.v));
      return Elem{};
    });
  }
  if (op == "Where") {
    auto c = in(0), x = in(1), y = in(2);
    if (!c || !x || !y || c->dtype != DType::boolean) return std::nullopt;
    auto xy = elementwise(*x, *y, x->dtype, [](const Elem& a, const Elem&) { return a; });
    if (!xy) return std::nullopt;
    const size_t n_out = std::max(c->d.size(), xy->d.size());
    if ((c->d.size() != n_out && c->d.size() != 1) || (xy->d.size() != n_out && xy->d.size() != 1))
      return std::nullopt;
    ShapeValue r;
    r.scalar = c->scalar && x->scalar && y->scalar, r.dtype = x->dtype;
    for (size_t i = 0; i < n_out; ++i) {
      const Elem& ci = c->d[c->d.size() == 1 ? 0 : i];
      const Elem& xi = x->d[x->d.size() == 1 ? 0 : i];
      const Elem& yi = y->d[y->d.size() == 1 ? 0 : i];
      r.d.push_back(!ci.known ? Elem{} : ci.v ? xi : yi);
    }
    return r;
  }
  return std::nullopt;
}

// Output dims of Reshape(data, shape) / Expand(x, shape) from a shape value with symbols, or nullopt.
std::optional<std::vector<ir::Dim>> shaped_dims(const ir::Node& n, const ShapeValue& s) {
  const auto& xs = n.inputs[0]->type.shape;
  if (n.op_type == "Reshape") {
    const Attribute* az = n.attr("allowzero");
    std::vector<ir::Dim> out;
    for (size_t i = 0; i < s.d.size(); ++i) {
      const Elem& d = s.d[i];
      if (d.known && d.v == 0 && !(az && az->i)) {
        if (!xs || i >= xs->size()) return std::nullopt;
        out.push_back((*xs)[i]);
      } else if (d.known && d.v < 0) {
        out.push_back(ir::Dim());  // -1: inferred at run time
      } else {
        out.push_back(d.dim());
      }
    }
    return out;
  }
  if (!xs) return std::nullopt;  // Expand: numpy broadcasting of x's dims and the shape
  const size_t r = std::max(xs->size(), s.d.size());
  std::vector<ir::Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const bool hx = i + xs->size() >= r, hs = i + s.d.size() >= r;
    const ir::Dim a = hx ? (*xs)[i + xs->size() - r] : ir::Dim(1);
    const ir::Dim b =
        hs ? (s.d[i + s.d.size() - r].known && s.d[i + s.d.size() - r].v < 0 ? ir::Dim()
                                                                             : s.d[i + s.d.size() - r].dim())
           : ir::Dim(1);
    if (a.known() && a.value == 1)
      out[i] = b;
    else if (b.known() && b.value == 1)
      out[i] = a;
    else if (a == b)
      out[i] = a;
    else
      out[i] = ir::Dim();
  }
  return out;
}

// One sweep: shape values in node order; fully known ones become constants, Reshape / Expand outputs take
// the dims their shape value gives where they knew less. True if anything changed.
bool propagate_shape_values(ir::Graph& g) {
  std::map<const ir::Value*, ShapeValue> sv;
  std::vector<std::pair<ir::Node*, ShapeValue>> known;
  bool changed = false;
  for (const auto& np : g.nodes()) {
    ir::Node& n = *np;
    if (n.outputs.size() == 1 && n.outputs[0] && !n.outputs[0]->initializer) {
      if (auto v = eval_shape_value(n, sv)) {
        const bool all = std::all_of(v->d.begin(), v->d.end(), [](const Elem& d) { return d.known; });
        if (all && !is_graph_output(g, n.outputs[0])) known.emplace_back(&n, *v);
        sv[n.outputs[0]] = std::move(*v);
      }
    }
    if (n.op_type == "Range" && n.domain.empty() && n.inputs.size() == 3 && n.outputs.size() == 1 &&
        n.outputs[0] &&
        (!n.outputs[0]->type.shape || n.outputs[0]->type.shape->size() != 1 ||
         !(*n.outputs[0]->type.shape)[0].known())) {
      // its length from the shape values of start, limit and delta: max(ceil((limit - start) / delta), 0)
      auto scalar = [&](size_t i) -> std::optional<Elem> {
        std::optional<ShapeValue> x = constant_shape_value(n.inputs[i]);
        if (!x && sv.count(n.inputs[i])) x = sv.at(n.inputs[i]);
        if (!x || x->d.size() != 1) return std::nullopt;
        return x->d[0];
      };
      const auto start = scalar(0), limit = scalar(1), delta = scalar(2);
      if (start && limit && delta && delta->known && delta->v != 0) {
        const Elem span = *limit + start->times(-1);
        if (span.known) {
          const int64_t a = std::abs(span.v), d = std::abs(delta->v);
          const int64_t len = span.v != 0 && (span.v > 0) == (delta->v > 0) ? (a + d - 1) / d : 0;
          n.outputs[0]->type =
              ir::TypeInfo::tensor(n.inputs[0]->type.elem, std::vector<ir::Dim>{ir::Dim(len)});
          changed = true;
        }
      }
    }
    if ((n.op_type == "Reshape" || n.op_type == "Expand") && n.domain.empty() && n.inputs.size() >= 2 &&
        n.inputs[0] && n.inputs[1] && !n.inputs[1]->initializer && n.outputs.size() == 1 && n.outputs[0]) {
      auto it = sv.find(n.inputs[1]);
      if (it == sv.end() || it->second.scalar) continue;
      auto dims = shaped_dims(n, it->second);
      ir::Value* out = n.outputs[0];
      if (!dims) continue;
      auto count_known = [](const std::vector<ir::Dim>& d) {
        return std::count_if(d.begin(), d.end(),
                             [](const ir::Dim& x) { return x.known() || !x.symbol.empty(); });
      };
      if (!out->type.shape ||
          (out->type.shape->size() == dims->size() && count_known(*dims) > count_known(*out->type.shape))) {
        out->type = ir::TypeInfo::tensor(n.inputs[0]->type.elem, *dims);
        changed = true;
      }
    }
  }
  for (auto& [n, v] : known) {
    Tensor t(v.dtype, v.scalar ? Shape{} : Shape{int64_t(v.d.size())});
    for (size_t i = 0; i < v.d.size(); ++i) {
      if (v.dtype == DType::i64)
        t.data<int64_t>()[i] = v.d[i].v;
      else
        t.data<bool>()[i] = v.d[i].v != 0;
    }
    ir::Value* out = n->outputs[0];
    g.remove_node(n);
    out->initializer = t;
    out->type = ir::TypeInfo::tensor_of(t);
    changed = true;
  }
  return changed;
}

}  // namespace

void fold_constants(ir::Graph& g) {
  const auto& table = kernels::ref::KernelTable::instance();
  bool changed = true;
  while (changed) {
    changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    for (ir::Node* n : nodes) {
      if (!foldable(g, *n)) continue;
      KernelFn fn = table.find(n->domain, n->op_type);
      if (!fn) continue;
      std::vector<DataValue> in;
      for (const ir::Value* v : n->inputs) in.push_back(v ? DataValue(*v->initializer) : DataValue());
      FoldContext ctx(*n, std::move(in));
      try {
        fn(ctx);
      } catch (const Error&) {
        continue;  // leave it for run time, where the error will name the node
      }
      bool ok = true;
      for (size_t i = 0; i < n->outputs.size(); ++i) {
        if (!n->outputs[i]) continue;
        const DataValue& o = ctx.outputs()[i];
        if (!o.is_tensor() || o.tensor.nbytes() > kMaxFoldedBytes) ok = false;
      }
      if (!ok) continue;
      std::vector<ir::Value*> outs = n->outputs;
      g.remove_node(n);
      for (size_t i = 0; i < outs.size(); ++i) {
        if (!outs[i]) continue;
        Tensor t = ctx.outputs()[i].tensor.contiguous();
        // own the data (a kernel may have returned a view of a constant input)
        outs[i]->initializer = t.clone();
        outs[i]->type = ir::TypeInfo::tensor_of(t);
      }
      changed = true;
    }
    if (!changed && propagate_shape_values(g)) {
      // shapes reach Reshape & co.: infer again, then fold what that made known
      ir::infer_shapes(g);
      changed = true;
    }
  }
  g.remove_unused_values();
}

}  // namespace tessera::passes
