// Schemas and shape inference: Tessera's own fused ops (domain "tessera"),
// created by the fusion passes in src/passes/.
//
//   FusedGemm(A[..., K], Bpacked, bias[N]?, Residual?) -> act(A * B + bias + Residual)
//     B is a constant packed into the GEMM micro-kernel's panel layout
//     (attributes K, N, kc, nr describe it; see kernels/x86/gemm.h) — with strassen = 1 the 7 pieces of
//     one level of Strassen-Winograd (StrassenB); with split = 1 the packing is followed by B split into
//     three bf16 pieces for AMX (kernels/x86/gemm_amx.h), used from 16 rows where the CPU has it; Residual
//     broadcasts against the product [..., N] as an Add would (the tuned kernel adds it in its epilogue when
//     the shapes are equal). activation may also be "Gelu" or "GeluTanh" (ONNX Gelu with approximate = none /
//     tanh).
//   FusedConv(X, W, B?, Residual?) -> act(conv(X, W) + B + Residual)
//     Conv's attributes, pads explicit, plus the activation. layout "NCHW" (default):
//     X, W, Y as ONNX Conv. layout "NHWC" (made by the layout_nhwc pass): X [N,H,W,C],
//     Y and Residual [N,OH,OW,OC], W packed (kernels/x86/conv_nhwc.h: panels for
//     group 1, [kh*kw][C] for depthwise), weight_shape = the ONNX [OC, C/group, kh, kw];
//     winograd = m (2 or 4): a 3x3 stride-1 conv whose W holds Winograd F(m x m, 3x3) weights.
//     A 3-D conv (kernel_shape of 3) is layout "NCHW" (as ONNX Conv, 5-D) or "NCDHW" (made by the
//     pack_conv3d pass): X, Y and Residual as ONNX Conv's, W the kd depth taps each packed as a 2-D
//     NHWC conv's (kernels/x86/conv3d.h), weight_shape = [OC, C/group, kd, kh, kw].
//   FusedPwDwConv(X[N,H,W,C], W1, B1?, W2, B2?) -> Y[N,OH,OW,E]: an NHWC pointwise conv (C -> E
//     channels, W1 packed as a dense 1x1 FusedConv's, then pw_activation) feeding a depthwise conv
//     (W2 packed [kh*kw][E], kernel_shape/strides/dilations/pads, then activation) — the expansion
//     and depthwise convs of an inverted-residual block, run a band of rows at a time so the
//     E-channel intermediate never leaves the cache (made by the fuse_pw_dw pass). channels = E.
//   FusedPwDwConv(X, W1, B1?, W2, B2?, W3, B3?, Residual?) -> Y[N,OH,OW,P]: the same pair, then a
//     pointwise projection of the depthwise output (E -> P = proj_channels; W3 packed as a dense
//     1x1 FusedConv's, then + Residual [N,OH,OW,P], then proj_activation): the whole block. Without W1
//     (and B1) there is no expansion: the depthwise conv reads X (C = E), a depthwise-separable conv.
//     pw_input_layout "NCHW": W1 is instead a stem FusedConv's (input_layout NCHW) over X[N,C,H,W], its
//     geometry in pw_kernel_shape / pw_strides / pw_dilations / pw_pads: a model's first conv and the
//     depthwise conv after it, whose large map then stays in cache too.
//   NhwcMaxPool(X[N,H,W,C]) -> Y[N,OH,OW,C]: MaxPool (ceil_mode 0) over NHWC.
//   NhwcAveragePool(X[N,H,W,C]) -> Y[N,OH,OW,C]: AveragePool (ceil_mode 0, count_include_pad) over NHWC.
//   NhwcGlobalAveragePool(X[N,H,W,C]) -> Y[N,C,1,1]: the mean over H and W (Y is the
//     same in either layout, so it leaves the NHWC region without a Transpose).
//   FusedElementwise(X0, X1, ...) -> program(X0, X1, ...), inputs broadcast (numpy)
//     a chain of f32 elementwise ops; attributes program, num_registers
//     (encoding in core/ew_program.h).
//   FusedAttention(Q[..., Lq, D], K, V[..., Lk, Dv], Mask?, Cond?) -> softmax(S') V  [..., Lq, Dv]
//     S = scale Q K^T; S' = Where(Cond, S, fill) if keep_where else Where(Cond, fill, S); S' += Mask.
//     K is [..., Lk, D], or [..., D, Lk] with k_transposed = 1; Mask (f32) and
//     Cond (bool) broadcast to [..., Lq, Lk]. q_perm / k_perm / v_perm: the input is
//     Transpose(input, perm) (heads split from [B, L, H, D] read in place); out_perm: the
//     result is Transpose(., out_perm) (written in place).
//   ChannelShuffle(X0, X1, ...) -> Y0, Y1, ...: ShuffleNet's channel shuffle as one copy (made by the
//     fuse_channel_shuffle pass). Z = Concat(X..., axis); its C channels as groups x C/groups,
//     transposed: channel j * groups + g of the shuffle is channel g * C / groups + j of Z; the result
//     split along axis into `splits` (one output of C channels without a Split).
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
  if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
    ctx.set_output(0, ctx.input_dtype(0), broadcast_shapes(out, ctx.input_shape(3)));
    return;
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

