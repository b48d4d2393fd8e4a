// Schemas and shape inference: conv family (Conv, ConvTranspose, Col2Im, DeformConv).
#include "ir/ops/nn_infer.h"

namespace tessera::ir {

namespace {
using nn::A;

// Kernel spatial dims: the kernel_shape attribute, else W's dims from 2 on.
std::optional<std::vector<int64_t>> kernel_dims(const InferenceContext& ctx, size_t w_input, size_t nsp) {
  if (ctx.has_attr("kernel_shape")) {
    std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
    if (k.size() != nsp) ctx.fail("kernel_shape has ", k.size(), " dims, the input has ", nsp, " spatial dims");
    return k;
  }
  auto w = nn::shape_of(ctx, w_input);
  if (!w) return std::nullopt;
  if (w->size() != nsp + 2) ctx.fail("W has rank ", w->size(), ", expected ", nsp + 2);
  std::vector<int64_t> k;
  for (size_t i = 2; i < w->size(); ++i) {
    if (!(*w)[i].known()) return std::nullopt;
    k.push_back((*w)[i].value);
  }
  return k;
}

void infer_conv(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto x = nn::shape_of(ctx, 0);
  auto w = nn::shape_of(ctx, 1);
  if (!x) return ctx.set_output(0, t, std::nullopt);
  if (x->size() < 3) ctx.fail("X must have rank >= 3, got ", x->size());
  const size_t nsp = x->size() - 2;
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) ctx.fail("group must be positive, got ", group);
  if (w) {
    if (w->size() != x->size()) ctx.fail("W has rank ", w->size(), ", X has rank ", x->size());
    if ((*x)[1].known() && (*w)[1].known() && (*x)[1].value != (*w)[1].value * group)
      ctx.fail("X has ", (*x)[1].value, " channels but W expects ", (*w)[1].value, " x group ", group);
    if ((*w)[0].known() && (*w)[0].value % group != 0)
      ctx.fail("output channels ", (*w)[0].value, " are not divisible by group ", group);
  }
  std::vector<Dim> out{(*x)[0], w ? (*w)[0] : Dim()};
  auto k = kernel_dims(ctx, 1, nsp);
  if (k) {
    auto sp = nn::spatial_out(ctx, *x, *k, false);
    out.insert(out.end(), sp.begin(), sp.end());
  } else {
    out.resize(nsp + 2);
  }
  ctx.set_output(0, t, out);
}

void infer_conv_transpose(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto x = nn::shape_of(ctx, 0);
  auto w = nn::shape_of(ctx, 1);
  if (!x) return ctx.set_output(0, t, std::nullopt);
  if (x->size() < 3) ctx.fail("X must have rank >= 3, got ", x->size());
  const size_t nsp = x->size() - 2;
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) ctx.fail("group must be positive, got ", group);
  if (w && (*x)[1].known() && (*w)[0].known() && (*x)[1].value != (*w)[0].value)
    ctx.fail("X has ", (*x)[1].value, " channels but W has ", (*w)[0].value);
  std::vector<Dim> out{(*x)[0], (w && (*w)[1].known()) ? Dim((*w)[1].value * group) : Dim()};
  if (ctx.has_attr("output_shape")) {
    std::vector<int64_t> os = ctx.attr_ints("output_shape");
    if (os.size() == nsp + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != nsp) ctx.fail("output_shape has ", os.size(), " dims for ", nsp, " spatial dims");
    for (int64_t d : os) out.push_back(Dim(d));
    return ctx.set_output(0, t, out);
  }
  auto k = kernel_dims(ctx, 1, nsp);
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  const std::vector<int64_t> opad = ctx.attr_ints("output_padding", std::vector<int64_t>(nsp, 0));
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp || opad.size() != nsp)
    ctx.fail("strides/dilations/pads/output_padding do not match the ", nsp, " spatial dims");
  for (size_t i = 0; i < nsp; ++i) {
    const Dim& in = (*x)[2 + i];
    if (!in.known() || !k) {
      out.push_back(Dim());
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(Dim(in.value * strides[i]));
    } else {
      const int64_t pt = auto_pad == "VALID" ? 0 : pads[i] + pads[nsp + i];
      out.push_back(Dim(strides[i] * (in.value - 1) + opad[i] + ((*k)[i] - 1) * dil[i] + 1 - pt));
    }
  }
  ctx.set_output(0, t, out);
}

