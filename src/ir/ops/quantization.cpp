// Schemas and shape inference: quantization family.
#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

// ONNX TensorProto type codes as found in the output_dtype attribute.
DType quant_dtype_from_code(int64_t code) {
  switch (code) {
    case 1: return DType::f32;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 4: return DType::u16;
    case 5: return DType::i16;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 16: return DType::bf16;
    case 17: return DType::f8e4m3fn;
    case 18: return DType::f8e4m3fnuz;
    case 19: return DType::f8e5m2;
    case 20: return DType::f8e5m2fnuz;
    case 21: return DType::u4;
    case 22: return DType::i4;
    case 23: return DType::f4e2m1;
    case 25: return DType::u2;
    case 26: return DType::i2;
    default: return DType::undefined;
  }
}

void infer_quantize(InferenceContext& ctx) {
  DType out = DType::u8;
  if (int64_t od = ctx.attr_int("output_dtype", 0); od != 0) {
    out = quant_dtype_from_code(od);
    if (out == DType::undefined) ctx.fail("unknown output_dtype ", od);
  }
  if (ctx.has_input(2) && ctx.input_dtype(2) != DType::undefined) out = ctx.input_dtype(2);
  ctx.set_output(0, out, ctx.input_shape(0));
}

void infer_dequantize(InferenceContext& ctx) {
  DType out = ctx.input_dtype(1);
  if (int64_t od = ctx.attr_int("output_dtype", 0); od != 0) out = quant_dtype_from_code(od);
  ctx.set_output(0, out, ctx.input_shape(0));
}

void infer_dynamic_quantize(InferenceContext& ctx) {
  ctx.set_output(0, DType::u8, ctx.input_shape(0));
  ctx.set_output(1, ctx.input_dtype(0), std::vector<Dim>{});
  ctx.set_output(2, DType::u8, std::vector<Dim>{});
}

// numpy matmul shape rule.
std::optional<std::vector<Dim>> matmul_shape(InferenceContext& ctx, size_t ia, size_t ib) {
  const auto& a = ctx.input_shape(ia);
  const auto& b = ctx.input_shape(ib);
  if (!a || !b || a->empty() || b->empty()) return std::nullopt;
  std::vector<Dim> as = *a, bs = *b;
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), Dim(1));
  if (b1) bs.push_back(Dim(1));
  const Dim& ka = as.back();
  const Dim& kb = bs[bs.size() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value)
    ctx.fail("matmul inner dimensions differ: ", ka.value, " vs ", kb.value);
  std::optional<std::vector<Dim>> ba = std::vector<Dim>(as.begin(), as.end() - 2);
  std::optional<std::vector<Dim>> bb = std::vector<Dim>(bs.begin(), bs.end() - 2);
  auto out = broadcast_shapes(ba, bb);
  if (!a1) out->push_back(as[as.size() - 2]);
  if (!b1) out->push_back(bs.back());
  return out;
}

void infer_matmul_integer(InferenceContext& ctx) { ctx.set_output(0, DType::i32, matmul_shape(ctx, 0, 1)); }

void infer_qlinear_matmul(InferenceContext& ctx) {
  DType out = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
  ctx.set_output(0, out, matmul_shape(ctx, 0, 3));
}

std::optional<std::vector<Dim>> conv_shape(InferenceContext& ctx, size_t ix, size_t iw) {
  const auto& x = ctx.input_shape(ix);
  const auto& w = ctx.input_shape(iw);
  if (!x || !w) return std::nullopt;
  if (x->size() < 3 || w->size() != x->size()) ctx.fail("conv input/weight ranks are invalid");
  const size_t k = x->size() - 2;
  std::vector<Dim> out{(*x)[0], (*w)[0]};
  auto strides = ctx.attr_ints("strides", std::vector<int64_t>(k, 1));
  auto dil = ctx.attr_ints("dilations", std::vector<int64_t>(k, 1));
  auto pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  auto ks = ctx.attr_ints("kernel_shape");
  const std::string ap = ctx.attr_string("auto_pad", "NOTSET");
  if (strides.size() != k || dil.size() != k || pads.size() != 2 * k) ctx.fail("strides/dilations/pads have wrong length");
  for (size_t i = 0; i < k; ++i) {
    const Dim& in = (*x)[i + 2];
    int64_t kd = ks.size() == k ? ks[i] : ((*w)[i + 2].known() ? (*w)[i + 2].value : -1);
    if (!in.known() || kd < 0 || strides[i] < 1 || dil[i] < 1) {
      out.push_back(Dim());
      continue;
    }
    const int64_t ek = (kd - 1) * dil[i] + 1;
    int64_t o;
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") o = (in.value + strides[i] - 1) / strides[i];
    else if (ap == "VALID") o = (in.value - ek) / strides[i] + 1;
    else o = (in.value + pads[i] + pads[i + k] - ek) / strides[i] + 1;
    out.push_back(Dim(std::max<int64_t>(o, 0)));
  }
  return out;
}

void infer_conv_integer(InferenceContext& ctx) { ctx.set_output(0, DType::i32, conv_shape(ctx, 0, 1)); }
void infer_qlinear_conv(InferenceContext& ctx) {
  DType out = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
  ctx.set_output(0, out, conv_shape(ctx, 0, 3));
}

}  // namespace

void register_quantization_schemas(OpRegistry& r) {
  const std::vector<AttrSpec> conv_attrs{{"auto_pad", K::s}, {"dilations", K::ints}, {"group", K::i},
                                         {"kernel_shape", K::ints}, {"pads", K::ints}, {"strides", K::ints}};
  r.add(make_schema("QuantizeLinear", 2, 3, 1, 1, infer_quantize,
                    {{"axis", K::i}, {"saturate", K::i}, {"block_size", K::i}, {"output_dtype", K::i}, {"precision", K::i}}));
  r.add(make_schema("DequantizeLinear", 2, 3, 1, 1, infer_dequantize,
                    {{"axis", K::i}, {"block_size", K::i}, {"output_dtype", K::i}}));
  r.add(make_schema("DynamicQuantizeLinear", 1, 1, 3, 3, infer_dynamic_quantize));
  r.add(make_schema("MatMulInteger", 2, 4, 1, 1, infer_matmul_integer));
  r.add(make_schema("QLinearMatMul", 8, 8, 1, 1, infer_qlinear_matmul));
  r.add(make_schema("ConvInteger", 2, 4, 1, 1, infer_conv_integer, conv_attrs));
  r.add(make_schema("QLinearConv", 8, 9, 1, 1, infer_qlinear_conv, conv_attrs));
}

}  // namespace tessera::ir
