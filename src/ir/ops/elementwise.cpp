// Schemas and shape inference: elementwise family (unary math, activations,
// broadcasting binary ops, variadic Max/Min/Sum/Mean, Where, Clip, PRelu).
#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

void infer_to_bool(InferenceContext& ctx) { ctx.set_output(0, DType::boolean, ctx.input_shape(0)); }

// Output: the broadcast of every present input; element type of input `type_from`.
void infer_broadcast(InferenceContext& ctx, size_t first, size_t type_from, DType out_type) {
  std::optional<std::vector<Dim>> shape = ctx.input_shape(first);
  for (size_t i = first + 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    shape = broadcast_shapes(shape, ctx.input_shape(i));
  }
  const DType t = out_type != DType::undefined ? out_type : ctx.input_dtype(type_from);
  ctx.set_output(0, t, shape);
}

void infer_binary(InferenceContext& ctx) {
  const DType a = ctx.input_dtype(0), b = ctx.input_dtype(1);
  if (a != DType::undefined && b != DType::undefined && a != b)
    ctx.fail("inputs have different element types: ", dtype_name(a), " and ", dtype_name(b));
  infer_broadcast(ctx, 0, 0, DType::undefined);
}
void infer_compare(InferenceContext& ctx) {
  const DType a = ctx.input_dtype(0), b = ctx.input_dtype(1);
  if (a != DType::undefined && b != DType::undefined && a != b)
    ctx.fail("inputs have different element types: ", dtype_name(a), " and ", dtype_name(b));
  infer_broadcast(ctx, 0, 0, DType::boolean);
}
void infer_variadic(InferenceContext& ctx) { infer_broadcast(ctx, 0, 0, DType::undefined); }
void infer_pow(InferenceContext& ctx) { infer_broadcast(ctx, 0, 0, DType::undefined); }
void infer_where(InferenceContext& ctx) {
  const DType c = ctx.input_dtype(0);
  if (c != DType::undefined && c != DType::boolean) ctx.fail("condition must be bool, got ", dtype_name(c));
  infer_broadcast(ctx, 0, 1, DType::undefined);
}

void unary(OpRegistry& r, const char* op, std::vector<AttrSpec> attrs = {}) {
  r.add(make_schema(op, 1, 1, 1, 1, infer_same_as_input0, std::move(attrs)));
}

}  // namespace

void register_elementwise_schemas(OpRegistry& r) {
  for (const char* op : {"Abs", "Neg", "Floor", "Ceil", "Round", "Sqrt", "Reciprocal", "Exp", "Log", "Sin", "Cos",
                         "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Sign", "Erf",
                         "Not", "BitwiseNot", "Relu", "Sigmoid", "HardSwish", "Softplus", "Softsign", "Tanh",
                         "Mish"})
    unary(r, op);
  unary(r, "LeakyRelu", {{"alpha", K::f}});
  unary(r, "Elu", {{"alpha", K::f}});
  unary(r, "Selu", {{"alpha", K::f}, {"gamma", K::f}});
  unary(r, "Celu", {{"alpha", K::f}});
  unary(r, "HardSigmoid", {{"alpha", K::f}, {"beta", K::f}});
  unary(r, "ThresholdedRelu", {{"alpha", K::f}});
  unary(r, "Gelu", {{"approximate", K::s}});
  unary(r, "Swish", {{"alpha", K::f}});
  unary(r, "Shrink", {{"bias", K::f}, {"lambd", K::f}});
  r.add(make_schema("IsNaN", 1, 1, 1, 1, infer_to_bool));
  r.add(make_schema("IsInf", 1, 1, 1, 1, infer_to_bool, {{"detect_negative", K::i}, {"detect_positive", K::i}}));

  for (const char* op : {"Add", "Sub", "Mul", "Div", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    r.add(make_schema(op, 2, 2, 1, 1, infer_binary));
  r.add(make_schema("Mod", 2, 2, 1, 1, infer_binary, {{"fmod", K::i}}));
  r.add(make_schema("BitShift", 2, 2, 1, 1, infer_binary, {{"direction", K::s}}));
  r.add(make_schema("Pow", 2, 2, 1, 1, infer_pow));
  r.add(make_schema("PRelu", 2, 2, 1, 1, infer_binary));
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"})
    r.add(make_schema(op, 2, 2, 1, 1, infer_compare));
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) r.add(make_schema(op, 1, -1, 1, 1, infer_variadic));
  r.add(make_schema("Where", 3, 3, 1, 1, infer_where));
  r.add(make_schema("Clip", 1, 3, 1, 1, infer_same_as_input0, {{"min", K::f}, {"max", K::f}}));
}

}  // namespace tessera::ir
