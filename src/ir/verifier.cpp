#include "ir/verifier.h"

#include <unordered_set>

#include "core/error.h"
#include "ir/op_registry.h"

namespace tessera::ir {

namespace {

// Values that are defined at the point a node runs: graph inputs, initializers,
// outputs of earlier nodes, and everything defined in enclosing graphs.
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_set<const Value*> defined;
  bool has(const Value* v) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->defined.count(v)) return true;
    return false;
  }
};

std::string count_range(int lo, int hi) {
  if (hi < 0) return cat(lo, " or more");
  if (lo == hi) return cat(lo);
  return cat(lo, " to ", hi);
}

void verify_graph(const Graph& g, const Scope* outer) {
  Scope scope;
  scope.parent = outer;
  for (const Value* v : g.inputs) {
    check_model(v != nullptr, "graph '", g.name, "' has a null input");
    scope.defined.insert(v);
  }
  for (const auto& v : g.values())
    if (v->initializer) scope.defined.insert(v.get());

  const OpRegistry& reg = OpRegistry::instance();
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    auto fail = [&](ErrorCode code, const std::string& msg) { throw Error(code, msg, n.name, n.op_type); };
    const OpSchema* s = reg.find(n.domain, n.op_type);
    if (!s) fail(ErrorCode::unsupported, cat("unsupported op ", n.op_type, " in domain '", n.domain, "'"));

    // Trailing omitted inputs / outputs do not count.
    int nin = int(n.inputs.size()), nout = int(n.outputs.size());
    while (nin > 0 && !n.inputs[size_t(nin - 1)]) --nin;
    while (nout > 0 && !n.outputs[size_t(nout - 1)]) --nout;
    if (nin < s->min_inputs || (s->max_inputs >= 0 && nin > s->max_inputs))
      fail(ErrorCode::invalid_model,
           cat("has ", nin, " inputs, ", n.op_type, " takes ", count_range(s->min_inputs, s->max_inputs)));
    if (int(n.outputs.size()) < s->min_outputs || (s->max_outputs >= 0 && nout > s->max_outputs))
      fail(ErrorCode::invalid_model,
           cat("has ", n.outputs.size(), " outputs, ", n.op_type, " gives ", count_range(s->min_outputs, s->max_outputs)));
    for (int i = 0; i < s->min_inputs && i < nin; ++i)
      if (!n.inputs[size_t(i)]) fail(ErrorCode::invalid_model, cat("required input ", i, " is missing"));

    for (const AttrSpec& spec : s->attrs) {
      const Attribute* a = n.attr(spec.name);
      if (a && a->kind != spec.kind)
        fail(ErrorCode::invalid_model, cat("attribute '", spec.name, "' has type ", Attribute::kind_name(a->kind),
                                           ", expected ", Attribute::kind_name(spec.kind)));
    }

    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* v = n.inputs[i];
      if (!v) continue;
      if (!scope.has(v))
        fail(ErrorCode::invalid_model,
             cat("input ", i, " '", v->name, "' is not defined before the node (no graph input, initializer or earlier node output)"));
    }
    for (const Value* v : n.outputs)
      if (v) {
        if (v->producer != &n)
          fail(ErrorCode::invalid_model, cat("output '", v->name, "' names a different producer"));
        scope.defined.insert(v);
      }
    for (const Graph* sg : n.subgraphs()) {
      try {
        verify_graph(*sg, &scope);
      } catch (const Error& e) {
        if (!e.node_name().empty() || !e.op_type().empty()) throw;
        throw Error(e.code(), cat("in subgraph '", sg->name, "': ", e.message()), n.name, n.op_type);
      }
    }
  }
  for (const Value* v : g.outputs) {
    check_model(v != nullptr, "graph '", g.name, "' has a null output");
    check_model(scope.has(v), "graph '", g.name, "' output '", v->name,
                "' is not produced by any node and is not an input or initializer");
  }
}

}  // namespace

void verify(const Graph& g) { verify_graph(g, nullptr); }

}  // namespace tessera::ir