// The output extents of a conv over the spatial dims `in` (2 or 3), its geometry in the attributes (their
// names after prefix).
std::vector<Dim> spatial_out(InferenceContext& ctx, const std::vector<Dim>& in,
                             const std::string& prefix = "") {
  const size_t r = in.size();
  const std::vector<int64_t> ones(r, 1), zeros(2 * r, 0);
  const auto k = ctx.attr_ints(prefix + "kernel_shape"), s = ctx.attr_ints(prefix + "strides", ones),
             d = ctx.attr_ints(prefix + "dilations", ones), p = ctx.attr_ints(prefix + "pads", zeros);
  std::vector<Dim> out(r);
  if (k.size() != r || s.size() != r || d.size() != r || p.size() != 2 * r) return out;
  for (size_t i = 0; i < r; ++i)
    if (k[i] <= 0 || s[i] <= 0 || d[i] <= 0) return std::vector<Dim>(r);  // the kernels reject these
  for (size_t i = 0; i < r; ++i)
    if (in[i].known()) out[i] = Dim((in[i].value + p[i] + p[i + r] - d[i] * (k[i] - 1) - 1) / s[i] + 1);
  return out;
}

// Layout NCHW (the ONNX Conv's, 2-D or 3-D), NHWC (packed, 2-D) or NCDHW (packed depth taps, 3-D).
void infer_fused_conv(InferenceContext& ctx) {
  const auto& x = ctx.input_shape(0);
  const auto& w = ctx.input_shape(1);
  const std::string layout = ctx.attr_string("layout", "NCHW");
  const bool packed = layout != "NCHW";
  const size_t rank = layout == "NCDHW" || (!packed && x && x->size() == 5) ? 5 : 4;
  const auto ws = ctx.attr_ints("weight_shape");
  if (!x || !w || x->size() != rank || (!packed && w->size() != rank)) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  const Dim oc = !packed ? (*w)[0] : ws.size() == rank ? Dim(ws[0]) : Dim();
  if (layout == "NHWC") {
    const bool nchw_in = ctx.attr_string("input_layout", "NHWC") == "NCHW";  // the output is NHWC
    const auto sp = nchw_in ? spatial_out(ctx, {(*x)[2], (*x)[3]}) : spatial_out(ctx, {(*x)[1], (*x)[2]});
    ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{(*x)[0], sp[0], sp[1], oc});
    return;
  }
  std::vector<Dim> out{(*x)[0], oc};
  for (const Dim& d : spatial_out(ctx, std::vector<Dim>(x->begin() + 2, x->end()))) out.push_back(d);
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_fused_pw_dw_conv(InferenceContext& ctx) {
  const auto& x = ctx.input_shape(0);
  if (!x || x->size() != 4) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  // a stem producer (pw_input_layout NCHW): the depthwise conv reads its output map
  const bool stem = ctx.attr_string("pw_input_layout", "NHWC") == "NCHW";
  const auto mid = stem ? spatial_out(ctx, {(*x)[2], (*x)[3]}, "pw_") : std::vector<Dim>{(*x)[1], (*x)[2]};
  const auto sp = spatial_out(ctx, mid);
  const int64_t e = ctx.attr_int(ctx.has_input(5) ? "proj_channels" : "channels", -1);
  ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{(*x)[0], sp[0], sp[1], e > 0 ? Dim(e) : Dim()});
}

