// The 8-bit integer GEMM ops on the int8 kernels (kernels/x86/qgemm.h): MatMulInteger and QLinearMatMul
// over a 2-D B, ConvInteger and QLinearConv in 1-D and 2-D. They ran on the reference kernels at 100-150x
// onnxruntime's time: a QOperator-format int8 model is made of them. What the kernels do not cover (batched
// B, per-row A zero points, scales that are not one f32, explicit auto_pad, 3-D convs) goes to the
// reference, which also reports bad input.
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/dtype_attr.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/qgemm.h"
#include "kernels/x86/quantize.h"

namespace tessera::backends::cpu {

namespace {

using kernels::x86::QOut;
using kernels::x86::QOutput;

bool is_q8(DType t) {
  return t == DType::u8 || t == DType::i8;
}

// A zero point of type t (absent: 0) with one value, or `per` values when per > 0; false when it is neither.
bool zero_points(const Tensor* z, DType t, int64_t per, std::vector<int32_t>& out) {
  if (!z) {
    out.assign(1, 0);
    return true;
  }
  if (z->dtype() != t || z->rank() > 1 || !(z->numel() == 1 || (per > 0 && z->numel() == per))) return false;
  const Tensor c = z->contiguous();
  out.resize(size_t(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i)
    out[size_t(i)] = t == DType::u8 ? int32_t(c.data<uint8_t>()[i]) : int32_t(c.data<int8_t>()[i]);
  return true;
}

// One f32 value of input i, or nullopt.
std::optional<float> f32_scalar(const KernelContext& ctx, size_t i) {
  const Tensor* t = ctx.input(i);
  if (!t || t->dtype() != DType::f32 || t->numel() != 1) return std::nullopt;
  return t->contiguous().data<float>()[0];
}

// A u8 / s8 zero point's value (one element), 0 when absent.
int32_t zero_value(const Tensor* z) {
  if (!z) return 0;
  const Tensor c = z->contiguous();
  return c.dtype() == DType::u8 ? int32_t(c.data<uint8_t>()[0]) : int32_t(c.data<int8_t>()[0]);
}

// QLinearMatMul's output stage from a_scale, b_scale, y_scale and y_zero_point (inputs 1, 4, 6, 7): out's
// type, scale (*f, formed in f32 as the reference forms it) and zero point, and the output type yt; false
// where the kernels do not take them (the reference then runs and reports).
bool qmatmul_output(const KernelContext& ctx, DType a_type, float* f, QOutput& out, DType& yt) {
  const auto as = f32_scalar(ctx, 1), bs = f32_scalar(ctx, 4), ys = f32_scalar(ctx, 6);
  const Tensor* yz = ctx.input(7);
  yt = yz ? yz->dtype() : a_type;
  if (!as || !bs || !ys || !is_q8(yt) || (yz && yz->numel() != 1)) return false;
  *f = float(*as * *bs) / *ys;
  out.type = yt == DType::u8 ? QOut::u8 : QOut::s8;
  out.scale = f;
  out.y_zero = zero_value(yz);
  return true;
}

// MatMulInteger (qlinear false) / QLinearMatMul (true): A [..., M, K] or [K] by B [K, N].
void qmatmul_x86(KernelContext& ctx, bool qlinear) {
  const auto ref = [&] { run_reference(ctx, ""); };
  const Tensor* a0 = ctx.input(0);
  const Tensor* b0 = ctx.input(qlinear ? 3 : 1);
  if (!a0 || !b0 || !is_q8(a0->dtype()) || !is_q8(b0->dtype()) || a0->rank() < 1 || b0->rank() != 2 ||
      a0->dim(-1) != b0->dim(0))
    return ref();
  const int64_t k = b0->dim(0), n = b0->dim(1), m = k ? a0->numel() / k : 0;
  std::vector<int32_t> za, zb;
  if (!zero_points(ctx.input(2), a0->dtype(), 0, za) ||
      !zero_points(ctx.input(qlinear ? 5 : 3), b0->dtype(), n, zb))
    return ref();
  QOutput out;
  float f = 0;
  DType yt = DType::i32;
  if (qlinear && !qmatmul_output(ctx, a0->dtype(), &f, out, yt)) return ref();
  Shape ys = a0->shape();
  ys.back() = n;
  const Tensor a = a0->contiguous(), b = b0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, yt, ys);
  out.data = y.raw_data();
  out.ldc = n;
  kernels::x86::qmatmul_int8(m, n, k, a.raw_data(), a.dtype() == DType::i8, k, za[0], b.raw_data(),
                             b.dtype() == DType::i8, n, zb.data(), zb.size() > 1, out, ctx.pool());
}

// ConvInteger (qlinear false) / QLinearConv (true) over [N, C, W] or [N, C, H, W]; with channels_last_out
// (a QLinearConvPacked with input_layout NCHW: an int8 region's stem) the result is [N, H, W, C].
void qconv_x86(KernelContext& ctx, bool qlinear, bool channels_last_out = false) {
  const auto ref = [&] { run_reference(ctx, ""); };
  const Tensor* x0 = ctx.input(0);
  const Tensor* w0 = ctx.input(qlinear ? 3 : 1);
  if (!x0 || !w0 || !is_q8(x0->dtype()) || !is_q8(w0->dtype()) || x0->rank() != w0->rank() ||
      (x0->rank() != 3 && x0->rank() != 4) || ctx.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return ref();
  const bool one_d = x0->rank() == 3;
  if (channels_last_out && (one_d || !qlinear)) return ref();
  const int64_t sp = one_d ? 1 : 2;
  const auto ks = ctx.attr_ints("kernel_shape", {}),
             st = ctx.attr_ints("strides", std::vector<int64_t>(sp, 1)),
             dl = ctx.attr_ints("dilations", std::vector<int64_t>(sp, 1)),
             pd = ctx.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if ((!ks.empty() && int64_t(ks.size()) != sp) || int64_t(st.size()) != sp || int64_t(dl.size()) != sp ||
      int64_t(pd.size()) != 2 * sp)
    return ref();
  kernels::x86::Conv2dParams p;
  p.n = x0->dim(0), p.c = x0->dim(1), p.h = one_d ? 1 : x0->dim(2), p.w = x0->dim(-1);
  p.oc = w0->dim(0), p.kh = one_d ? 1 : w0->dim(2), p.kw = w0->dim(-1);
  p.sh = one_d ? 1 : st[0], p.sw = st.back(), p.dh = one_d ? 1 : dl[0], p.dw = dl.back();
  p.pad_t = one_d ? 0 : pd[0], p.pad_l = pd[one_d ? 0 : 1], p.pad_b = one_d ? 0 : pd[2], p.pad_r = pd.back();
  p.groups = ctx.attr_int("group", 1);
  const bool ks_ok = ks.empty() || (ks.back() == p.kw && (one_d || ks[0] == p.kh));
  if (!ks_ok || p.groups <= 0 || p.c % p.groups != 0 || p.oc % p.groups != 0 ||
      w0->dim(1) != p.c / p.groups || p.sh <= 0 || p.sw <= 0 || p.dh <= 0 || p.dw <= 0 || p.pad_t < 0 ||
      p.pad_l < 0 || p.pad_b < 0 || p.pad_r < 0 || p.oh() <= 0 || p.ow() <= 0)
    return ref();
  std::vector<int32_t> zx, zw;
  if (!zero_points(ctx.input(2), x0->dtype(), 0, zx) ||
      !zero_points(ctx.input(qlinear ? 5 : 3), w0->dtype(), p.oc, zw))
    return ref();
  QOutput out;
  std::vector<float> f;
  std::vector<int32_t> bias;
  DType yt = DType::i32;
  if (qlinear) {
    const auto xs = f32_scalar(ctx, 1), ys = f32_scalar(ctx, 6);
    const Tensor* ws0 = ctx.input(4);
    const Tensor* yz = ctx.input(7);
    const Tensor* b = ctx.input(8);
    yt = yz ? yz->dtype() : x0->dtype();
    if (!xs || !ys || !ws0 || ws0->dtype() != DType::f32 || ws0->rank() > 1 ||
        (ws0->numel() != 1 && ws0->numel() != p.oc) || !is_q8(yt) || (yz && yz->numel() != 1) ||
        (b && (b->dtype() != DType::i32 || b->numel() != p.oc)))
      return ref();
    const Tensor ws = ws0->contiguous();
    f.resize(size_t(ws.numel()));
    for (size_t i = 0; i < f.size(); ++i) f[i] = *xs * ws.data<float>()[i] / *ys;  // f32, as the reference
    out.type = yt == DType::u8 ? QOut::u8 : QOut::s8;
    out.scale = f.data();
    out.scale_per_row = f.size() > 1;
    out.y_zero = zero_value(yz);
    if (b) {
      const Tensor bc = b->contiguous();
      bias.assign(bc.data<int32_t>(), bc.data<int32_t>() + p.oc);
      out.bias = bias.data();
    }
  }
  const Shape ys = one_d               ? Shape{p.n, p.oc, p.ow()}
                   : channels_last_out ? Shape{p.n, p.oh(), p.ow(), p.oc}
                                       : Shape{p.n, p.oc, p.oh(), p.ow()};
  const Tensor x = x0->contiguous(), w = w0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, yt, ys);
  out.data = y.raw_data();
  out.transposed = channels_last_out;
  kernels::x86::qconv2d_int8(p, x.raw_data(), x.dtype() == DType::i8, zx[0], w.raw_data(),
                             w.dtype() == DType::i8, zw.data(), zw.size() > 1, out, ctx.pool());
}

// tessera.QLinearConvPacked (passes pack_qconv, layout_nhwc): the transposed int8 GEMM over the packed
// weights (kernels/x86/qgemm.h), NCHW or NHWC; or, NHWC with group = oc over one channel a group, the
// depthwise kernel over its f32 weights; or, NHWC with input_layout NCHW, the im2col kernel over the weights
// as they are, its stores transposed. What does not fit goes to the reference, which unpacks.
void qconv_packed_x86(KernelContext& ctx) {
  const auto ref = [&] { run_reference(ctx, "tessera"); };
  const Tensor* x0 = ctx.input(0);
  const Tensor* pk = ctx.input(3);
  const auto ws = ctx.attr_ints("weight_shape"), st = ctx.attr_ints("strides", {1, 1}),
             dl = ctx.attr_ints("dilations", {1, 1}), pd = ctx.attr_ints("pads", {0, 0, 0, 0});
  const DType wt = dtype_from_type_code(ctx.attr_int("w_type", 0));
  const bool nhwc = ctx.attr_string("layout", "NCHW") == "NHWC";
  const int64_t group = ctx.attr_int("group", 1);
  // an NCHW input into an NHWC result over the weights as they are: the im2col kernel
  if (nhwc && ctx.attr_string("input_layout", "NHWC") == "NCHW") return qconv_x86(ctx, true, true);
  if (!x0 || !pk || !is_q8(x0->dtype()) || x0->rank() != 4 || ws.size() != 4 || st.size() != 2 ||
      dl.size() != 2 || pd.size() != 4 || !is_q8(wt) || pk->rank() != 1 ||
      (reinterpret_cast<uintptr_t>(pk->raw_data()) % 64) != 0)
    return ref();
  const bool depthwise = nhwc && group == ws[0] && ws[1] == 1 && ws[0] > 1;
  // grouped (NHWC): each group's channels a multiple of 4, read in place
  const bool grouped = !depthwise && nhwc && group > 1 && ws[0] % group == 0 && ws[1] % 4 == 0;
  if (depthwise
          ? pk->dtype() != DType::f32 ||
                pk->numel() != kernels::x86::QDepthwiseW::floats(ws[0], ws[2], ws[3]) || ws[2] * ws[3] > 258
          : (group != 1 && !grouped) || pk->dtype() != DType::u8 ||
                size_t(pk->numel()) !=
                    kernels::x86::QConvPackedW::grouped_bytes(ws[0], ws[1], ws[2], ws[3], group))
    return ref();
  kernels::x86::Conv2dParams p;
  p.n = x0->dim(0), p.c = x0->dim(nhwc ? 3 : 1), p.h = x0->dim(nhwc ? 1 : 2), p.w = x0->dim(nhwc ? 2 : 3);
  p.oc = ws[0], p.kh = ws[2], p.kw = ws[3], p.sh = st[0], p.sw = st[1], p.dh = dl[0], p.dw = dl[1];
  p.pad_t = pd[0], p.pad_l = pd[1], p.pad_b = pd[2], p.pad_r = pd[3], p.groups = depthwise ? p.oc : group;
  if (p.c != (depthwise ? p.oc : ws[1] * group) || p.sh <= 0 || p.sw <= 0 || p.dh <= 0 || p.dw <= 0 ||
      p.pad_t < 0 || p.pad_l < 0 || p.pad_b < 0 || p.pad_r < 0 || p.oh() <= 0 || p.ow() <= 0)
    return ref();
  std::vector<int32_t> zx, zw;
  const auto xs = f32_scalar(ctx, 1), ys = f32_scalar(ctx, 6);
  const Tensor* ws0 = ctx.input(4);
  const Tensor* yz = ctx.input(7);
  const Tensor* b = ctx.input(8);
  const DType yt = yz ? yz->dtype() : x0->dtype();
  if (!zero_points(ctx.input(2), x0->dtype(), 0, zx) || !zero_points(ctx.input(5), wt, p.oc, zw) || !xs ||
      !ys || !ws0 || ws0->dtype() != DType::f32 || ws0->rank() > 1 ||
      (ws0->numel() != 1 && ws0->numel() != p.oc) || !is_q8(yt) || (yz && yz->numel() != 1) ||
      (b && (b->dtype() != DType::i32 || b->numel() != p.oc)))
    return ref();
  // the packing flipped u8 weights: their zero points must be 128 (s8: 0), as pack_qconv checked (the
  // depthwise packing took them off)
  if (!depthwise)
    for (int32_t z : zw)
      if (z != (wt == DType::u8 ? 128 : 0)) return ref();
  const int64_t padded = (p.oc + 63) / 64 * 64;
  const Tensor wsc = ws0->contiguous();
  std::vector<float> f(size_t(padded), 0.f);
  for (int64_t o = 0; o < p.oc; ++o)
    f[size_t(o)] = *xs * wsc.data<float>()[wsc.numel() == 1 ? 0 : o] / *ys;  // f32, as the reference
  std::vector<int32_t> bias(b ? size_t(padded) : 0, 0);
  if (b) {
    const Tensor bc = b->contiguous();
    std::copy(bc.data<int32_t>(), bc.data<int32_t>() + p.oc, bias.begin());
  }
  QOutput out;
  out.type = yt == DType::u8 ? QOut::u8 : QOut::s8;
  out.scale = f.data();
  out.scale_per_row = true;  // per output channel
  out.bias = b ? bias.data() : nullptr;
  out.y_zero = zero_value(yz);
  const Tensor x = x0->contiguous();
  Tensor& y = ctx.output_for_overwrite(
      0, yt, nhwc ? Shape{p.n, p.oh(), p.ow(), p.oc} : Shape{p.n, p.oc, p.oh(), p.ow()});
  out.data = y.raw_data();
  const bool xs8 = x.dtype() == DType::i8;
  if (depthwise)
    kernels::x86::qdepthwise_nhwc_int8(p, x.raw_data(), xs8, zx[0], pk->data<float>(), out, ctx.pool());
  else if (nhwc)
    kernels::x86::qconv2d_int8_packed_nhwc(p, x.raw_data(), xs8, zx[0], pk->data<uint8_t>(), out, ctx.pool());
  else
    kernels::x86::qconv2d_int8_packed(p, x.raw_data(), xs8, zx[0], pk->data<uint8_t>(), out, ctx.pool());
}

// tessera.MatMulIntegerPacked / QLinearMatMulPacked (pass pack_qmatmul): A by the prepacked B.
void qmatmul_packed_x86(KernelContext& ctx, bool qlinear) {
  const auto ref = [&] { run_reference(ctx, "tessera"); };
  const Tensor* a0 = ctx.input(0);
  const Tensor* pk = ctx.input(qlinear ? 3 : 1);
  const int64_t k = ctx.attr_int("K", 0), n = ctx.attr_int("N", 0);
  const DType wt = dtype_from_type_code(ctx.attr_int("w_type", 0));
  if (!a0 || !pk || !is_q8(a0->dtype()) || a0->rank() < 1 || k <= 0 || n <= 0 || a0->dim(-1) != k ||
      !is_q8(wt) || pk->dtype() != DType::u8 || pk->rank() != 1 ||
      size_t(pk->numel()) != kernels::x86::QConvPackedW::bytes(n, k, 1, 1) ||
      (reinterpret_cast<uintptr_t>(pk->raw_data()) % 64) != 0)
    return ref();
  std::vector<int32_t> za, zb;
  if (!zero_points(ctx.input(2), a0->dtype(), 0, za) || !zero_points(ctx.input(qlinear ? 5 : 3), wt, n, zb))
    return ref();
  for (int32_t z : zb)
    if (z != (wt == DType::u8 ? 128 : 0)) return ref();  // as pack_qmatmul checked
  QOutput out;
  float f = 0;
  DType yt = DType::i32;
  if (qlinear && !qmatmul_output(ctx, a0->dtype(), &f, out, yt)) return ref();
  Shape ys = a0->shape();
  ys.back() = n;
  const Tensor a = a0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, yt, ys);
  out.data = y.raw_data();
  out.ldc = n;
  kernels::x86::qmatmul_int8_packed(a.numel() / k, n, k, a.raw_data(), a.dtype() == DType::i8, k, za[0],
                                    pk->data<uint8_t>(), out, ctx.pool());
}

// tessera.QLinearAdd (fuse_qdq) of same-shape operands on the fused kernel (kernels/x86/quantize.h);
// broadcasts go to the reference.
void qlinear_add_x86(KernelContext& ctx) {
  const auto ref = [&] { run_reference(ctx, "tessera"); };
  const Tensor* a0 = ctx.input(0);
  const Tensor* b0 = ctx.input(3);
  const Tensor* cz = ctx.input(7);
  const auto as = f32_scalar(ctx, 1), bs = f32_scalar(ctx, 4), cs = f32_scalar(ctx, 6);
  std::vector<int32_t> za, zb, zc;
  if (!a0 || !b0 || !is_q8(a0->dtype()) || !is_q8(b0->dtype()) || a0->shape() != b0->shape() || !as || !bs ||
      !cs || !zero_points(ctx.input(2), a0->dtype(), 0, za) || !zero_points(ctx.input(5), b0->dtype(), 0, zb))
    return ref();
  const DType ct = cz ? cz->dtype() : a0->dtype();
  if (!is_q8(ct) || !zero_points(cz, ct, 0, zc)) return ref();
  kernels::x86::QAddParams p;
  p.sa = *as, p.za = float(za[0]), p.sb = *bs, p.zb = float(zb[0]), p.sc = *cs, p.zc = float(zc[0]);
  const Tensor a = a0->contiguous(), b = b0->contiguous();
  Tensor& c = ctx.output_for_overwrite(0, ct, a.shape());
  kernels::x86::qlinear_add_8bit(a.raw_data(), a.dtype() == DType::i8, b.raw_data(), b.dtype() == DType::i8,
                                 a.numel(), p, c.raw_data(), ct == DType::i8, ctx.pool());
}

// tessera.QLookup (fuse_qlookup): table[x] over the bytes.
void qlookup_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  const Tensor* t0 = ctx.input(1);
  if (!x0 || !t0 || !is_q8(x0->dtype()) || !is_q8(t0->dtype()) || t0->numel() != 256)
    return run_reference(ctx, "tessera");
  const Tensor x = x0->contiguous(), t = t0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, t.dtype(), x.shape());
  kernels::x86::lookup_bytes(static_cast<const uint8_t*>(x.raw_data()), x.numel(),
                             static_cast<const uint8_t*>(t.raw_data()), static_cast<uint8_t*>(y.raw_data()),
                             ctx.pool());
}

}  // namespace

void register_x86_qlinear_bindings() {
  add_tuned_kernel("tessera", "QLookup", {}, qlookup_x86);
  add_tuned_kernel("tessera", "QLinearAdd", {}, qlinear_add_x86);
  add_tuned_kernel("tessera", "MatMulIntegerPacked", {},
                   [](KernelContext& c) { qmatmul_packed_x86(c, false); });
  add_tuned_kernel("tessera", "QLinearMatMulPacked", {},
                   [](KernelContext& c) { qmatmul_packed_x86(c, true); });
  add_tuned_kernel("tessera", "QLinearConvPacked", {}, qconv_packed_x86);
  add_tuned_kernel("", "MatMulInteger", {}, [](KernelContext& c) { qmatmul_x86(c, false); });
  add_tuned_kernel("", "QLinearMatMul", {}, [](KernelContext& c) { qmatmul_x86(c, true); });
  add_tuned_kernel("", "ConvInteger", {}, [](KernelContext& c) { qconv_x86(c, false); });
  add_tuned_kernel("", "QLinearConv", {}, [](KernelContext& c) { qconv_x86(c, true); });
}

}  // namespace tessera::backends::cpu