void infer_col2im(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto x = nn::shape_of(ctx, 0);
  const Tensor* img = ctx.input_constant(1);
  const Tensor* blk = ctx.input_constant(2);
  if (!x || !img || !blk) return ctx.set_output(0, t, std::nullopt);
  if (x->size() != 3) ctx.fail("input must be [N, C*prod(block_shape), L], got rank ", x->size());
  const std::vector<int64_t> is = img->to_int_vector(), bs = blk->to_int_vector();
  if (is.size() != bs.size()) ctx.fail("image_shape and block_shape lengths differ");
  int64_t bprod = 1;
  for (int64_t b : bs) bprod *= b;
  std::vector<Dim> out{(*x)[0], (*x)[1].known() && bprod > 0 ? Dim((*x)[1].value / bprod) : Dim()};
  for (int64_t d : is) out.push_back(Dim(d));
  ctx.set_output(0, t, out);
}

void infer_deform_conv(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto x = nn::shape_of(ctx, 0);
  auto w = nn::shape_of(ctx, 1);
  auto off = nn::shape_of(ctx, 2);
  if (!x || !off) return ctx.set_output(0, t, std::nullopt);
  std::vector<Dim> out{(*x)[0], w ? (*w)[0] : Dim()};
  out.insert(out.end(), off->begin() + 2, off->end());
  ctx.set_output(0, t, out);
}

// CausalConvWithState: output like input; present_state [B, C, k-1].
void infer_causal_conv_with_state(InferenceContext& ctx) {
  ctx.propagate(0, 0);
  auto x = nn::shape_of(ctx, 0);
  auto w = nn::shape_of(ctx, 1);
  if (x && x->size() != 3) ctx.fail("input must be [B, C, L], got rank ", x->size());
  if (w && w->size() != 3) ctx.fail("weight must be [C, 1, k], got rank ", w->size());
  std::optional<std::vector<Dim>> st;
  if (x && w) st = std::vector<Dim>{(*x)[0], (*x)[1], (*w)[2].known() ? Dim((*w)[2].value - 1) : Dim()};
  if (ctx.num_outputs() > 1) ctx.set_output(1, ctx.has_input(3) ? ctx.input_dtype(3) : ctx.input_dtype(0), st);
}

void add(OpRegistry& r, OpSchema s) {
  s.family = "conv";
  r.add(std::move(s));
}
}  // namespace

void register_conv_schemas(OpRegistry& r) {
  add(r, make_schema("Conv", 2, 3, 1, 1, infer_conv,
                     {{"auto_pad", A::s},
                      {"dilations", A::ints},
                      {"group", A::i},
                      {"kernel_shape", A::ints},
                      {"pads", A::ints},
                      {"strides", A::ints}}));
  add(r, make_schema("ConvTranspose", 2, 3, 1, 1, infer_conv_transpose,
                     {{"auto_pad", A::s},
                      {"dilations", A::ints},
                      {"group", A::i},
                      {"kernel_shape", A::ints},
                      {"output_padding", A::ints},
                      {"output_shape", A::ints},
                      {"pads", A::ints},
                      {"strides", A::ints}}));
  add(r, make_schema("Col2Im", 3, 3, 1, 1, infer_col2im,
                     {{"dilations", A::ints}, {"pads", A::ints}, {"strides", A::ints}}));
  add(r, make_schema("DeformConv", 3, 5, 1, 1, infer_deform_conv,
                     {{"dilations", A::ints},
                      {"group", A::i},
                      {"kernel_shape", A::ints},
                      {"offset_group", A::i},
                      {"pads", A::ints},
                      {"strides", A::ints}}));
  add(r, make_schema("CausalConvWithState", 2, 4, 1, 2, infer_causal_conv_with_state, {{"activation", A::s}}));
}

}  // namespace tessera::ir
