// Schemas and shape inference: random family.
#include "ir/op_registry.h"
#include "core/dtype_attr.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

DType dtype_or(const InferenceContext& ctx, DType def) {
  const Attribute* a = ctx.node().attr("dtype");
  if (!a) return def;
  const DType t = dtype_from_attr(a);
  if (t == DType::undefined) ctx.fail("attribute 'dtype' names an unknown type");
  return t;
}

void infer_from_shape_attr(InferenceContext& ctx) {
  const Attribute* a = ctx.node().attr("shape");
  if (!a) ctx.fail("required attribute 'shape' is missing");
  std::vector<Dim> dims(a->ints.begin(), a->ints.end());
  ctx.set_output(0, dtype_or(ctx, DType::f32), dims);
}

void infer_like(InferenceContext& ctx) { ctx.set_output(0, dtype_or(ctx, ctx.input_dtype(0)), ctx.input_shape(0)); }

void infer_multinomial(InferenceContext& ctx) {
  std::optional<std::vector<Dim>> s;
  if (const auto& in = ctx.input_shape(0)) {
    if (in->size() != 2) ctx.fail("input must be 2-D, got rank ", in->size());
    s = std::vector<Dim>{(*in)[0], Dim(ctx.attr_int("sample_size", 1))};
  }
  ctx.set_output(0, dtype_or(ctx, DType::i32), s);
}

}  // namespace

void register_random_schemas(OpRegistry& r) {
  const std::vector<AttrSpec> normal = {{"dtype", K::i}, {"mean", K::f}, {"scale", K::f}, {"seed", K::f}};
  const std::vector<AttrSpec> uniform = {{"dtype", K::i}, {"high", K::f}, {"low", K::f}, {"seed", K::f}};
  auto with_shape = [](std::vector<AttrSpec> v) {
    v.push_back({"shape", K::ints});
    return v;
  };
  r.add(make_schema("RandomNormal", 0, 0, 1, 1, infer_from_shape_attr, with_shape(normal)));
  r.add(make_schema("RandomUniform", 0, 0, 1, 1, infer_from_shape_attr, with_shape(uniform)));
  r.add(make_schema("RandomNormalLike", 1, 1, 1, 1, infer_like, normal));
  r.add(make_schema("RandomUniformLike", 1, 1, 1, 1, infer_like, uniform));
  r.add(make_schema("Bernoulli", 1, 1, 1, 1, infer_like, {{"dtype", K::i}, {"seed", K::f}}));
  r.add(make_schema("Multinomial", 1, 1, 1, 1, infer_multinomial,
                    {{"dtype", K::i}, {"sample_size", K::i}, {"seed", K::f}}));
}

}  // namespace tessera::ir