void infer_nhwc_pool(InferenceContext& ctx) {
  const auto& x = ctx.input_shape(0);
  if (!x || x->size() != 4) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  const auto sp = spatial_out(ctx, {(*x)[1], (*x)[2]});
  ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{(*x)[0], sp[0], sp[1], (*x)[3]});
}

void infer_nhwc_gap(InferenceContext& ctx) {
  const auto& x = ctx.input_shape(0);
  if (!x || x->size() != 4) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{(*x)[0], (*x)[3], Dim(1), Dim(1)});
}

void infer_channel_shuffle(InferenceContext& ctx) {
  const int64_t axis = ctx.attr_int("axis", -1), groups = ctx.attr_int("groups", 0);
  const std::vector<int64_t> splits = ctx.attr_ints("splits");
  if (splits.size() != ctx.num_outputs())
    ctx.fail("ChannelShuffle: ", splits.size(), " splits for ", ctx.num_outputs(), " outputs");
  const auto& x0 = ctx.input_shape(0);
  std::optional<std::vector<Dim>> shape = x0;
  int64_t c = 0;
  for (size_t i = 0; i < ctx.num_inputs() && shape; ++i) {
    const auto& x = ctx.input_shape(i);
    if (!x || ctx.input_dtype(i) != ctx.input_dtype(0)) ctx.fail("ChannelShuffle: input ", i, " differs");
    if (axis < 0 || axis >= int64_t(x->size()) || x->size() != shape->size())
      ctx.fail("ChannelShuffle: axis ", axis, " of rank ", x->size());
    for (size_t d = 0; d < x->size(); ++d)
      if (int64_t(d) != axis && !((*x)[d] == (*shape)[d]))
        ctx.fail("ChannelShuffle: input ", i, " differs off the axis");
    if ((*x)[size_t(axis)].known())
      c += (*x)[size_t(axis)].value;
    else
      shape.reset();
  }
  int64_t total = 0;
  for (int64_t s : splits) {
    if (s < 0) ctx.fail("ChannelShuffle: negative split ", s);
    total += s;
  }
  if (shape && (groups <= 0 || c % groups != 0 || total != c))
    ctx.fail("ChannelShuffle: ", c, " channels in ", groups, " groups, splits adding to ", total);
  for (size_t o = 0; o < splits.size(); ++o) {
    std::optional<std::vector<Dim>> out = shape;
    if (out) (*out)[size_t(axis)] = Dim(splits[o]);
    ctx.set_output(o, ctx.input_dtype(0), out);
  }
}

void infer_fused_elementwise(InferenceContext& ctx) {
  const int64_t regs = ctx.attr_int("num_registers", -1);
  if (!ew_decode(ctx.attr_ints("program"), int64_t(ctx.num_inputs()), regs))
    ctx.fail("malformed elementwise program for ", ctx.num_inputs(), " inputs and ", regs, " registers");
  std::optional<std::vector<Dim>> shape = ctx.input_shape(0);
  for (size_t i = 1; i < ctx.num_inputs() && shape; ++i) shape = broadcast_shapes(shape, ctx.input_shape(i));
  ctx.set_output(0, ctx.input_dtype(0), shape);
}

// shape seen through perm (empty: as it is); nullopt if perm does not fit.
std::optional<std::vector<Dim>> permute_dims(const std::optional<std::vector<Dim>>& s,
                                             const std::vector<int64_t>& perm) {
  if (!s || perm.empty()) return s;
  if (perm.size() != s->size()) return std::nullopt;
  std::vector<Dim> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(s->size())) return std::nullopt;
    out.push_back((*s)[size_t(p)]);
  }
  return out;
}

