// Schemas and shape inference: signal family (DFT, STFT, windows, MelWeightMatrix).
#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

DType datatype_attr(InferenceContext& ctx) {
  switch (ctx.attr_int("output_datatype", 1)) {
    case 1: return DType::f32;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 16: return DType::bf16;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 6: return DType::i32;
    case 7: return DType::i64;
    default: return DType::undefined;
  }
}

int64_t const_int(InferenceContext& ctx, size_t i, int64_t def) {
  const Tensor* t = ctx.input_constant(i);
  return (t && t->numel() == 1) ? t->at_int(0) : def;
}

void infer_dft(InferenceContext& ctx) {
  const auto& xs = ctx.input_shape(0);
  if (!xs) return ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
  const int64_t r = int64_t(xs->size());
  int64_t axis = ctx.node().opset > 0 && ctx.node().opset < 20 ? ctx.attr_int("axis", 1) : -2;
  if (ctx.has_input(2)) {
    const Tensor* t = ctx.input_constant(2);
    if (!t) return ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>(xs->size()));
    if (t->numel() == 1) axis = t->at_int(0);
  }
  if (axis < -r || axis >= r - 1) ctx.fail("DFT axis ", axis, " out of range for rank ", r);
  if (axis < 0) axis += r;
  const bool inverse = ctx.attr_int("inverse", 0) != 0, onesided = ctx.attr_int("onesided", 0) != 0;
  std::vector<Dim> out = *xs;
  const Dim in = (*xs)[size_t(axis)];
  int64_t n = -1;
  if (ctx.has_input(1)) n = const_int(ctx, 1, -1);
  else if (in.known()) n = (inverse && onesided) ? 2 * (in.value - 1) : in.value;
  out[size_t(axis)] = n < 0 ? Dim() : Dim(inverse ? n : (onesided ? n / 2 + 1 : n));
  out.back() = Dim((inverse && onesided) ? 1 : 2);
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_window(InferenceContext& ctx) {
  ctx.set_output(0, datatype_attr(ctx), std::vector<Dim>{Dim(const_int(ctx, 0, -1))});
}

void infer_stft(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{Dim(), Dim(), Dim(), Dim(2)});
  const auto& xs = ctx.input_shape(0);
  if (xs && xs->size() == 3) ctx.output(0).shape->at(0) = (*xs)[0];
}

void infer_mel(InferenceContext& ctx) {
  const int64_t bins = const_int(ctx, 0, -1), dft = const_int(ctx, 1, -1);
  ctx.set_output(0, datatype_attr(ctx), std::vector<Dim>{dft < 0 ? Dim() : Dim(dft / 2 + 1), Dim(bins)});
}

}  // namespace

void register_signal_schemas(OpRegistry& r) {
  r.add(make_schema("DFT", 1, 3, 1, 1, infer_dft, {{"axis", K::i}, {"inverse", K::i}, {"onesided", K::i}}));
  r.add(make_schema("STFT", 2, 4, 1, 1, infer_stft, {{"onesided", K::i}}));
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.add(make_schema(w, 1, 1, 1, 1, infer_window, {{"output_datatype", K::i}, {"periodic", K::i}}));
  r.add(make_schema("MelWeightMatrix", 5, 5, 1, 1, infer_mel, {{"output_datatype", K::i}}));
}

}  // namespace tessera::ir
