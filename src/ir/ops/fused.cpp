// Schemas and shape inference: Tessera's own fused ops (domain "tessera"),
// created by the fusion passes in src/passes/.
//
//   FusedGemm(A[..., K], Bpacked, bias[N]?) -> act(A * B + bias)[..., N]
//     B is a constant packed into the GEMM micro-kernel's panel layout
//     (attributes K, N, kc, nr describe it; see kernels/x86/gemm.h).
//   FusedConv(X, W, B?, Residual?) -> act(conv(X, W) + B + Residual)
//     Conv's attributes, pads explicit, plus the activation.
//   FusedElementwise(X0, X1, ...) -> program(X0, X1, ...), inputs broadcast (numpy)
//     a chain of f32 elementwise ops; attributes program, num_registers
//     (encoding in core/ew_program.h).
//   FusedAttention(Q[..., Lq, D], K, V[..., Lk, Dv], Mask?, Cond?) -> softmax(S') V  [..., Lq, Dv]
//     S = scale Q K^T; S' = Where(Cond, S, fill) if keep_where else Where(Cond, fill, S); S' += Mask.
//     K is [..., Lk, D], or [..., D, Lk] with k_transposed = 1; Mask (f32) and
//     Cond (bool) broadcast to [..., Lq, Lk].
// activation: "" | "Relu" | "Clip" (clip_min, clip_max).
#include "core/ew_program.h"
#include "ir/op_registry.h"

namespace tessera::ir {

namespace {

void infer_fused_gemm(InferenceContext& ctx) {
  const auto& a = ctx.input_shape(0);
  if (!a || a->empty()) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  std::vector<Dim> out = *a;
  out.back() = Dim(ctx.attr_int("N", -1));
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_fused_conv(InferenceContext& ctx) {
  const auto& x = ctx.input_shape(0);
  const auto& w = ctx.input_shape(1);
  if (!x || !w || x->size() != 4 || w->size() != 4) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  const auto k = ctx.attr_ints("kernel_shape"), s = ctx.attr_ints("strides", {1, 1}),
             d = ctx.attr_ints("dilations", {1, 1}), p = ctx.attr_ints("pads", {0, 0, 0, 0});
  std::vector<Dim> out{(*x)[0], (*w)[0]};
  for (int i = 0; i < 2; ++i) {
    const Dim& in = (*x)[size_t(2 + i)];
    out.push_back(in.known() ? Dim((in.value + p[size_t(i)] + p[size_t(i + 2)] -
                                    d[size_t(i)] * (k[size_t(i)] - 1) - 1) /
                                       s[size_t(i)] +
                                   1)
                             : Dim());
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_fused_elementwise(InferenceContext& ctx) {
  const int64_t regs = ctx.attr_int("num_registers", -1);
  if (!ew_decode(ctx.attr_ints("program"), int64_t(ctx.num_inputs()), regs))
    ctx.fail("malformed elementwise program for ", ctx.num_inputs(), " inputs and ", regs, " registers");
  std::optional<std::vector<Dim>> shape = ctx.input_shape(0);
  for (size_t i = 1; i < ctx.num_inputs() && shape; ++i) shape = broadcast_shapes(shape, ctx.input_shape(i));
  ctx.set_output(0, ctx.input_dtype(0), shape);
}

void infer_fused_attention(InferenceContext& ctx) {
  const auto& q = ctx.input_shape(0);
  const auto& v = ctx.input_shape(2);
  if (!q || !v || q->empty() || v->empty()) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  std::vector<Dim> out = *q;
  out.back() = v->back();
  ctx.set_output(0, ctx.input_dtype(0), out);
}

}  // namespace

void register_fused_schemas(OpRegistry& r) {
  using K = Attribute::Kind;
  OpSchema g = make_schema("FusedGemm", 2, 3, 1, 1, infer_fused_gemm,
                           {{"K", K::i},
                            {"N", K::i},
                            {"kc", K::i},
                            {"nr", K::i},
                            {"a_rank", K::i},
                            {"activation", K::s},
                            {"clip_min", K::f},
                            {"clip_max", K::f}},
                           "tessera");
  g.family = "fused";
  r.add(g);
  OpSchema c = make_schema("FusedConv", 2, 4, 1, 1, infer_fused_conv,
                           {{"kernel_shape", K::ints},
                            {"strides", K::ints},
                            {"dilations", K::ints},
                            {"pads", K::ints},
                            {"group", K::i},
                            {"activation", K::s},
                            {"clip_min", K::f},
                            {"clip_max", K::f}},
                           "tessera");
  c.family = "fused";
  r.add(c);
  OpSchema e = make_schema("FusedElementwise", 1, 64, 1, 1, infer_fused_elementwise,
                           {{"program", K::ints}, {"num_registers", K::i}}, "tessera");
  e.family = "fused";
  r.add(e);
  OpSchema at =
      make_schema("FusedAttention", 3, 5, 1, 1, infer_fused_attention,
                  {{"scale", K::f}, {"k_transposed", K::i}, {"keep_where", K::i}, {"fill", K::f}}, "tessera");
  at.family = "fused";
  r.add(at);
}

}  // namespace tessera::ir