void infer_fused_attention(InferenceContext& ctx) {
  const auto q = permute_dims(ctx.input_shape(0), ctx.attr_ints("q_perm"));
  const auto v = permute_dims(ctx.input_shape(2), ctx.attr_ints("v_perm"));
  if (!q || !v || q->empty() || v->empty()) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  std::vector<Dim> out = *q;
  out.back() = v->back();
  ctx.set_output(0, ctx.input_dtype(0), permute_dims(out, ctx.attr_ints("out_perm")));
}

// tessera.QLinearConvPacked: QLinearConv's inputs with the weights packed; the output as QLinearConv's, or
// with layout NHWC (layout_nhwc) both channels-last (the input NCHW with input_layout NCHW).
void infer_qlinear_conv_packed(InferenceContext& ctx) {
  const DType out = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
  const auto& x = ctx.input_shape(0);
  const auto ws = ctx.attr_ints("weight_shape");
  if (!x || x->size() != 4 || ws.size() != 4) {
    ctx.set_output(0, out, std::nullopt);
    return;
  }
  if (ctx.attr_string("layout", "NCHW") == "NHWC") {  // layout_nhwc's: x [n, h, w, c] -> [n, oh, ow, oc]
    const bool nchw_in = ctx.attr_string("input_layout", "NHWC") == "NCHW";  // (or x [n, c, h, w])
    std::vector<Dim> o{(*x)[0]};
    for (const Dim& d : spatial_out(ctx, {(*x)[nchw_in ? 2 : 1], (*x)[nchw_in ? 3 : 2]})) o.push_back(d);
    o.push_back(Dim(ws[0]));
    ctx.set_output(0, out, o);
    return;
  }
  std::vector<Dim> o{(*x)[0], Dim(ws[0])};
  for (const Dim& d : spatial_out(ctx, {(*x)[2], (*x)[3]})) o.push_back(d);
  ctx.set_output(0, out, o);
}

// tessera.MatMulIntegerPacked / QLinearMatMulPacked: A [..., K] by the packed B [K, N].
void infer_qmatmul_packed(InferenceContext& ctx, bool qlinear) {
  const DType out = !qlinear ? DType::i32 : ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
  const auto& a = ctx.input_shape(0);
  if (!a || a->empty()) {
    ctx.set_output(0, out, std::nullopt);
    return;
  }
  std::vector<Dim> o = *a;
  o.back() = Dim(ctx.attr_int("N", -1));
  ctx.set_output(0, out, o);
}

// tessera.QLinearAdd (fuse_qdq): quantized a + b, broadcast, of c_zero_point's type (else a's).
void infer_qlinear_add(InferenceContext& ctx) {
  const DType out = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
  ctx.set_output(0, out, broadcast_shapes(ctx.input_shape(0), ctx.input_shape(3)));
}

// tessera.QLookup (fuse_qlookup): table[x] elementwise, x 8-bit, the table 256 values of the result's type.
void infer_qlookup(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
}

}  // namespace

