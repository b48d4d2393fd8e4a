// lower_einsum: a two-operand f32 Einsum (attention and projections written with
// torch.einsum: "bhqd,bhkd->bhqk", "bsd,df->bsf") becomes Transpose -> Reshape -> MatMul -> Reshape ->
// Transpose, so that it runs on the batched GEMM (and, with constant weights, fuse_gemm's packed one)
// instead of the reference kernel's loop over the whole label space in double; a one-operand permutation
// ("ij->ji") becomes a Transpose. onnxruntime's Einsum does the same at run time. Labels are classed as
// batch (both operands and the output), M (the first operand and the output), N (the second and the
// output) and K (both operands, not the output). Anything else — a label summed out of one operand alone,
// a label repeated within a term (a diagonal), sizes that broadcast, more operands — stays an Einsum. With
// symbolic sizes (dynamic batch or sequence axes) it lowers where Transposes alone make the MatMul's operands
// (one N and one K label; one M label, or several over a second operand of no batch labels).
// It runs before fold_constants, which folds the Transposes and Reshapes of constant operands.
#include <map>
#include <numeric>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

// The equation's terms as label lists (letters as themselves; the ellipsis's dims as 1, 2, ... aligned
// from the right across the operands), or false where it is not one this pass lowers.
bool parse(std::string eq, const std::vector<int64_t>& ranks, std::vector<std::vector<int>>& ins,
           std::vector<int>& out) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t c = lhs.find(',', b);
    terms.push_back(lhs.substr(b, c == std::string::npos ? std::string::npos : c - b));
    if (c == std::string::npos) break;
    b = c + 1;
  }
  if (terms.size() != ranks.size()) return false;
  int ell_max = 0;
  std::vector<int> ell(terms.size(), 0);
  auto letters = [](const std::string& t) {
    return int64_t(std::count_if(t.begin(), t.end(), [](char ch) { return std::isalpha(ch); }));
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has = terms[i].find("...") != std::string::npos;
    ell[i] = has ? int(ranks[i] - letters(terms[i])) : 0;
    if (ell[i] < 0 || (!has && letters(terms[i]) != ranks[i])) return false;
    ell_max = std::max(ell_max, ell[i]);
  }
  auto expand = [&](const std::string& t, int e, std::vector<int>& labels) {
    for (size_t k = 0; k < t.size(); ++k) {
      if (t.compare(k, 3, "...") == 0) {
        for (int d = ell_max - e + 1; d <= ell_max; ++d) labels.push_back(d);
        k += 2;
      } else if (std::isalpha(t[k])) {
        labels.push_back(t[k]);
      } else {
        return false;
      }
    }
    return true;
  };
  ins.assign(terms.size(), {});
  for (size_t i = 0; i < terms.size(); ++i)
    if (!expand(terms[i], ell[i], ins[i])) return false;
  out.clear();
  if (arrow != std::string::npos) return expand(eq.substr(arrow + 2), ell_max, out);
  for (int d = 1; d <= ell_max; ++d) out.push_back(d);  // implicit: the ellipsis, then the single letters
  std::map<int, int> count;
  for (const auto& t : ins)
    for (int l : t) ++count[l];
  for (const auto& [l, c] : count)
    if (l > 32 && c == 1) out.push_back(l);
  return true;
}

