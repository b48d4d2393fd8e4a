// Schemas and shape inference: cast family (Cast, CastLike, BitCast).
#include "ir/op_registry.h"
#include "core/dtype_attr.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

void infer_cast(InferenceContext& ctx) {
  const Attribute* a = ctx.node().attr("to");
  if (!a) ctx.fail("required attribute 'to' is missing");
  const DType to = dtype_from_attr(a);
  if (to == DType::undefined) ctx.fail("attribute 'to' names an unknown type");
  ctx.set_output(0, to, ctx.input_shape(0));
}

void infer_castlike(InferenceContext& ctx) { ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0)); }

}  // namespace

void register_cast_schemas(OpRegistry& r) {
  r.add(make_schema("Cast", 1, 1, 1, 1, infer_cast, {{"to", K::i}, {"saturate", K::i}, {"round_mode", K::s}}));
  r.add(make_schema("BitCast", 1, 1, 1, 1, infer_cast, {{"to", K::i}}));
  r.add(make_schema("CastLike", 2, 2, 1, 1, infer_castlike, {{"saturate", K::i}, {"round_mode", K::s}}));
}

}  // namespace tessera::ir
