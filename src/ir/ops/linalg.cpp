// Schemas and shape inference: linalg family (MatMul, Gemm, Einsum, Det).
#include <map>

#include "ir/ops/nn_infer.h"

namespace tessera::ir {

namespace {
using nn::A;

void infer_matmul(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto a = nn::shape_of(ctx, 0), b = nn::shape_of(ctx, 1);
  if (!a || !b) return ctx.set_output(0, t, std::nullopt);
  if (a->empty() || b->empty()) ctx.fail("MatMul operands must have rank >= 1");
  std::vector<Dim> sa = *a, sb = *b;
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), Dim(1));
  if (b1) sb.push_back(Dim(1));
  const Dim k1 = sa.back(), k2 = sb[sb.size() - 2];
  if (k1.known() && k2.known() && k1.value != k2.value)
    ctx.fail("MatMul inner dimensions differ: ", k1.value, " vs ", k2.value);
  std::vector<Dim> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  std::vector<Dim> out = *batch;
  if (!a1) out.push_back(sa[sa.size() - 2]);
  if (!b1) out.push_back(sb.back());
  ctx.set_output(0, t, out);
}

void infer_gemm(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto a = nn::shape_of(ctx, 0), b = nn::shape_of(ctx, 1);
  if (!a || !b) return ctx.set_output(0, t, std::nullopt);
  if (a->size() != 2 || b->size() != 2) ctx.fail("Gemm operands must be 2-D");
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const Dim m = ta ? (*a)[1] : (*a)[0], ka = ta ? (*a)[0] : (*a)[1];
  const Dim kb = tb ? (*b)[1] : (*b)[0], n = tb ? (*b)[0] : (*b)[1];
  if (ka.known() && kb.known() && ka.value != kb.value)
    ctx.fail("Gemm inner dimensions differ: ", ka.value, " vs ", kb.value);
  ctx.set_output(0, t, std::vector<Dim>{m, n});
}

// Parses "ab,bc->ac" into terms; returns false on syntax error.
struct EinsumEq {
  std::vector<std::string> inputs;
  std::string output;
  bool explicit_out = false;
};

EinsumEq parse_einsum(const InferenceContext& ctx, std::string eq) {
  std::string s;
  for (char c : eq)
    if (c != ' ') s += c;
  EinsumEq e;
  const size_t arrow = s.find("->");
  std::string lhs = arrow == std::string::npos ? s : s.substr(0, arrow);
  if (arrow != std::string::npos) {
    e.explicit_out = true;
    e.output = s.substr(arrow + 2);
  }
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  (void)ctx;
  return e;
}

void infer_einsum(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const EinsumEq e = parse_einsum(ctx, ctx.attr_string("equation", ""));
  if (e.inputs.size() != ctx.num_inputs())
    ctx.fail("equation has ", e.inputs.size(), " operands but the node has ", ctx.num_inputs(), " inputs");
  std::map<char, Dim> dims;
  std::map<char, int> count;
  std::optional<std::vector<Dim>> ell;  // broadcast ellipsis dims
  size_t ell_rank = 0;
  bool all_known = true;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    auto s = nn::shape_of(ctx, i);
    if (!s) {
      all_known = false;
      continue;
    }
    const std::string& term = e.inputs[i];
    const size_t dot = term.find("...");
    const size_t letters = term.size() - (dot == std::string::npos ? 0 : 3);
    if (s->size() < letters || (dot == std::string::npos && s->size() != letters))
      ctx.fail("operand ", i, " has rank ", s->size(), " but term '", term, "'");
    const size_t er = s->size() - letters;
    size_t d = 0;
    for (size_t p = 0; p < term.size(); ++p) {
      if (term[p] == '.') {
        if (p == dot) {
          std::vector<Dim> ed(s->begin() + long(d), s->begin() + long(d + er));
          ell = ell ? broadcast_shapes(*ell, ed) : ed;
          ell_rank = std::max(ell_rank, er);
          d += er;
        }
        continue;
      }
      const Dim dim = (*s)[d++];
      auto it = dims.find(term[p]);
      if (it == dims.end() || !it->second.known() || (it->second.value == 1 && dim.known())) dims[term[p]] = dim;
      count[term[p]]++;
    }
  }
  if (!all_known) return ctx.set_output(0, t, std::nullopt);
  std::string out = e.output;
  if (!e.explicit_out) {
    out = ell_rank ? "..." : "";
    for (auto& [c, n] : count)
      if (n == 1) out += c;
  }
  std::vector<Dim> shape;
  for (size_t p = 0; p < out.size(); ++p) {
    if (out[p] == '.') {
      if (out.compare(p, 3, "...") == 0 && ell) shape.insert(shape.end(), ell->begin(), ell->end());
      p += 2;
      continue;
    }
    auto it = dims.find(out[p]);
    if (it == dims.end()) ctx.fail("output label '", out[p], "' does not appear in the inputs");
    shape.push_back(it->second);
  }
  ctx.set_output(0, t, shape);
}

void infer_det(InferenceContext& ctx) {
  auto s = nn::shape_of(ctx, 0);
  if (!s) return ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
  if (s->size() < 2) ctx.fail("Det input must have rank >= 2");
  const Dim a = (*s)[s->size() - 2], b = s->back();
  if (a.known() && b.known() && a.value != b.value) ctx.fail("Det input must be square, got ", a.value, "x", b.value);
  ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>(s->begin(), s->end() - 2));
}
}  // namespace

void register_linalg_schemas(OpRegistry& r) {
  auto add = [&](OpSchema s) {
    s.family = "linalg";
    r.add(std::move(s));
  };
  add(make_schema("MatMul", 2, 2, 1, 1, infer_matmul));
  add(make_schema("Gemm", 2, 3, 1, 1, infer_gemm,
                  {{"alpha", A::f}, {"beta", A::f}, {"transA", A::i}, {"transB", A::i}}));
  add(make_schema("Einsum", 1, -1, 1, 1, infer_einsum, {{"equation", A::s}}));
  add(make_schema("Det", 1, 1, 1, 1, infer_det));
}

}  // namespace tessera::ir