ir::Value* constant_i64(ir::Graph& g, const std::string& base, const std::vector<int64_t>& v) {
  Tensor t(DType::i64, {int64_t(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  ir::Value* c = g.add_value(g.unique_name(base));
  c->type = ir::TypeInfo::tensor_of(t);
  c->initializer = std::move(t);
  return c;
}

bool same_dim(const ir::Dim& a, const ir::Dim& b) {
  return a.known() ? b.known() && a.value == b.value
                   : !b.known() && !a.symbol.empty() && a.symbol == b.symbol;
}

struct Lowering {
  ir::Graph& g;
  int opset;
  std::string name;

  // A node op(x [, second]) -> a new value of shape `out` (or `into`, when given); a Reshape's target is
  // `out`'s values (the static path).
  ir::Value* add(const char* op, ir::Value* x, const std::vector<ir::Dim>& out, ir::Value* into = nullptr,
                 const std::vector<int64_t>* perm = nullptr, ir::Value* second = nullptr) {
    ir::Node* n = g.add_node(op, g.unique_name(name + "_" + op));
    n->opset = opset;
    g.connect_input(n, x);
    if (perm) set_attr_ints(n, "perm", *perm);
    if (std::string_view(op) == "Reshape") {
      std::vector<int64_t> v;
      for (const ir::Dim& d : out) v.push_back(d.value);
      g.connect_input(n, constant_i64(g, name + "_shape", v));
    }
    if (second) g.connect_input(n, second);
    ir::Value* y = into;
    if (!y) {
      y = g.add_value(g.unique_name(name + "_" + op));
      y->type = ir::TypeInfo::tensor(DType::f32, out);
    }
    g.connect_output(n, y);
    return y;
  }
};

bool lower(ir::Graph& g, ir::Node* n) {
  if (!is_onnx_op(n, "Einsum") || n->inputs.empty() || n->inputs.size() > 2 || n->outputs.size() != 1 ||
      !n->outputs[0])
    return false;
  std::vector<std::vector<ir::Dim>> shapes;
  for (const ir::Value* v : n->inputs) {
    if (!is_f32(v) || !v->type.shape) return false;
    shapes.push_back(*v->type.shape);
  }
  std::vector<int64_t> ranks;
  for (const auto& s : shapes) ranks.push_back(int64_t(s.size()));
  std::vector<std::vector<int>> ins;
  std::vector<int> out;
  if (!parse(string_attr(n, "equation", ""), ranks, ins, out)) return false;
  std::map<int, ir::Dim> size;
  bool known = true;
  for (size_t i = 0; i < ins.size(); ++i) {
    for (size_t d = 0; d < ins[i].size(); ++d) {
      const int l = ins[i][d];
      if (std::count(ins[i].begin(), ins[i].end(), l) != 1) return false;  // a diagonal
      auto [it, fresh] = size.emplace(l, shapes[i][d]);
      if (!fresh && !same_dim(it->second, shapes[i][d])) return false;  // broadcast, or not known to match
      known = known && shapes[i][d].known();
    }
  }
  for (int l : out)
    if (!size.count(l) || std::count(out.begin(), out.end(), l) != 1) return false;
  auto pos = [](const std::vector<int>& t, int l) {
    return int64_t(std::find(t.begin(), t.end(), l) - t.begin());
  };
  auto has = [](const std::vector<int>& t, int l) { return std::find(t.begin(), t.end(), l) != t.end(); };
  auto dims_of = [&](const std::vector<int>& ls) {
    std::vector<ir::Dim> d;
    for (int l : ls) d.push_back(size[l]);
    return d;
  };
  auto identity = [](const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i)) return false;
    return true;
  };
  ir::Value* y = n->outputs[0];
  Lowering w{g, n->opset, n->name.empty() ? "einsum" : n->name};
  if (ins.size() == 1) {  // a permutation
    if (ins[0].size() != out.size()) return false;
    std::vector<int64_t> perm;
    for (int l : out) perm.push_back(pos(ins[0], l));
    ir::Value* x = n->inputs[0];
    g.remove_node(n);
    w.add("Transpose", x, dims_of(out), y, &perm);
    return true;
  }
  const auto &a = ins[0], &b = ins[1];
  std::vector<int> batch, m, nn, k;
  for (int l : out) (has(a, l) && has(b, l) ? batch : has(a, l) ? m : nn).push_back(l);
  for (int l : a)
    if (!has(out, l)) {
      if (!has(b, l)) return false;  // summed out of A alone
      k.push_back(l);
    }
  for (int l : b)
    if (!has(out, l) && !has(a, l)) return false;
  // Sizes not all known: one N and K label each and one M label (or several over a B of no batch labels: a
  // projection "bsd,df->bsf"), so that Transposes alone make the MatMul's operands [batch..., M, K] and
  // [batch..., K, N] (its batch dims, or A's leading M dims over a 2-D B, as they are); known: all merged by
  // Reshapes.
  if (!known && (m.empty() || nn.size() != 1 || k.size() != 1 || (m.size() > 1 && !batch.empty())))
    return false;
  auto prod = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= size[l].value;
    return ir::Dim(p);
  };
  auto operand = [&](ir::Value* v, const std::vector<int>& t, const std::vector<int>& order, const char* tag,
                     std::vector<ir::Dim> flat) {
    std::vector<int64_t> perm;
    for (int l : order) perm.push_back(pos(t, l));
    const std::vector<ir::Dim> shape = dims_of(order);
    Lowering wt{g, w.opset, w.name + tag};
    if (!identity(perm)) v = wt.add("Transpose", v, shape, nullptr, &perm);
    if (!known) return v;
    bool same = shape.size() == flat.size();
    for (size_t i = 0; same && i < shape.size(); ++i) same = shape[i].value == flat[i].value;
    return same ? v : wt.add("Reshape", v, flat);
  };
  std::vector<int> ao = batch, bo = batch, po = batch;
  ao.insert(ao.end(), m.begin(), m.end()), ao.insert(ao.end(), k.begin(), k.end());
  bo.insert(bo.end(), k.begin(), k.end()), bo.insert(bo.end(), nn.begin(), nn.end());
  po.insert(po.end(), m.begin(), m.end()), po.insert(po.end(), nn.begin(), nn.end());
  std::vector<ir::Dim> af = dims_of(ao), bf = dims_of(bo), pf = dims_of(po);
  if (known) {
    af = {prod(m), prod(k)}, bf = {prod(k), prod(nn)}, pf = {prod(m), prod(nn)};
    if (!batch.empty()) {
      af.insert(af.begin(), prod(batch)), bf.insert(bf.begin(), prod(batch)),
          pf.insert(pf.begin(), prod(batch));
    }
  }
  ir::Value* xa = n->inputs[0];
  ir::Value* xb = n->inputs[1];
  g.remove_node(n);
  ir::Value* pa = operand(xa, a, ao, "_a", af);
  ir::Value* pb = operand(xb, b, bo, "_b", bf);
  // the product [batch, M, N] (merged when known); then the output's order
  std::vector<int64_t> perm;
  for (int l : out) perm.push_back(pos(po, l));
  const std::vector<ir::Dim> po_shape = dims_of(po);
  bool reshape = false;
  if (known) {
    reshape = po_shape.size() != pf.size();
    for (size_t i = 0; !reshape && i < pf.size(); ++i) reshape = po_shape[i].value != pf[i].value;
  }
  const bool permute = !identity(perm);
  ir::Value* p = w.add("MatMul", pa, pf, !permute && !reshape ? y : nullptr, nullptr, pb);
  if (reshape) p = w.add("Reshape", p, po_shape, permute ? nullptr : y);
  if (permute) w.add("Transpose", p, dims_of(out), y, &perm);
  return true;
}

}  // namespace

void lower_einsum(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  bool any = false;
  for (ir::Node* n : nodes) any |= lower(g, n);
  if (any) g.topological_sort();
}

}  // namespace tessera::passes