void register_fused_schemas(OpRegistry& r) {
  using K = Attribute::Kind;
  OpSchema g = make_schema("FusedGemm", 2, 4, 1, 1, infer_fused_gemm,
                           {{"K", K::i},
                            {"N", K::i},
                            {"kc", K::i},
                            {"nr", K::i},
                            {"strassen", K::i},
                            {"coded", K::i},
                            {"split", K::i},
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
                            {"clip_max", K::f},
                            {"layout", K::s},
                            {"input_layout", K::s},
                            {"weight_shape", K::ints},
                            {"winograd", K::i}},
                           "tessera");
  c.family = "fused";
  r.add(c);
  OpSchema qc = make_schema("QLinearConvPacked", 8, 9, 1, 1, infer_qlinear_conv_packed,
                            {{"kernel_shape", K::ints},
                             {"strides", K::ints},
                             {"dilations", K::ints},
                             {"pads", K::ints},
                             {"group", K::i},
                             {"weight_shape", K::ints},
                             {"w_type", K::i},
                             {"layout", K::s},
                             {"input_layout", K::s}},
                            "tessera");
  qc.family = "fused";
  r.add(qc);
  OpSchema ql = make_schema("QLookup", 2, 2, 1, 1, infer_qlookup, {}, "tessera");
  ql.family = "fused";
  r.add(ql);
  OpSchema qa = make_schema("QLinearAdd", 7, 8, 1, 1, infer_qlinear_add, {}, "tessera");
  qa.family = "fused";
  r.add(qa);
  for (bool ql : {false, true}) {
    OpSchema qm =
        make_schema(ql ? "QLinearMatMulPacked" : "MatMulIntegerPacked", ql ? 8 : 2, ql ? 8 : 4, 1, 1,
                    ql ? InferFn([](InferenceContext& c) { infer_qmatmul_packed(c, true); })
                       : InferFn([](InferenceContext& c) { infer_qmatmul_packed(c, false); }),
                    {{"K", K::i}, {"N", K::i}, {"w_type", K::i}}, "tessera");
    qm.family = "fused";
    r.add(qm);
  }
  OpSchema pd =
      make_schema("FusedPwDwConv", 4, 8, 1, 1, infer_fused_pw_dw_conv,
                  {{"channels", K::i},        {"pw_activation", K::s},   {"pw_clip_min", K::f},
                   {"pw_clip_max", K::f},     {"pw_input_layout", K::s}, {"pw_kernel_shape", K::ints},
                   {"pw_strides", K::ints},   {"pw_dilations", K::ints}, {"pw_pads", K::ints},
                   {"kernel_shape", K::ints}, {"strides", K::ints},      {"dilations", K::ints},
                   {"pads", K::ints},         {"activation", K::s},      {"clip_min", K::f},
                   {"clip_max", K::f},        {"proj_channels", K::i},   {"proj_activation", K::s},
                   {"proj_clip_min", K::f},   {"proj_clip_max", K::f}},
                  "tessera");
  pd.family = "fused";
  r.add(pd);
  OpSchema mp = make_schema(
      "NhwcMaxPool", 1, 1, 1, 1, infer_nhwc_pool,
      {{"kernel_shape", K::ints}, {"strides", K::ints}, {"dilations", K::ints}, {"pads", K::ints}},
      "tessera");
  mp.family = "fused";
  r.add(mp);
  OpSchema ap = make_schema("NhwcAveragePool", 1, 1, 1, 1, infer_nhwc_pool,
                            {{"kernel_shape", K::ints},
                             {"strides", K::ints},
                             {"dilations", K::ints},
                             {"pads", K::ints},
                             {"count_include_pad", K::i}},
                            "tessera");
  ap.family = "fused";
  r.add(ap);
  OpSchema gap = make_schema("NhwcGlobalAveragePool", 1, 1, 1, 1, infer_nhwc_gap, {}, "tessera");
  gap.family = "fused";
  r.add(gap);
  OpSchema cs = make_schema("ChannelShuffle", 1, -1, 1, -1, infer_channel_shuffle,
                            {{"axis", K::i}, {"groups", K::i}, {"splits", K::ints}}, "tessera");
  cs.family = "fused";
  r.add(cs);
  OpSchema e = make_schema("FusedElementwise", 1, 64, 1, 1, infer_fused_elementwise,
                           {{"program", K::ints}, {"num_registers", K::i}}, "tessera");
  e.family = "fused";
  r.add(e);
  OpSchema at = make_schema("FusedAttention", 3, 5, 1, 1, infer_fused_attention,
                            {{"scale", K::f},
                             {"k_transposed", K::i},
                             {"keep_where", K::i},
                             {"fill", K::f},
                             {"q_perm", K::ints},
                             {"k_perm", K::ints},
                             {"v_perm", K::ints},
                             {"out_perm", K::ints}},
                            "tessera");
  at.family = "fused";
  r.add(at);
}

}  // namespace tessera::ir
