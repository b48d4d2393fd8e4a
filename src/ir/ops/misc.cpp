// Schemas and shape inference: misc family (Identity, Constant, Dropout, Size,
// EyeLike, Optional, OptionalHasElement, OptionalGetElement).
#include "ir/op_registry.h"
#include "core/dtype_attr.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

void infer_constant(InferenceContext& ctx) {
  const Node& n = ctx.node();
  auto vec = [&](DType t, size_t len) { ctx.set_output(0, t, std::vector<Dim>{Dim(int64_t(len))}); };
  if (const Attribute* a = n.attr("value"); a && a->kind == K::t) ctx.output(0) = TypeInfo::tensor_of(a->t);
  else if (n.attr("value_float")) ctx.set_output(0, DType::f32, std::vector<Dim>{});
  else if (const Attribute* f = n.attr("value_floats")) vec(DType::f32, f->floats.size());
  else if (n.attr("value_int")) ctx.set_output(0, DType::i64, std::vector<Dim>{});
  else if (const Attribute* i = n.attr("value_ints")) vec(DType::i64, i->ints.size());
  else if (n.attr("value_string")) ctx.set_output(0, DType::string, std::vector<Dim>{});
  else if (const Attribute* s = n.attr("value_strings")) vec(DType::string, s->strings.size());
}

void infer_dropout(InferenceContext& ctx) {
  ctx.propagate(0, 0);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::boolean, ctx.input_shape(0));
}

void infer_eyelike(InferenceContext& ctx) {
  const auto& s = ctx.input_shape(0);
  if (s && s->size() != 2) ctx.fail("input must be 2-D, got rank ", s->size());
  DType t = ctx.input_dtype(0);
  if (const Attribute* a = ctx.node().attr("dtype")) {
    t = dtype_from_attr(a);
    if (t == DType::undefined) ctx.fail("attribute 'dtype' names an unknown type");
  }
  ctx.set_output(0, t, s);
}

void infer_optional(InferenceContext& ctx) {
  TypeInfo ti;
  ti.kind = TypeInfo::Kind::optional;
  if (ctx.has_input(0)) {
    const TypeInfo& in = ctx.input_type(0);
    ti.elem = in.elem;
    ti.shape = in.shape;
    ti.inner = in.kind == TypeInfo::Kind::sequence ? TypeInfo::Kind::sequence : TypeInfo::Kind::tensor;
  } else if (const Attribute* a = ctx.node().attr("type")) {
    ti.elem = a->type_elem;
  }
  ctx.output(0) = ti;
}

void infer_optional_get(InferenceContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (in.kind == TypeInfo::Kind::optional) {
    TypeInfo out = in;
    out.kind = in.inner;
    ctx.output(0) = out;
  } else {
    ctx.propagate(0, 0);
  }
}

}  // namespace

void register_misc_schemas(OpRegistry& r) {
  r.add(make_schema("Identity", 1, 1, 1, 1, infer_same_as_input0));
  r.add(make_schema("Constant", 0, 0, 1, 1, infer_constant,
                    {{"value", K::t},
                     {"value_float", K::f},
                     {"value_floats", K::floats},
                     {"value_int", K::i},
                     {"value_ints", K::ints},
                     {"value_string", K::s},
                     {"value_strings", K::strings},
                     {"sparse_value", K::t}}));
  r.add(make_schema("Dropout", 1, 3, 1, 2, infer_dropout, {{"seed", K::i}, {"ratio", K::f}}));
  r.add(make_schema("Size", 1, 1, 1, 1, [](InferenceContext& ctx) { ctx.set_output(0, DType::i64, std::vector<Dim>{}); }));
  r.add(make_schema("EyeLike", 1, 1, 1, 1, infer_eyelike, {{"dtype", K::i}, {"k", K::i}}));
  r.add(make_schema("Optional", 0, 1, 1, 1, infer_optional, {{"type", K::type_proto}}));
  r.add(make_schema("OptionalHasElement", 0, 1, 1, 1,
                    [](InferenceContext& ctx) { ctx.set_output(0, DType::boolean, std::vector<Dim>{}); }));
  r.add(make_schema("OptionalGetElement", 1, 1, 1, 1, infer_optional_get));
}

}  // namespace tessera::ir
