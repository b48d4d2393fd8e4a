// Schemas and shape inference: control_flow family (If, Loop, Scan). Output
// types come from the bodies' declared outputs where the IR knows them.
#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

const Graph* body(const InferenceContext& ctx, const char* name) {
  const Attribute* a = ctx.node().attr(name);
  if (!a || a->kind != K::g || !a->g) ctx.fail("required graph attribute '", name, "' is missing");
  return dynamic_cast<const Graph*>(a->g.get());
}

void infer_if(InferenceContext& ctx) {
  const Graph* t = body(ctx, "then_branch");
  const Graph* e = body(ctx, "else_branch");
  if (!t || !e) return;
  if (t->outputs.size() != e->outputs.size()) ctx.fail("then_branch and else_branch have different output counts");
  if (t->outputs.size() != ctx.num_outputs()) ctx.fail("branches return ", t->outputs.size(), " values, node has ",
                                                       ctx.num_outputs(), " outputs");
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const TypeInfo& a = t->outputs[i]->type;
    const TypeInfo& b = e->outputs[i]->type;
    TypeInfo o = a.kind != TypeInfo::Kind::unknown ? a : b;
    if (a.kind == TypeInfo::Kind::tensor && b.kind == TypeInfo::Kind::tensor) {
      if (!(a.shape && b.shape && *a.shape == *b.shape)) {
        // Branches may differ in shape: keep the rank when it agrees.
        if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
          std::vector<Dim> d(a.shape->size());
          for (size_t k = 0; k < d.size(); ++k) d[k] = (*a.shape)[k] == (*b.shape)[k] ? (*a.shape)[k] : Dim();
          o.shape = d;
        } else {
          o.shape = std::nullopt;
        }
      }
    }
    ctx.output(i) = o;
  }
}

void infer_loop(InferenceContext& ctx) {
  const Graph* g = body(ctx, "body");
  if (!g) return;
  const size_t n_carried = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  if (g->outputs.size() != 1 + ctx.num_outputs()) ctx.fail("body returns ", g->outputs.size(), " values, expected ",
                                                            1 + ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const TypeInfo& bt = g->outputs[1 + i]->type;
    if (i < n_carried) {
      TypeInfo o = bt.kind != TypeInfo::Kind::unknown ? bt : ctx.input_type(2 + i);
      if (o.kind == TypeInfo::Kind::tensor) o.shape = std::nullopt;  // may change across iterations
      ctx.output(i) = o;
    } else if (bt.kind == TypeInfo::Kind::tensor) {
      std::optional<std::vector<Dim>> s;
      if (bt.shape) {
        s = std::vector<Dim>{Dim()};
        s->insert(s->end(), bt.shape->begin(), bt.shape->end());
      }
      ctx.set_output(i, bt.elem, s);
    }
  }
}

void infer_scan(InferenceContext& ctx) {
  const Graph* g = body(ctx, "body");
  if (!g) return;
  const bool v8 = ctx.node().opset > 0 && ctx.node().opset < 9;
  const int64_t m = ctx.attr_int("num_scan_inputs", -1);
  if (m < 1) ctx.fail("num_scan_inputs must be >= 1");
  const int64_t n = int64_t(ctx.num_inputs()) - m - (v8 ? 1 : 0);
  if (n < 0) ctx.fail("num_scan_inputs exceeds the inputs");
  if (g->outputs.size() != ctx.num_outputs()) ctx.fail("body returns ", g->outputs.size(), " values, node has ",
                                                       ctx.num_outputs(), " outputs");
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const TypeInfo& bt = g->outputs[i]->type;
    if (int64_t(i) < n) {
      ctx.output(i) = ctx.input_type(i + (v8 ? 1 : 0));
      if (ctx.output(i).kind == TypeInfo::Kind::unknown) ctx.output(i) = bt;
    } else if (bt.kind == TypeInfo::Kind::tensor) {
      ctx.set_output(i, bt.elem, std::nullopt);
    }
  }
}

}  // namespace

void register_control_flow_schemas(OpRegistry& r) {
  r.add(make_schema("If", 1, 1, 1, -1, infer_if, {{"then_branch", K::g}, {"else_branch", K::g}}));
  r.add(make_schema("Loop", 2, -1, 1, -1, infer_loop, {{"body", K::g}}));
  r.add(make_schema("Scan", 1, -1, 1, -1, infer_scan,
                    {{"body", K::g}, {"num_scan_inputs", K::i}, {"scan_input_axes", K::ints},
                     {"scan_input_directions", K::ints}, {"scan_output_axes", K::ints},
                     {"scan_output_directions", K::ints}, {"directions", K::ints}}));
}

}  // namespace tessera::ir
