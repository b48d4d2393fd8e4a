// Binds the tuned x86 kernels (src/kernels/x86/) to graph nodes: which nodes
// they claim, and how a node's inputs and attributes become a kernel call.
// Anything a tuned kernel does not cover at run time goes to the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/memory.h"
#include "kernels/ref/broadcast.h"
#include "kernels/ref/registry.h"
#include "kernels/ref/resize.h"
#include "kernels/x86/conv2d.h"
#include "kernels/x86/conv3d.h"
#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemm_amx.h"
#include "kernels/x86/grid_sample.h"
#include "kernels/x86/nms.h"
#include "kernels/x86/norm.h"
#include "kernels/x86/pool_indices.h"
#include "kernels/x86/pool_separable.h"
#include "kernels/x86/quantize.h"
#include "kernels/x86/reduce.h"
#include "kernels/x86/resize.h"
#include "kernels/x86/rnn.h"
#include "kernels/x86/roi_align.h"

namespace tessera::backends::cpu {

namespace {

using kernels::x86::Activation;

void run_ref(KernelContext& ctx, const char* domain) {
  run_reference(ctx, domain);
}

// The epilogue activation from the activation / clip_min / clip_max attributes after `prefix` ("pw_",
// "proj_": FusedPwDwConv's pointwise and projection stages); nullopt for a name the kernels do not take
// (the GELUs only where `gelu`): the reference kernel then reports it.
std::optional<Activation> activation_of(const KernelContext& ctx, float& lo, float& hi,
                                        const std::string& prefix = "", bool gelu = false) {
  const std::string a = ctx.attr_string(prefix + "activation", "");
  lo = ctx.attr_float(prefix + "clip_min", 0);
  hi = ctx.attr_float(prefix + "clip_max", 0);
  if (a.empty()) return Activation::none;
  if (a == "Relu") return Activation::relu;
  if (a == "Clip") return Activation::clip;
  if (a == "Silu") return Activation::silu;
  if (a == "HardSwish") return Activation::hardswish;
  if (gelu && a == "Gelu") return Activation::gelu_erf;
  if (gelu && a == "GeluTanh") return Activation::gelu_tanh;
  return std::nullopt;
}

// The convolutions' activation (none, Relu, Clip); anything else is an error naming it.
Activation conv_activation(const KernelContext& ctx, float& lo, float& hi, const std::string& prefix = "") {
  const auto a = activation_of(ctx, lo, hi, prefix);
  const std::string key = prefix + "activation";
  ctx.check(a.has_value(), "unsupported ", key, " '", ctx.attr_string(key, ""), "'");
  return *a;
}

void fused_gemm_x86(KernelContext& ctx) {
  const Tensor& a0 = ctx.required_input(0);
  const Tensor& bp = ctx.required_input(1);
  const Tensor* bias = ctx.input(2);
  const Tensor* res0 = ctx.input(3);
  const int64_t k = ctx.required_attr_int("K"), n = ctx.required_attr_int("N");
  const int64_t kc = ctx.required_attr_int("kc"), nr = ctx.required_attr_int("nr");
  const bool strassen = ctx.attr_int("strassen", 0) != 0;
  const bool coded = ctx.attr_int("coded", 0) != 0;
  const bool split = ctx.attr_int("split", 0) != 0;
  using kernels::x86::CodedB;
  using kernels::x86::PackedB;
  using kernels::x86::StrassenB;
  kernels::x86::GemmEpilogue ep;
  const auto act = activation_of(ctx, ep.clip_min, ep.clip_max, "", /*gelu=*/true);
  Shape os = a0.shape();
  if (!os.empty()) os.back() = n;
  if (a0.dtype() != DType::f32 || nr != PackedB::native_nr() ||
      kc != (strassen ? StrassenB::kc_for(k, n) : PackedB::kc_for(k, n)) || a0.rank() < 1 ||
      a0.dim(-1) != k || (strassen && (k % 2 != 0 || n % 2 != 0)) ||
      (coded && (strassen || !CodedB::available())) || (split && (coded || strassen)) ||
      (ctx.attr_int("a_rank", 0) != 0 && a0.rank() != ctx.attr_int("a_rank", 0)) ||
      bp.dtype() != (coded ? DType::u8 : DType::f32) ||
      (!coded && size_t(bp.numel()) != (strassen ? StrassenB::packed_floats(k, n, kc, nr)
                                                 : PackedB::packed_floats(k, n, kc, nr) +
                                                       (split ? kernels::x86::split_b_floats(k, n) : 0))) ||
      !act || (bias && (bias->dtype() != DType::f32 || bias->numel() != n)) ||
      (res0 && res0->dtype() != DType::f32)) {
    run_ref(ctx, "tessera");  // checks and reports what is wrong
    return;
  }
  // C (m x N, rows N apart) = A * B with the epilogue, over the classical or the Strassen packing
  auto gemm = [&](int64_t m, const float* ap, float* c, const kernels::x86::GemmEpilogue& e) {
    // B split for AMX from split_min_rows (an A holding Inf or NaN is refused: the f32 path below)
    if (split && m >= kernels::x86::split_min_rows(k, n) && kernels::x86::amx_gemm_available() &&
        kernels::x86::sgemm_split(m, n, k, ap, k, bp.data<float>() + PackedB::packed_floats(k, n, kc, nr), c,
                                  n, e, ctx.pool()))
      return;
    if (coded)
      kernels::x86::sgemm_coded(m, ap, k, false,
                                CodedB::view(bp.data<uint8_t>(), bp.nbytes(), k, n, kc, bp.storage()), c, n,
                                e, ctx.pool());
    else if (strassen)
      kernels::x86::sgemm_strassen(m, ap, k, false,
                                   StrassenB::view(bp.data<float>(), k, n, kc, nr, bp.storage()), c, n, e,
                                   ctx.pool());
    else
      kernels::x86::sgemm_packed(m, ap, k, false, PackedB::view(bp.data<float>(), k, n, kc, nr, bp.storage()),
                                 c, n, e, ctx.pool());
  };
  if (res0 && res0->shape() != os) {
    // A residual that broadcasts (rare): the product, then the Add and the activation apart.
    kernels::x86::GemmEpilogue pe;
    pe.bias = bias ? bias->data<float>() : nullptr;
    const Tensor a = a0.contiguous();
    Tensor prod = Tensor::uninitialized(DType::f32, os);
    const int64_t m = k ? a.numel() / k : shape_numel(os) / std::max<int64_t>(n, 1);
    gemm(m, a.data<float>(), prod.data<float>(), pe);
    const Tensor res = res0->contiguous();
    const Shape ys = kernels::ref::broadcast_shape(os, res.shape());
    Tensor& y = ctx.output_for_overwrite(0, DType::f32, ys);
    const float *pp = prod.data<float>(), *rp = res.data<float>();
    float* yp = y.data<float>();
    kernels::ref::BroadcastIndexer(ys, {os, res.shape()}).for_each([&](int64_t o, const int64_t* in) {
      yp[o] = pp[in[0]] + rp[in[1]];
    });
    kernels::x86::gemm_apply_activation(*act, ep.clip_min, ep.clip_max, yp, y.numel(), ctx.pool());
    return;
  }
  const Tensor a = a0.contiguous();
  const Tensor res = res0 ? res0->contiguous() : Tensor();
  // The GEMM writes every element of C when K > 0 (beta = 0 never reads it). It accumulates onto the
  // residual (beta = 1), which may be in C's own buffer (output_reusing; its K blocks would overwrite it
  // before the last added it) or is copied there first, so that a run gives the same bits either way.
  Tensor& y = k <= 0                          ? ctx.output(0, DType::f32, os)
              : res0 && res0->is_contiguous() ? ctx.output_reusing(0, 3, DType::f32, os)
                                              : ctx.output_for_overwrite(0, DType::f32, os);
  const int64_t m = k ? a.numel() / k : shape_numel(os) / std::max<int64_t>(n, 1);
  ep.bias = bias ? bias->data<float>() : nullptr;
  ep.residual = res0 ? res.data<float>() : nullptr;
  if (ep.residual && k > 0) {
    if (ep.residual != y.data<float>()) std::memcpy(y.data<float>(), ep.residual, size_t(y.nbytes()));
    ep.residual = nullptr, ep.beta = 1.0f;
  }
  ep.ldr = n;
  ep.act = *act;
  gemm(m, a.data<float>(), y.data<float>(), ep);
}

thread_local AlignedScratch tl_conv_scratch;

// Geometry attributes (kernel_shape, strides, dilations, pads) into p, checked; with `producer`,
// FusedPwDwConv's stem producer's (pw_kernel_shape ...). The names are literals: this runs for every conv of
// every run.
void read_geometry(KernelContext& ctx, kernels::x86::Conv2dParams& p, bool producer = false) {
  static constexpr int64_t kOnes[2] = {1, 1}, kZeros[4] = {0, 0, 0, 0};
  static constexpr std::string_view kNames[2][4] = {
      {"kernel_shape", "strides", "dilations", "pads"},
      {"pw_kernel_shape", "pw_strides", "pw_dilations", "pw_pads"}};
  const auto& n = kNames[producer ? 1 : 0];
  const auto ks = ctx.attr_ints_view(n[0]), st = ctx.attr_ints_view(n[1], kOnes),
             dl = ctx.attr_ints_view(n[2], kOnes), pd = ctx.attr_ints_view(n[3], kZeros);
  ctx.check(ks.size() == 2 && st.size() == 2 && dl.size() == 2 && pd.size() == 4,
            "kernel_shape, strides, dilations must have 2 values and pads 4");
  p.kh = ks[0], p.kw = ks[1], p.sh = st[0], p.sw = st[1], p.dh = dl[0], p.dw = dl[1];
  p.pad_t = pd[0], p.pad_l = pd[1], p.pad_b = pd[2], p.pad_r = pd[3];
  ctx.check(p.kh > 0 && p.kw > 0 && p.sh > 0 && p.sw > 0 && p.dh > 0 && p.dw > 0,
            "kernel_shape, strides and dilations must be positive");
  ctx.check(p.pad_t >= 0 && p.pad_l >= 0 && p.pad_b >= 0 && p.pad_r >= 0, "pads must not be negative");
}

// FusedConv with layout NHWC (weights packed by the layout_nhwc pass).
void fused_conv_nhwc_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& w0 = ctx.required_input(1);
  const Tensor* b = ctx.input(2);
  const Tensor* r = ctx.input(3);
  const auto ws = ctx.attr_ints_view("weight_shape");
  if (x0.dtype() != DType::f32 || w0.dtype() != DType::f32 || x0.rank() != 4 || ws.size() != 4) {
    run_ref(ctx, "tessera");
    return;
  }
  kernels::x86::Conv2dParams p;
  read_geometry(ctx, p);
  // input_layout "NCHW": the input is read in NCHW (a stem conv, see conv2d_nchw_in_f32)
  const bool nchw_in = ctx.attr_string("input_layout", "NHWC") == "NCHW";
  p.n = x0.dim(0), p.oc = ws[0];
  if (nchw_in)
    p.c = x0.dim(1), p.h = x0.dim(2), p.w = x0.dim(3);
  else
    p.h = x0.dim(1), p.w = x0.dim(2), p.c = x0.dim(3);
  p.groups = ctx.attr_int("group", 1);
  const bool dense = p.groups == 1;
  const int64_t wino = ctx.attr_int("winograd", 0);
  ctx.check(p.oc > 0 && p.groups > 0 && p.c % p.groups == 0 &&
                (dense || p.is_depthwise() || kernels::x86::conv_grouped_applies(p)),
            "NHWC FusedConv is dense, depthwise or grouped as the NHWC kernels take");
  ctx.check(ws[1] == p.c / p.groups && ws[2] == p.kh && ws[3] == p.kw,
            "weight_shape does not match the input");
  ctx.check(wino == 0 || ((wino == 2 || wino == 4) && kernels::x86::wino_applies(p)),
            "winograd = 2 or 4 needs a 3x3 conv of stride 1, dense or in groups it takes");
  const size_t want = wino    ? kernels::x86::wino_packed_floats(p.oc, p.c / p.groups, int(wino), p.groups)
                      : dense ? kernels::x86::conv_nhwc_packed_floats(p.oc, p.c * p.kh * p.kw)
                      : p.is_depthwise() ? size_t(p.c * p.kh * p.kw)
                                         : kernels::x86::grouped_nhwc_packed_floats(p);
  ctx.check(size_t(w0.numel()) == want, "packed weights have ", w0.numel(), " floats, not ", want);
  ctx.check(p.oh() > 0 && p.ow() > 0, "output would be empty");
  if (b) ctx.check(b->dtype() == DType::f32 && b->numel() == p.oc, "bias must have ", p.oc, " elements");
  const Tensor w = w0.contiguous();
  Tensor x = x0.contiguous();
  const Shape ys{p.n, p.oh(), p.ow(), p.oc};
  if (r)
    ctx.check(r->dtype() == DType::f32 && r->shape() == ys, "residual ", r->text(),
              " does not match the output");
  // The output takes over the residual's buffer where the plan can (every conv path adds it element by
  // element as it stores, or accumulates onto it: conv_dense).
  Tensor& y = r && r->is_contiguous() ? ctx.output_reusing(0, 3, DType::f32, ys)
                                      : ctx.output_for_overwrite(0, DType::f32, ys);
  Tensor rc, bc;
  if (r) rc = r->contiguous();
  if (b) bc = b->contiguous();
  kernels::x86::ConvEpilogue ep;
  ep.bias = b ? bc.data<float>() : nullptr;
  ep.residual = r ? rc.data<float>() : nullptr;
  ep.act = conv_activation(ctx, ep.clip_min, ep.clip_max);
  if (nchw_in) {
    ctx.check(!wino && dense, "input_layout NCHW needs a dense direct conv");
    if (!r && kernels::x86::conv_nchw_in_applies(p, kernels::x86::conv_isa())) {
      kernels::x86::conv2d_nchw_in_f32(p, x.data<float>(), w.data<float>(), ep, y.data<float>(), ctx.pool(),
                                       kernels::x86::conv_isa());
      return;
    }
    // elsewhere (another ISA than the session was created on): an NHWC copy of the input
    Tensor xt = Tensor::uninitialized(DType::f32, {p.n, p.h, p.w, p.c});
    kernels::x86::transpose_f32(x.data<float>(), xt.data<float>(), {p.n, p.c, p.h, p.w}, {0, 2, 3, 1},
                                ctx.pool());
    x = std::move(xt);
  }
  if (wino)
    kernels::x86::conv2d_wino_nhwc_f32(p, int(wino), x.data<float>(), w.data<float>(), ep, y.data<float>(),
                                       ctx.pool());
  else
    kernels::x86::conv2d_nhwc_f32(p, x.data<float>(), w.data<float>(), ep, y.data<float>(), ctx.pool());
}

// tessera.FusedPwDwConv: the pointwise conv feeding the depthwise conv (and the projection), a band of rows
// at a time.
void fused_pw_dw_conv_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor* w1 = ctx.input(1);  // none: no expansion
  const Tensor* b1 = ctx.input(2);
  const Tensor& w2 = ctx.required_input(3);
  const Tensor* b2 = ctx.input(4);
  const Tensor* w3 = ctx.input(5);
  const Tensor* b3 = ctx.input(6);
  const Tensor* r3 = ctx.input(7);
  if (x0.dtype() != DType::f32 || (w1 && w1->dtype() != DType::f32) || w2.dtype() != DType::f32 ||
      x0.rank() != 4 || (w3 && w3->dtype() != DType::f32)) {
    run_ref(ctx, "tessera");
    return;
  }
  const int64_t e = ctx.attr_int("channels", 0);
  ctx.check(e > 0, "channels must be positive");
  // pw_input_layout NCHW: the producer is a stem conv over an NCHW x (its geometry in the pw_ attributes)
  const bool stem = ctx.attr_string("pw_input_layout", "NHWC") == "NCHW";
  kernels::x86::Conv2dParams pw, dw;
  if (stem) {
    ctx.check(w1 != nullptr, "a stem producer (pw_input_layout NCHW) needs its weights");
    pw.n = x0.dim(0), pw.c = x0.dim(1), pw.h = x0.dim(2), pw.w = x0.dim(3), pw.oc = e;
    read_geometry(ctx, pw, /*producer=*/true);
    ctx.check(pw.oh() > 0 && pw.ow() > 0, "the stem's output would be empty");
    if (!kernels::x86::conv_nchw_in_applies(pw, kernels::x86::conv_isa())) {
      run_ref(ctx, "tessera");
      return;
    }
  } else {
    pw.n = x0.dim(0), pw.h = x0.dim(1), pw.w = x0.dim(2), pw.c = x0.dim(3), pw.oc = e;
  }
  read_geometry(ctx, dw);
  dw.n = pw.n, dw.h = pw.oh(), dw.w = pw.ow(), dw.c = dw.oc = dw.groups = e;
  const int64_t k1 = pw.c * pw.kh * pw.kw;  // the producer's depth
  if (w1)
    ctx.check(size_t(w1->numel()) == kernels::x86::conv_nhwc_packed_floats(e, k1),
              "packed pointwise weights have ", w1->numel(), " floats, not ",
              kernels::x86::conv_nhwc_packed_floats(e, k1));
  else
    ctx.check(pw.c == e && !b1, "without expansion weights, channels must be the input's ", pw.c,
              " and there is no expansion bias");
  ctx.check(w2.numel() == e * dw.kh * dw.kw, "packed depthwise weights have ", w2.numel(), " floats, not ",
            e * dw.kh * dw.kw);
  for (const Tensor* b : {b1, b2})
    if (b) ctx.check(b->dtype() == DType::f32 && b->numel() == e, "bias must have ", e, " elements");
  ctx.check(dw.oh() > 0 && dw.ow() > 0, "output would be empty");
  // the projection's output channels (the block's output), or e without one
  const int64_t p = w3 ? ctx.attr_int("proj_channels", 0) : e;
  const Shape ys{dw.n, dw.oh(), dw.ow(), p};
  if (w3) {
    ctx.check(p > 0, "proj_channels must be positive with a projection");
    ctx.check(size_t(w3->numel()) == kernels::x86::conv_nhwc_packed_floats(p, e),
              "packed projection weights have ", w3->numel(), " floats, not ",
              kernels::x86::conv_nhwc_packed_floats(p, e));
    if (b3) ctx.check(b3->dtype() == DType::f32 && b3->numel() == p, "bias must have ", p, " elements");
    if (r3)
      ctx.check(r3->dtype() == DType::f32 && r3->shape() == ys, "residual ", r3->text(),
                " does not match the output");
  } else {
    ctx.check(!b3 && !r3, "a projection bias or residual needs projection weights");
  }
  const Tensor x = x0.contiguous(), w1c = w1 ? w1->contiguous() : Tensor(), w2c = w2.contiguous();
  const Tensor b1c = b1 ? b1->contiguous() : Tensor(), b2c = b2 ? b2->contiguous() : Tensor();
  const Tensor w3c = w3 ? w3->contiguous() : Tensor(), b3c = b3 ? b3->contiguous() : Tensor();
  const Tensor r3c = r3 ? r3->contiguous() : Tensor();
  // A fresh output even with a residual: the bands read input rows next to the rows others write, and the
  // residual is often that input.
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, ys);
  kernels::x86::ConvEpilogue ep1, ep2;
  ep1.bias = b1 ? b1c.data<float>() : nullptr;
  ep1.act = conv_activation(ctx, ep1.clip_min, ep1.clip_max, "pw_");
  ep2.bias = b2 ? b2c.data<float>() : nullptr;
  ep2.act = conv_activation(ctx, ep2.clip_min, ep2.clip_max);
  kernels::x86::ConvProjection proj;
  if (w3) {
    proj.w = w3c.data<float>(), proj.oc = p;
    proj.ep.bias = b3 ? b3c.data<float>() : nullptr;
    proj.ep.residual = r3 ? r3c.data<float>() : nullptr;
    proj.ep.act = conv_activation(ctx, proj.ep.clip_min, proj.ep.clip_max, "proj_");
  }
  kernels::x86::conv2d_pw_dw_nhwc_f32(pw, x.data<float>(), w1 ? w1c.data<float>() : nullptr, ep1, dw,
                                      w2c.data<float>(), ep2, y.data<float>(), ctx.pool(),
                                      w3 ? &proj : nullptr);
}

void nhwc_pool_x86(KernelContext& ctx, bool is_max) {
  const Tensor& x0 = ctx.required_input(0);
  const bool bytes = is_max && (x0.dtype() == DType::u8 || x0.dtype() == DType::i8);  // an int8 region's
  if ((x0.dtype() != DType::f32 && !bytes) || x0.rank() != 4) {
    run_ref(ctx, "tessera");
    return;
  }
  kernels::x86::PoolParams pp;
  pp.is_max = is_max;
  pp.count_include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  read_geometry(ctx, pp.g);
  pp.g.n = x0.dim(0), pp.g.h = x0.dim(1), pp.g.w = x0.dim(2), pp.g.c = pp.g.oc = x0.dim(3);
  pp.oh = pp.g.oh(), pp.ow = pp.g.ow();
  ctx.check(pp.oh > 0 && pp.ow > 0, "output would be empty");
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, x.dtype(), {pp.g.n, pp.oh, pp.ow, pp.g.c});
  if (bytes)
    kernels::x86::maxpool2d_nhwc_8bit(pp, x.raw_data(), x.dtype() == DType::i8, y.raw_data(), ctx.pool());
  else
    kernels::x86::pool2d_nhwc_f32(pp, x.data<float>(), y.data<float>(), ctx.pool());
}

// FusedConv with layout NCDHW: a 3-D conv, its depth taps packed by the pack_conv3d pass.
void fused_conv3d_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& w0 = ctx.required_input(1);
  const Tensor* b = ctx.input(2);
  const Tensor* r = ctx.input(3);
  const auto ws = ctx.attr_ints_view("weight_shape");
  if (x0.dtype() != DType::f32 || w0.dtype() != DType::f32 || x0.rank() != 5 || ws.size() != 5) {
    run_ref(ctx, "tessera");
    return;
  }
  static constexpr int64_t kOnes[3] = {1, 1, 1}, kZeros[6] = {0, 0, 0, 0, 0, 0};
  const auto ks = ctx.attr_ints_view("kernel_shape"), st = ctx.attr_ints_view("strides", kOnes),
             dl = ctx.attr_ints_view("dilations", kOnes), pd = ctx.attr_ints_view("pads", kZeros);
  ctx.check(ks.size() == 3 && st.size() == 3 && dl.size() == 3 && pd.size() == 6,
            "a 3-D conv's kernel_shape, strides, dilations must have 3 values and pads 6");
  for (size_t i = 0; i < 3; ++i)
    ctx.check(ks[i] > 0 && st[i] > 0 && dl[i] > 0, "kernel_shape, strides and dilations must be positive");
  for (int64_t v : pd) ctx.check(v >= 0, "pads must not be negative");
  kernels::x86::Conv3dParams p;
  p.n = x0.dim(0), p.s.c = x0.dim(1), p.d = x0.dim(2), p.s.h = x0.dim(3), p.s.w = x0.dim(4);
  p.s.oc = ws[0], p.s.groups = ctx.attr_int("group", 1);
  p.kd = ks[0], p.s.kh = ks[1], p.s.kw = ks[2], p.sd = st[0], p.s.sh = st[1], p.s.sw = st[2];
  p.dd = dl[0], p.s.dh = dl[1], p.s.dw = dl[2];
  p.pad_f = pd[0], p.s.pad_t = pd[1], p.s.pad_l = pd[2], p.pad_k = pd[3], p.s.pad_b = pd[4],
  p.s.pad_r = pd[5];
  const int64_t wino = ctx.attr_int("winograd", 0);
  ctx.check(kernels::x86::conv3d_applies(p) && ws[1] == p.s.c / p.s.groups && ws[2] == p.kd &&
                ws[3] == p.s.kh && ws[4] == p.s.kw,
            "weight_shape does not match the input ", x0.text(), " with group ", p.s.groups);
  ctx.check(wino == 0 || ((wino == 2 || wino == 4) && kernels::x86::wino_applies(p.s)),
            "winograd = 2 or 4 needs 3x3 taps of stride 1, dense or in groups it takes");
  const size_t want = size_t(p.kd) * kernels::x86::conv3d_slice_floats(p, int(wino));
  ctx.check(size_t(w0.numel()) == want, "packed weights have ", w0.numel(), " floats, not ", want);
  ctx.check(p.od() > 0 && p.s.oh() > 0 && p.s.ow() > 0, "output would be empty");
  if (b) ctx.check(b->dtype() == DType::f32 && b->numel() == p.s.oc, "bias must have ", p.s.oc, " elements");
  const Shape ys{p.n, p.s.oc, p.od(), p.s.oh(), p.s.ow()};
  if (r)
    ctx.check(r->dtype() == DType::f32 && r->shape() == ys, "residual ", r->text(),
              " does not match the output");
  const Tensor x = x0.contiguous(), w = w0.contiguous();
  Tensor rc, bc;
  if (r) rc = r->contiguous();
  if (b) bc = b->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, ys);
  kernels::x86::ConvEpilogue ep;
  ep.bias = b ? bc.data<float>() : nullptr;
  ep.residual = r ? rc.data<float>() : nullptr;
  ep.act = conv_activation(ctx, ep.clip_min, ep.clip_max);
  kernels::x86::conv3d_f32(p, int(wino), x.data<float>(), w.data<float>(), ep, y.data<float>(), ctx.pool());
}

void conv_nchw_x86(KernelContext& ctx, bool fused);

void fused_conv_x86(KernelContext& ctx) {
  const std::string layout = ctx.attr_string("layout", "NCHW");
  if (layout == "NHWC") {
    fused_conv_nhwc_x86(ctx);
    return;
  }
  if (layout == "NCDHW") {
    fused_conv3d_x86(ctx);
    return;
  }
  conv_nchw_x86(ctx, true);
}

// An NCHW 2-D conv on the im2col kernel (kernels/x86/conv2d.h): tessera.FusedConv outside conv regions, and
// an ONNX Conv that no pass fused — its weights an input or computed at run time (dynamic filters; 137x
// onnxruntime's time on the reference kernel). Anything else goes to the reference.
void conv_nchw_x86(KernelContext& ctx, bool fused) {
  const char* domain = fused ? "tessera" : "";
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& w0 = ctx.required_input(1);
  const Tensor* b = ctx.input(2);
  const Tensor* r = fused ? ctx.input(3) : nullptr;
  if (x0.dtype() != DType::f32 || w0.dtype() != DType::f32 || x0.rank() != 4 || w0.rank() != 4 ||
      (b && b->dtype() != DType::f32)) {
    run_ref(ctx, domain);
    return;
  }
  const auto ks = ctx.attr_ints("kernel_shape", {w0.dim(2), w0.dim(3)}),
             st = ctx.attr_ints("strides", {1, 1}), dl = ctx.attr_ints("dilations", {1, 1}),
             pd = ctx.attr_ints("pads", {0, 0, 0, 0});
  if (ks.size() != 2 || st.size() != 2 || dl.size() != 2 || pd.size() != 4) {
    run_ref(ctx, domain);
    return;
  }
  kernels::x86::Conv2dParams p;
  p.n = x0.dim(0), p.c = x0.dim(1), p.h = x0.dim(2), p.w = x0.dim(3);
  p.oc = w0.dim(0), p.kh = ks[0], p.kw = ks[1], p.sh = st[0], p.sw = st[1], p.dh = dl[0], p.dw = dl[1];
  p.pad_t = pd[0], p.pad_l = pd[1], p.pad_b = pd[2], p.pad_r = pd[3];
  p.groups = ctx.attr_int("group", 1);
  ctx.check(p.groups > 0 && p.c % p.groups == 0 && p.oc % p.groups == 0 && w0.dim(1) == p.c / p.groups &&
                w0.dim(2) == p.kh && w0.dim(3) == p.kw,
            "weights ", w0.text(), " do not match input ", x0.text(), " with group ", p.groups);
  ctx.check(p.oh() > 0 && p.ow() > 0, "output would be empty");
  if (b) ctx.check(b->numel() == p.oc, "bias must have ", p.oc, " elements");
  const Tensor x = x0.contiguous(), w = w0.contiguous();
  Tensor& y = ctx.output(0, DType::f32, {p.n, p.oc, p.oh(), p.ow()});
  Tensor rc;
  if (r) {
    ctx.check(r->shape() == y.shape(), "residual ", r->text(), " does not match the output");
    rc = r->contiguous();
  }
  kernels::x86::ConvEpilogue ep;
  ep.bias = b ? b->data<float>() : nullptr;
  ep.residual = r ? rc.data<float>() : nullptr;
  ep.act = fused ? conv_activation(ctx, ep.clip_min, ep.clip_max) : kernels::x86::Activation::none;
  const size_t need = kernels::x86::conv2d_scratch_floats(p);
  kernels::x86::conv2d_f32(p, x.data<float>(), w.data<float>(), ep, y.data<float>(),
                           tl_conv_scratch.get(need), ctx.pool());
}

void nhwc_gap_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  if (x0.dtype() != DType::f32 || x0.rank() != 4 || x0.dim(1) * x0.dim(2) == 0) {
    run_ref(ctx, "tessera");
    return;
  }
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, {x.dim(0), x.dim(3), 1, 1});
  kernels::x86::global_avg_pool_nhwc_f32(x.data<float>(), x.dim(0), x.dim(1) * x.dim(2), x.dim(3),
                                         y.data<float>(), ctx.pool());
}

// ONNX MaxPool / AveragePool over channels-first tensors of 1 to 3 spatial axes, ceil_mode 0, explicit pads:
// 2-D MaxPool on the NHWC pool kernel with N*C one-channel images (with its indices output, on
// pool_indices.h), the rest as separable passes (pool_separable.h). Anything else goes to the reference.
bool claims_pool(const ir::Node& n) {
  if (n.outputs.size() > 1 && n.outputs[1] && n.op_type != "MaxPool") return false;  // (MaxPool: 2-D only)
  const Attribute* cm = n.attr("ceil_mode");
  const Attribute* ap = n.attr("auto_pad");
  const Attribute* so = n.attr("storage_order");
  const Attribute* ks = n.attr("kernel_shape");
  return (!cm || cm->i == 0) && (!ap || ap->s.empty() || ap->s == "NOTSET") && (!so || so->i == 0) && ks &&
         !ks->ints.empty() && ks->ints.size() <= 3;
}

// An ONNX Conv with explicit pads (or none): 2-D at run time, else the reference.
bool claims_conv(const ir::Node& n) {
  const Attribute* ap = n.attr("auto_pad");
  return !ap || ap->s.empty() || ap->s == "NOTSET" || ap->s == "VALID";
}

// ConvTranspose as kernels/x86/conv2d.h takes it: 2-D, group 1, pads given (or VALID), no output_shape.
bool claims_conv_transpose(const ir::Node& n) {
  const Attribute* g = n.attr("group");
  const Attribute* ap = n.attr("auto_pad");
  const Attribute* os = n.attr("output_shape");
  return (!g || g->i == 1) && (!ap || ap->s.empty() || ap->s == "NOTSET" || ap->s == "VALID") && !os;
}

void conv_transpose_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& w0 = ctx.required_input(1);
  const Tensor* b = ctx.input(2);
  const int64_t r = x0.rank();
  if (x0.dtype() != DType::f32 || w0.dtype() != DType::f32 || (r != 3 && r != 4) || w0.rank() != r ||
      ctx.attr_int("group", 1) != 1 || (b && (b->dtype() != DType::f32 || b->rank() != 1))) {
    run_ref(ctx, "");
    return;
  }
  // 1-D (a vocoder's upsampling ConvTranspose1d) as 2-D of height 1: each attribute gains a leading
  // height entry (pads: begin and end)
  const bool one_d = r == 3;
  kernels::x86::ConvTranspose2dParams p;
  p.n = x0.dim(0), p.c = x0.dim(1), p.h = one_d ? 1 : x0.dim(2), p.w = x0.dim(r - 1);
  p.oc = w0.dim(1), p.kh = one_d ? 1 : w0.dim(2), p.kw = w0.dim(r - 1);
  ctx.check(w0.dim(0) == p.c, "X has ", p.c, " channels but W ", w0.text(), " expects ", w0.dim(0));
  if (b) ctx.check(b->numel() == p.oc, "B must be [", p.oc, "], got ", b->text());
  auto lift = [&](std::vector<int64_t> v, int64_t h) {
    if (one_d && v.size() == 1) v.insert(v.begin(), h);
    return v;
  };
  const std::vector<int64_t> ones(size_t(r - 2), 1), zeros(size_t(r - 2), 0);
  const auto ks = lift(ctx.attr_ints("kernel_shape",
                                     one_d ? std::vector<int64_t>{p.kw} : std::vector<int64_t>{p.kh, p.kw}),
                       1),
             st = lift(ctx.attr_ints("strides", ones), 1), dl = lift(ctx.attr_ints("dilations", ones), 1),
             op = lift(ctx.attr_ints("output_padding", zeros), 0);
  const bool valid = ctx.attr_string("auto_pad", "NOTSET") == "VALID";
  auto pd = valid ? std::vector<int64_t>{0, 0, 0, 0}
                  : ctx.attr_ints("pads", std::vector<int64_t>(2 * size_t(r - 2), 0));
  if (one_d && pd.size() == 2) pd = {0, pd[0], 0, pd[1]};
  ctx.check(
      ks.size() == 2 && st.size() == 2 && dl.size() == 2 && op.size() == 2 && pd.size() == 4,
      "kernel_shape, strides, dilations, output_padding must have a value per spatial axis and pads two");
  ctx.check(ks[0] == p.kh && ks[1] == p.kw, "kernel_shape does not match W ", w0.text());
  ctx.check(st[0] > 0 && st[1] > 0 && dl[0] > 0 && dl[1] > 0, "strides and dilations must be positive");
  p.sh = st[0], p.sw = st[1], p.dh = dl[0], p.dw = dl[1], p.pad_t = pd[0], p.pad_l = pd[1];
  p.oh = st[0] * (p.h - 1) + op[0] + (p.kh - 1) * p.dh + 1 - pd[0] - pd[2];
  p.ow = st[1] * (p.w - 1) + op[1] + (p.kw - 1) * p.dw + 1 - pd[1] - pd[3];
  ctx.check(p.oh >= 0 && p.ow >= 0, "output would have a negative size");
  const Tensor x = x0.contiguous(), w = w0.contiguous();
  const Tensor bc = b ? b->contiguous() : Tensor();
  Tensor& y =
      ctx.output_for_overwrite(0, DType::f32, one_d ? Shape{p.n, p.oc, p.ow} : Shape{p.n, p.oc, p.oh, p.ow});
  kernels::x86::conv_transpose2d_f32(p, x.data<float>(), w.data<float>(), b ? bc.data<float>() : nullptr,
                                     y.data<float>(), ctx.pool());
}

// Resize of an NCHW f32 tensor's H and W, nearest or linear (two taps an output index), nothing
// extrapolated: kernels/x86/resize.h over the reference's plan; anything else the reference kernel.
void resize_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  if (x0.dtype() != DType::f32 || x0.rank() != 4) {
    run_ref(ctx, "");
    return;
  }
  const kernels::ref::ResizePlan plan = kernels::ref::plan_resize(ctx);
  // the resized axes: H and W of NCHW (2, 3), else of NHWC (1, 2: layout_nhwc's twins), channels left alone
  const bool nhwc =
      std::any_of(plan.passes.begin(), plan.passes.end(), [](const auto& t) { return t.axis == 1; });
  const int first = nhwc ? 1 : 2;
  const kernels::ref::ResizeTaps* axis[2] = {nullptr, nullptr};
  for (const auto& t : plan.passes) {
    const bool two =
        t.n == 2 && std::none_of(t.extrapolate.begin(), t.extrapolate.end(), [](char e) { return e; });
    if ((t.axis != first && t.axis != first + 1) || !two || t.out == 0) {
      run_ref(ctx, "");
      return;
    }
    axis[t.axis - first] = &t;
  }
  const int64_t h = x0.dim(first), w = x0.dim(first + 1);
  if (h == 0 || w == 0 || x0.numel() == 0) {
    run_ref(ctx, "");
    return;
  }
  // each axis as index pairs and float weights (an axis left as it is: itself, weight 1)
  struct Taps {
    std::vector<int64_t> i0, i1;
    std::vector<float> w0, w1;
  } tp[2];
  for (int a = 0; a < 2; ++a) {
    const int64_t in = a ? w : h, out = axis[a] ? axis[a]->out : in;
    Taps& t = tp[a];
    t.i0.resize(size_t(out)), t.i1.resize(size_t(out)), t.w0.resize(size_t(out)), t.w1.resize(size_t(out));
    for (int64_t o = 0; o < out; ++o) {
      const size_t k = size_t(2 * o);
      t.i0[size_t(o)] = axis[a] ? axis[a]->idx[k] : o;
      t.i1[size_t(o)] = axis[a] ? axis[a]->idx[k + 1] : o;
      t.w0[size_t(o)] = axis[a] ? float(axis[a]->w[k]) : 1.0f;
      t.w1[size_t(o)] = axis[a] ? float(axis[a]->w[k + 1]) : 0.0f;
    }
  }
  const int64_t oh = int64_t(tp[0].i0.size()), ow = int64_t(tp[1].i0.size());
  const Tensor x = x0.contiguous();
  auto view = [](const Taps& t) {
    return kernels::x86::ResizeAxis{t.i0.data(), t.i1.data(), t.w0.data(), t.w1.data()};
  };
  if (nhwc) {
    Tensor& y = ctx.output_for_overwrite(0, DType::f32, {x0.dim(0), oh, ow, x0.dim(3)});
    kernels::x86::resize2d_nhwc_f32(x.data<float>(), x0.dim(0), h, w, x0.dim(3), view(tp[0]), view(tp[1]), oh,
                                    ow, y.data<float>(), ctx.pool());
    return;
  }
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, {x0.dim(0), x0.dim(1), oh, ow});
  kernels::x86::resize2d_f32(x.data<float>(), x0.dim(0) * x0.dim(1), h, w, view(tp[0]), view(tp[1]), oh, ow,
                             y.data<float>(), ctx.pool());
}

// LSTM (4 gates) and GRU (3, linear_before_reset 1) as kernels/x86/rnn.h takes them: the default
// activations, layout 0, no clip or sequence lengths (LSTM: no peepholes or coupled input-forget gate);
// anything else the reference kernel.
bool claims_recurrent(const ir::Node& n, bool lstm) {
  for (const char* a : {"activations", "activation_alpha", "activation_beta", "clip"})
    if (n.attr(a)) return false;
  const Attribute* lay = n.attr("layout");
  const Attribute* inf = n.attr("input_forget");
  const Attribute* lbr = n.attr("linear_before_reset");
  const bool no_lens = n.inputs.size() <= 4 || !n.inputs[4];
  const bool no_peep = n.inputs.size() <= 7 || !n.inputs[7];
  return (!lay || lay->i == 0) && no_lens &&
         (lstm ? (!inf || inf->i == 0) && no_peep : lbr != nullptr && lbr->i == 1);
}

// ONNX LSTM / GRU (W and R in place) or tessera.PackedRecurrent (packed by the pack_recurrent pass).
void recurrent_x86(KernelContext& ctx, bool lstm, bool packed) {
  using kernels::x86::PackedB;
  const char* domain = packed ? "tessera" : "";
  const int gates = lstm ? 4 : 3;
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& w0 = ctx.required_input(1);
  const Tensor& r0 = ctx.required_input(2);
  const std::string dir = ctx.attr_string("direction", "forward");
  const int dirs = dir == "bidirectional" ? 2 : 1;
  auto f32 = [](const Tensor* t) { return !t || t->dtype() == DType::f32; };
  const Tensor* b0 = ctx.input(3);
  const Tensor* h0 = ctx.input(5);
  const Tensor* c0 = lstm ? ctx.input(6) : nullptr;
  const bool plain = (dir == "forward" || dir == "reverse" || dirs == 2) && x0.dtype() == DType::f32 &&
                     f32(&w0) && f32(&r0) && f32(b0) && f32(h0) && f32(c0) && x0.rank() == 3 &&
                     !ctx.input(4) && ctx.attr_int("layout", 0) == 0 && !ctx.has_attr("clip") &&
                     !ctx.has_attr("activations") &&
                     (lstm ? !ctx.input(7) && ctx.attr_int("input_forget", 0) == 0
                           : ctx.attr_int("linear_before_reset", 0) == 1);
  kernels::x86::LstmParams p;
  p.seq = x0.rank() == 3 ? x0.dim(0) : 0, p.batch = x0.rank() == 3 ? x0.dim(1) : 0;
  p.input = x0.rank() == 3 ? x0.dim(2) : 0, p.dirs = dirs, p.reverse = dir == "reverse";
  p.hidden = packed ? ctx.attr_int("hidden_size", 0) : w0.rank() == 3 ? w0.dim(1) / gates : 0;
  const int64_t H = p.hidden, G = gates * H;
  const Shape state{dirs, p.batch, H};
  // the weights: in place ([dirs, G, input], [dirs, G, H]) or dirs packings each
  bool weights_ok = false;
  std::vector<PackedB> packs;
  if (packed) {
    const int64_t kc_w = ctx.attr_int("kc_w", 0), kc_r = ctx.attr_int("kc_r", 0), nr = ctx.attr_int("nr", 0);
    weights_ok = ctx.attr_string("cell", "") == (lstm ? "LSTM" : "GRU") && H > 0 &&
                 ctx.attr_int("input_size", 0) == p.input && nr == PackedB::native_nr() &&
                 kc_w == PackedB::kc_for(p.input, G) && kc_r == PackedB::kc_for(H, G) &&
                 size_t(w0.numel()) == size_t(dirs) * PackedB::packed_floats(p.input, G, kc_w, nr) &&
                 size_t(r0.numel()) == size_t(dirs) * PackedB::packed_floats(H, G, kc_r, nr) &&
                 w0.is_contiguous() && r0.is_contiguous();
    // dirs views of t's packings of k x G each: W's then R's
    auto views = [&](const Tensor& t, int64_t k, int64_t kc) {
      const size_t per = PackedB::packed_floats(k, G, kc, nr);
      for (int d = 0; d < dirs; ++d)
        packs.push_back(PackedB::view(t.data<float>() + size_t(d) * per, k, G, kc, nr, nullptr));
    };
    if (weights_ok) views(w0, p.input, kc_w), views(r0, H, kc_r);
  } else {
    weights_ok = w0.rank() == 3 && r0.rank() == 3 && w0.dim(0) == dirs && w0.dim(1) % gates == 0 &&
                 w0.dim(2) == p.input && r0.dim(0) == dirs && r0.dim(1) == G && r0.dim(2) == H;
  }
  if (!plain || !weights_ok || (b0 && b0->shape() != Shape{dirs, 2 * G}) || (h0 && h0->shape() != state) ||
      (c0 && c0->shape() != state) || ctx.attr_int("hidden_size", H) != H) {
    run_ref(ctx, domain);  // the general kernel, which also reports what does not match
    return;
  }
  const Tensor x = x0.contiguous();
  const Tensor w = packed ? Tensor() : w0.contiguous(), r = packed ? Tensor() : r0.contiguous();
  const Tensor b = b0 ? b0->contiguous() : Tensor(), hi = h0 ? h0->contiguous() : Tensor(),
               ci = c0 ? c0->contiguous() : Tensor();
  kernels::x86::RnnWeights wr;
  if (packed) {
    wr.w_packed = packs.data();
    wr.r_packed = packs.data() + dirs;
  } else {
    wr.w = w.data<float>();
    wr.r = r.data<float>();
  }
  auto out = [&](size_t i, Shape s) {
    return ctx.num_outputs() > i && ctx.output_requested(i)
               ? ctx.output_for_overwrite(i, DType::f32, std::move(s)).data<float>()
               : nullptr;
  };
  float* y = out(0, {p.seq, dirs, p.batch, H});
  float* yh = out(1, state);
  const float* bp = b0 ? b.data<float>() : nullptr;
  const float* hp = h0 ? hi.data<float>() : nullptr;
  if (lstm)
    kernels::x86::lstm_f32(p, x.data<float>(), wr, bp, hp, c0 ? ci.data<float>() : nullptr, y, yh,
                           out(2, state), ctx.pool());
  else
    kernels::x86::gru_f32(p, x.data<float>(), wr, bp, hp, y, yh, ctx.pool());
}

void packed_recurrent_x86(KernelContext& ctx) {
  const std::string cell = ctx.attr_string("cell", "");
  if (cell != "LSTM" && cell != "GRU") return run_ref(ctx, "tessera");  // reports it
  recurrent_x86(ctx, cell == "LSTM", true);
}

void pool_separable_x86(KernelContext& ctx, bool is_max) {
  const Tensor& x0 = ctx.required_input(0);
  const auto ks = ctx.attr_ints("kernel_shape");
  const int64_t sp = x0.rank() - 2;
  const bool q8 = is_max && (x0.dtype() == DType::u8 || x0.dtype() == DType::i8);  // a QDQ model's MaxPool
  if ((x0.dtype() != DType::f32 && !q8) || sp < 1 || int64_t(ks.size()) != sp || ctx.num_outputs() > 1 ||
      ctx.attr_int("ceil_mode", 0) != 0) {
    run_ref(ctx, "");
    return;
  }
  const std::vector<int64_t> ones(size_t(sp), 1);
  const auto st = ctx.attr_ints("strides", ones), dl = ctx.attr_ints("dilations", ones),
             pd = ctx.attr_ints("pads", std::vector<int64_t>(2 * size_t(sp), 0));
  ctx.check(int64_t(st.size()) == sp && int64_t(dl.size()) == sp && int64_t(pd.size()) == 2 * sp,
            "strides and dilations must have a value per spatial axis and pads two");
  std::vector<kernels::x86::PoolAxis> axes(static_cast<size_t>(sp));
  Shape ys{x0.dim(0), x0.dim(1)};
  for (size_t i = 0; i < size_t(sp); ++i) {
    kernels::x86::PoolAxis& a = axes[i];
    a.in = x0.dim(int64_t(i) + 2), a.k = ks[i], a.stride = st[i], a.dilation = dl[i], a.pad_begin = pd[i];
    ctx.check(a.k > 0 && a.stride > 0 && a.dilation > 0,
              "kernel_shape, strides and dilations must be positive");
    ctx.check(pd[i] >= 0 && pd[i + size_t(sp)] >= 0, "pads must not be negative");
    a.out = (a.in + pd[i] + pd[i + size_t(sp)] - a.dilation * (a.k - 1) - 1) / a.stride + 1;
    ctx.check(a.out > 0, "output would be empty");
    ys.push_back(a.out);
  }
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, x.dtype(), ys);
  if (q8) {
    kernels::x86::max_pool_separable_8bit(x.dtype() == DType::i8, axes, x0.dim(0) * x0.dim(1), x.raw_data(),
                                          y.raw_data(), ctx.pool());
    return;
  }
  kernels::x86::pool_separable_f32(is_max, ctx.attr_int("count_include_pad", 0) != 0, axes,
                                   x0.dim(0) * x0.dim(1), x.data<float>(), y.data<float>(), ctx.pool());
}

void max_pool_nchw_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const auto ks = ctx.attr_ints("kernel_shape");
  const bool f32_or_q8 = x0.dtype() == DType::f32 || x0.dtype() == DType::u8 || x0.dtype() == DType::i8;
  if (f32_or_q8 && (x0.rank() != 4 || !(ctx.num_outputs() > 1 && ctx.output_requested(1)))) {
    pool_separable_x86(ctx, true);
    return;
  }
  const bool indices = ctx.num_outputs() > 1 && ctx.output_requested(1);
  if (x0.dtype() != DType::f32 || x0.rank() != 4 || ks.size() != 2 || (ctx.num_outputs() > 1 && !indices) ||
      ctx.attr_int("ceil_mode", 0) != 0 || (indices && ctx.attr_int("storage_order", 0) > 1)) {
    run_ref(ctx, "");
    return;
  }
  kernels::x86::PoolParams pp;
  read_geometry(ctx, pp.g);
  pp.g.n = x0.dim(0) * x0.dim(1), pp.g.h = x0.dim(2), pp.g.w = x0.dim(3), pp.g.c = pp.g.oc = 1;
  pp.oh = pp.g.oh(), pp.ow = pp.g.ow();
  ctx.check(pp.oh > 0 && pp.ow > 0, "output would be empty");
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, {x0.dim(0), x0.dim(1), pp.oh, pp.ow});
  if (indices) {  // SegNet / ENet: the maxima's places for MaxUnpool (kernels/x86/pool_indices.h)
    Tensor& ix = ctx.output_for_overwrite(1, DType::i64, {x0.dim(0), x0.dim(1), pp.oh, pp.ow});
    kernels::x86::max_pool2d_indices_f32(pp, x.data<float>(), y.data<float>(), ix.data<int64_t>(),
                                         ctx.attr_int("storage_order", 0) == 1, ctx.pool());
    return;
  }
  kernels::x86::pool2d_nhwc_f32(pp, x.data<float>(), y.data<float>(), ctx.pool());
}

// A MatMul operand as the GEMM reads it: its matrices at data + base[i], each `trans` (a view of the last two
// dims swapped, Transpose's view for MatMul) or not, rows ld apart; anything else is copied contiguous first.
struct MatOperand {
  Tensor keep;
  const float* data = nullptr;
  bool trans = false;
  int64_t ld = 0;
  std::vector<int64_t> base;  // per matrix of the batch (the leading dims, row-major)
};

MatOperand mat_operand(const Tensor& t) {
  MatOperand o;
  const int64_t r = t.rank(), rows = t.dim(-2), cols = t.dim(-1);
  const std::vector<int64_t>& st = t.strides();
  const bool plain = t.is_contiguous(), trans = !plain && st[size_t(r - 2)] == 1 && st[size_t(r - 1)] >= rows;
  o.keep = plain || trans ? t : t.contiguous();
  o.data = o.keep.data<float>();
  o.trans = trans;
  o.ld = trans ? st[size_t(r - 1)] : cols;
  o.base = matrix_batch_bases(o.keep);
  return o;
}

// MatMul of f32 tensors of rank >= 2 whose batch dims are equal, or B 2-D; either operand may be a transposed
// view (mat_operand).
void matmul_x86(KernelContext& ctx) {
  const Tensor& a0 = ctx.required_input(0);
  const Tensor& b0 = ctx.required_input(1);
  if (a0.dtype() != DType::f32 || b0.dtype() != DType::f32 || a0.rank() < 2 || b0.rank() < 2) {
    run_ref(ctx, "");
    return;
  }
  const int64_t m = a0.dim(-2), k = a0.dim(-1), n = b0.dim(-1);
  const bool b_shared = b0.rank() == 2;
  bool same_batch = a0.rank() == b0.rank();
  for (int64_t i = 0; same_batch && i < a0.rank() - 2; ++i) same_batch = a0.dim(i) == b0.dim(i);
  if (b0.dim(-2) != k || !(b_shared || same_batch)) {
    run_ref(ctx, "");
    return;
  }
  const MatOperand a = mat_operand(a0), b = mat_operand(b0);
  Shape os = a0.shape();
  os.back() = n;
  Tensor& y = k > 0 ? ctx.output_for_overwrite(0, DType::f32, os) : ctx.output(0, DType::f32, os);
  const int64_t batch = int64_t(a.base.size());
  if (m == 0 || n == 0) return;
  if (b_shared && !a.trans) {  // (A then contiguous)
    // fold the batch into M: one GEMM
    kernels::x86::sgemm(batch * m, n, k, a.data, a.ld, false, b.data, b.ld, b.trans, y.data<float>(), n, {},
                        ctx.pool());
    return;
  }
  auto one = [&](int64_t i, ThreadPool* pool) {
    kernels::x86::sgemm(m, n, k, a.data + a.base[size_t(i)], a.ld, a.trans,
                        b.data + b.base[size_t(b_shared ? 0 : i)], b.ld, b.trans, y.data<float>() + i * m * n,
                        n, {}, pool);
  };
  ThreadPool* pool = ctx.pool();
  const int threads = pool ? pool->num_threads() : 1;
  if (threads > 1 && batch >= threads) {
    // attention-style batches of small products: whole products per thread, each single-threaded
    pool->run(threads, [&](int64_t t) {
      for (int64_t i = batch * t / threads; i < batch * (t + 1) / threads; ++i) one(i, nullptr);
    });
    return;
  }
  for (int64_t i = 0; i < batch; ++i) one(i, pool);
}

}  // namespace

KernelFn x86_fused_pw_dw_conv_kernel() {
  return fused_pw_dw_conv_x86;
}  // tests

// ONNX ReduceSum / Mean / SumSquare / L1 / L2 / Max / Min over float32 whose reduced axes are one contiguous
// run (all of them, the last, a channel axis, H and W of NCHW): reduce.h. Other axes, dtypes and empty
// reductions go to the reference kernel, which also reports bad axes.
// GlobalAveragePool / GlobalMaxPool over NCHW (any number of spatial dims): each (n, c) plane is one
// contiguous row reduced (the reference kernel indexed every element: 1.6 GB/s, 0.38 ms for 3 x 224 x 224).
void global_pool_x86(KernelContext& ctx, kernels::x86::ReduceKind kind) {
  const Tensor& x0 = ctx.required_input(0);
  const int64_t rank = x0.rank();
  if (x0.dtype() != DType::f32 || rank < 3) return run_ref(ctx, "");
  int64_t r = 1;
  for (int64_t d = 2; d < rank; ++d) r *= x0.dim(d);
  if (r == 0) return run_ref(ctx, "");
  Shape ys(size_t(rank), 1);
  ys[0] = x0.dim(0), ys[1] = x0.dim(1);
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, ys);
  kernels::x86::reduce_f32(kind, x.data<float>(), x0.dim(0) * x0.dim(1), r, 1, y.data<float>(), ctx.pool());
}

void reduce_x86(KernelContext& ctx, kernels::x86::ReduceKind kind) {
  const Tensor& x0 = ctx.required_input(0);
  const int64_t rank = x0.rank();
  std::vector<int64_t> axes;
  bool given = false;
  if (ctx.has_input(1)) {
    const Tensor& a = *ctx.input(1);
    if (!is_integer(a.dtype()) || a.rank() > 1) return run_ref(ctx, "");
    axes = a.to_int_vector(), given = true;
  } else if (ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes"), given = true;
  }
  if (!given || axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) return run_ref(ctx, "");
    axes.resize(size_t(rank));
    for (int64_t d = 0; d < rank; ++d) axes[size_t(d)] = d;
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return run_ref(ctx, "");
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[0] + int64_t(i)) return run_ref(ctx, "");  // repeated, or not one run
  if (x0.dtype() != DType::f32 || rank == 0) return run_ref(ctx, "");
  const int64_t a0 = axes.front(), a1 = axes.back() + 1;
  int64_t outer = 1, r = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < a0 ? outer : d < a1 ? r : inner) *= x0.dim(d);
  if (r == 0 || outer == 0 || inner == 0) return run_ref(ctx, "");  // an empty reduction or output
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  Shape ys;
  for (int64_t d = 0; d < rank; ++d)
    if (d < a0 || d >= a1)
      ys.push_back(x0.dim(d));
    else if (keep)
      ys.push_back(1);
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, ys);
  kernels::x86::reduce_f32(kind, x.data<float>(), outer, r, inner, y.data<float>(), ctx.pool());
}

// GridSample of a 4-D f32 input, bilinear or nearest, zeros or border padding (kernels/x86/grid_sample.h);
// anything else (bicubic, reflection, N-D, other types, mismatched shapes) goes to the reference.
bool claims_grid_sample(const ir::Node& n) {
  const Attribute* m = n.attr("mode");
  const Attribute* pm = n.attr("padding_mode");
  return (!m || m->s == "bilinear" || m->s == "linear" || m->s == "nearest") &&
         (!pm || pm->s == "zeros" || pm->s == "border");
}

void grid_sample_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& g0 = ctx.required_input(1);
  if (x0.dtype() != DType::f32 || g0.dtype() != DType::f32 || x0.rank() != 4 || g0.rank() != 4 ||
      g0.dim(0) != x0.dim(0) || g0.dim(3) != 2 || x0.dim(2) * x0.dim(3) >= (int64_t(1) << 31) ||
      x0.dim(2) == 0 || x0.dim(3) == 0)
    return run_ref(ctx, "");
  kernels::x86::GridSampleParams p;
  p.n = x0.dim(0), p.c = x0.dim(1), p.h = x0.dim(2), p.w = x0.dim(3), p.oh = g0.dim(1), p.ow = g0.dim(2);
  const std::string mode = ctx.attr_string("mode", ctx.opset() < 20 ? "bilinear" : "linear");
  p.nearest = mode == "nearest";
  p.border = ctx.attr_string("padding_mode", "zeros") == "border";
  p.align_corners = ctx.attr_int("align_corners", 0) != 0;
  const Tensor x = x0.contiguous(), g = g0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, {p.n, p.c, p.oh, p.ow});
  kernels::x86::grid_sample_f32(p, x.data<float>(), g.data<float>(), y.data<float>(), ctx.pool());
}

// RoiAlign of an f32 map with f32 boxes (kernels/x86/roi_align.h); the reference takes other types and
// reports every bad input (box coordinates not finite, batch indices out of range, bad attributes), and
// boxes so large that their sample grids would not fit in 32 bits.
void roi_align_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& r0 = ctx.required_input(1);
  const Tensor& b0 = ctx.required_input(2);
  const std::string mode = ctx.attr_string("mode", "avg"),
                    ctm = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  kernels::x86::RoiAlignParams p;
  p.oh = ctx.attr_int("output_height", 1), p.ow = ctx.attr_int("output_width", 1);
  p.sampling = ctx.attr_int("sampling_ratio", 0);
  p.spatial_scale = ctx.attr_float("spatial_scale", 1.0f);
  if (x0.dtype() != DType::f32 || r0.dtype() != DType::f32 || x0.rank() != 4 || r0.rank() != 2 ||
      r0.dim(1) != 4 || b0.rank() != 1 || b0.dim(0) != r0.dim(0) ||
      (b0.dtype() != DType::i64 && b0.dtype() != DType::i32) || (mode != "avg" && mode != "max") ||
      (ctm != "half_pixel" && ctm != "output_half_pixel") || p.oh <= 0 || p.ow <= 0 || p.sampling < 0 ||
      p.sampling > 4096 || x0.dim(2) * x0.dim(3) >= (int64_t(1) << 31) || x0.dim(2) == 0 || x0.dim(3) == 0 ||
      p.oh * p.ow > (int64_t(1) << 24))
    return run_ref(ctx, "");
  p.n = x0.dim(0), p.c = x0.dim(1), p.h = x0.dim(2), p.w = x0.dim(3);
  p.max_mode = mode == "max", p.half_pixel = ctm == "half_pixel";
  const Tensor rois = r0.contiguous();
  const std::vector<int64_t> batch = b0.to_int_vector();
  const float* rv = rois.data<float>();
  for (int64_t i = 0; i < rois.dim(0); ++i) {
    if (batch[size_t(i)] < 0 || batch[size_t(i)] >= p.n) return run_ref(ctx, "");
    for (int k = 0; k < 4; ++k) {
      const double v = double(rv[i * 4 + k]) * p.spatial_scale;
      if (!std::isfinite(v) || std::fabs(v) > 1e6) return run_ref(ctx, "");
    }
  }
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, {rois.dim(0), p.c, p.oh, p.ow});
  kernels::x86::roi_align_f32(p, x.data<float>(), rv, batch.data(), rois.dim(0), y.data<float>(), ctx.pool());
}

// MaxUnpool at its natural output size (or an output_shape equal to it), any element type: one scatter over a
// zeroed output (kernels/x86/pool_indices.h). A larger output_shape, bad attributes or an index out of range
// go to the reference, which moves the indices or names the bad one.
void max_unpool_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& i0 = ctx.required_input(1);
  const int64_t nsp = x0.rank() - 2;
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  const std::vector<int64_t> strides =
      ctx.attr_ints("strides", std::vector<int64_t>(size_t(std::max<int64_t>(nsp, 0)), 1));
  const std::vector<int64_t> pads =
      ctx.attr_ints("pads", std::vector<int64_t>(size_t(std::max<int64_t>(2 * nsp, 0)), 0));
  if (nsp < 1 || i0.dtype() != DType::i64 || i0.shape() != x0.shape() || int64_t(kernel.size()) != nsp ||
      int64_t(strides.size()) != nsp || int64_t(pads.size()) != 2 * nsp || x0.dtype() == DType::string)
    return run_ref(ctx, "");
  Shape os{x0.dim(0), x0.dim(1)};
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t d = (x0.dim(i + 2) - 1) * strides[size_t(i)] + kernel[size_t(i)] - pads[size_t(i)] -
                      pads[size_t(nsp + i)];
    if (d < 0 || x0.dim(i + 2) < 1 || strides[size_t(i)] < 1 || kernel[size_t(i)] < 1 ||
        pads[size_t(i)] < 0 || pads[size_t(nsp + i)] < 0)
      return run_ref(ctx, "");
    os.push_back(d);
  }
  if (ctx.has_input(2) && ctx.input(2)->to_int_vector() != os) return run_ref(ctx, "");
  const Tensor x = x0.contiguous(), idx = i0.contiguous();
  const int64_t total = shape_numel(os);
  const int64_t* iv = idx.data<int64_t>();
  for (int64_t j = 0; j < idx.numel(); ++j)
    if (iv[j] < 0 || iv[j] >= total) return run_ref(ctx, "");
  Tensor& y = ctx.output_for_overwrite(0, x.dtype(), os);
  kernels::x86::max_unpool_scatter(x.raw_data(), dtype_size(x.dtype()), iv, x.numel(), total, y.raw_data());
}

// NonMaxSuppression of f32 boxes and scores (kernels/x86/nms.h); the reference takes other types, scores with
// a NaN (its comparator's order there is its own), and reports every bad input.
void nms_x86(KernelContext& ctx) {
  const Tensor& b0 = ctx.required_input(0);
  const Tensor& s0 = ctx.required_input(1);
  const int64_t cpb = ctx.attr_int("center_point_box", 0);
  if (b0.dtype() != DType::f32 || s0.dtype() != DType::f32 || b0.rank() != 3 || b0.dim(2) != 4 ||
      s0.rank() != 3 || s0.dim(0) != b0.dim(0) || s0.dim(2) != b0.dim(1) || b0.dim(1) >= (int64_t(1) << 31) ||
      (cpb != 0 && cpb != 1))
    return run_ref(ctx, "");
  auto scalar = [&](size_t i) -> const Tensor* {
    const Tensor* t = ctx.input(i);
    return t && t->numel() > 0 ? t : nullptr;
  };
  kernels::x86::NmsParams p;
  p.batches = b0.dim(0), p.classes = s0.dim(1), p.boxes = b0.dim(1), p.center_point_box = cpb == 1;
  if (const Tensor* t = scalar(2)) p.max_out = std::max<int64_t>(t->at_int(0), 0);
  if (const Tensor* t = scalar(3)) p.iou_threshold = float(t->at_double(0));
  if (const Tensor* t = scalar(4)) p.has_score_threshold = true, p.score_threshold = float(t->at_double(0));
  const Tensor boxes = b0.contiguous(), scores = s0.contiguous();
  const float* sv = scores.data<float>();
  for (int64_t i = 0; i < scores.numel(); ++i)
    if (std::isnan(sv[i])) return run_ref(ctx, "");
  std::vector<int64_t> sel;
  kernels::x86::nms_f32(p, boxes.data<float>(), sv, sel);
  Tensor& y = ctx.output(0, DType::i64, {int64_t(sel.size() / 3), 3});
  std::copy(sel.begin(), sel.end(), y.data<int64_t>());
}

// x viewed as [outer, len, inner] around `axis` (negative counts from the end), or nullopt for an axis out
// of range.
struct AxisView {
  int64_t axis, outer, len, inner;
};
std::optional<AxisView> axis_view(const Tensor& x, int64_t axis) {
  const int64_t rank = x.rank();
  if (rank < 1 || axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  AxisView v{axis, 1, x.dim(axis), 1};
  for (int64_t d = 0; d < rank; ++d)
    if (d < axis)
      v.outer *= x.dim(d);
    else if (d > axis)
      v.inner *= x.dim(d);
  return v;
}

// ArgMax / ArgMin of f32 along any axis: along the last one (a decoder's token choice over its vocabulary)
// row by row, along another down columns, each column's best in vector lanes (kernels/x86/reduce.h, norm.h);
// other types go to the reference.
void arg_extreme_x86(KernelContext& ctx, bool max) {
  const Tensor& x0 = ctx.required_input(0);
  const auto v = axis_view(x0, ctx.attr_int("axis", 0));
  if (x0.dtype() != DType::f32 || !v || v->len == 0 || v->len >= (int64_t(1) << 31)) return run_ref(ctx, "");
  Shape ys;
  for (int64_t d = 0; d < x0.rank(); ++d)
    if (d != v->axis)
      ys.push_back(x0.dim(d));
    else if (ctx.attr_int("keepdims", 1) != 0)
      ys.push_back(1);
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::i64, ys);
  const bool last = ctx.attr_int("select_last_index", 0) != 0;
  if (v->inner == 1)
    kernels::x86::arg_extreme_f32(max, x.data<float>(), v->outer, v->len, last, y.data<int64_t>(),
                                  ctx.pool());
  else
    kernels::x86::arg_extreme_cols_f32(max, x.data<float>(), v->outer, v->len, v->inner, last,
                                       y.data<int64_t>(), ctx.pool());
}

// QuantizeLinear / DequantizeLinear between f32 and u8 / i8 with one scale and zero point (a QDQ model's
// activations; kernels/x86/quantize.h). Per-axis and blocked parameters, other types, `precision` and
// `output_dtype` go to the reference.
void quantize_linear_x86(KernelContext& ctx, bool quantize) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor& s = ctx.required_input(1);
  const Tensor* zp = ctx.input(2);
  const DType q = zp ? zp->dtype() : (quantize ? DType::u8 : x0.dtype());
  const bool ok =
      (quantize ? x0.dtype() == DType::f32 : (x0.dtype() == DType::u8 || x0.dtype() == DType::i8)) &&
      (q == DType::u8 || q == DType::i8) && (quantize || q == x0.dtype()) && s.dtype() == DType::f32 &&
      s.numel() == 1 && (!zp || zp->numel() == 1) && ctx.attr_int("output_dtype", 0) == 0 &&
      ctx.attr_int("precision", 0) == 0;
  if (!ok) return run_ref(ctx, "");
  const float scale = s.contiguous().data<float>()[0];
  const int32_t z = !zp              ? 0
                    : q == DType::u8 ? int32_t(zp->contiguous().data<uint8_t>()[0])
                                     : int32_t(zp->contiguous().data<int8_t>()[0]);
  const Tensor x = x0.contiguous();
  const int64_t n = x.numel();
  if (quantize) {
    Tensor& y = ctx.output_for_overwrite(0, q, x.shape());
    if (q == DType::u8)
      kernels::x86::quantize_u8_f32(x.data<float>(), n, scale, z, y.data<uint8_t>(), ctx.pool());
    else
      kernels::x86::quantize_i8_f32(x.data<float>(), n, scale, z, y.data<int8_t>(), ctx.pool());
  } else {
    Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
    if (q == DType::u8)
      kernels::x86::dequantize_u8_f32(x.data<uint8_t>(), n, scale, z, y.data<float>(), ctx.pool());
    else
      kernels::x86::dequantize_i8_f32(x.data<int8_t>(), n, scale, z, y.data<float>(), ctx.pool());
  }
}

// DynamicQuantizeLinear of f32 (a dynamically quantized model quantizes every int8 GEMM's input with it):
// the range on one vectorized pass, then the per-tensor quantize kernel; scale and zero point as the
// reference computes them.
void dynamic_quantize_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  if (!x0 || x0->dtype() != DType::f32) return run_ref(ctx, "");
  const Tensor x = x0->contiguous();
  float mn = 0, mx = 0;
  kernels::x86::minmax0_f32(x.data<float>(), x.numel(), &mn, &mx);
  const float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
  const float zp = std::nearbyint(std::clamp(0.0f - mn / scale, 0.0f, 255.0f));
  Tensor& y = ctx.output_for_overwrite(0, DType::u8, x.shape());
  kernels::x86::quantize_u8_f32(x.data<float>(), x.numel(), scale, int32_t(zp), y.data<uint8_t>(),
                                ctx.pool());
  ctx.output(1, DType::f32, {}).data<float>()[0] = scale;
  ctx.output(2, DType::u8, {}).data<uint8_t>()[0] = uint8_t(zp);
}

// CumSum of f32 along one axis (kernels/x86/reduce.h); other types and bad axes go to the reference (which
// reports them).
void cumsum_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor* at = ctx.input(1);
  if (x0.dtype() != DType::f32 || !at || (at->dtype() != DType::i64 && at->dtype() != DType::i32) ||
      at->numel() != 1)
    return run_ref(ctx, "");
  const auto v = axis_view(x0, at->at_int(0));
  if (!v) return run_ref(ctx, "");
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  kernels::x86::cumsum_f32(x.data<float>(), v->outer, v->len, v->inner, ctx.attr_int("exclusive", 0) != 0,
                           ctx.attr_int("reverse", 0) != 0, y.data<float>(), ctx.pool());
}

// The tuned kernels of CumSum, ArgMax and ArgMin themselves, for the unit tests.
KernelFn x86_axis_kernel(const std::string& op);
KernelFn x86_axis_kernel(const std::string& op) {
  if (op == "CumSum") return cumsum_x86;
  if (op == "ArgMax") return [](KernelContext& c) { arg_extreme_x86(c, true); };
  if (op == "ArgMin") return [](KernelContext& c) { arg_extreme_x86(c, false); };
  return nullptr;
}

void register_x86_bindings() {
  add_tuned_kernel("tessera", "FusedGemm", {}, fused_gemm_x86);
  add_tuned_kernel("tessera", "FusedConv", {}, fused_conv_x86);
  add_tuned_kernel("tessera", "FusedPwDwConv", {}, fused_pw_dw_conv_x86);
  add_tuned_kernel("tessera", "NhwcMaxPool", {}, [](KernelContext& c) { nhwc_pool_x86(c, true); });
  add_tuned_kernel("tessera", "NhwcAveragePool", {}, [](KernelContext& c) { nhwc_pool_x86(c, false); });
  add_tuned_kernel("tessera", "NhwcGlobalAveragePool", {}, nhwc_gap_x86);
  add_tuned_kernel("", "MaxPool", claims_pool, max_pool_nchw_x86);
  add_tuned_kernel("", "AveragePool", claims_pool, [](KernelContext& c) { pool_separable_x86(c, false); });
  add_tuned_kernel("", "ConvTranspose", claims_conv_transpose, conv_transpose_x86);
  add_tuned_kernel("", "Conv", claims_conv, [](KernelContext& c) { conv_nchw_x86(c, false); });
  add_tuned_kernel("", "Resize", {}, resize_x86);
  add_tuned_kernel("", "Upsample", {}, resize_x86);  // opsets 7-9: the same plan (kernels/ref/resize.h)
  add_tuned_kernel(
      "", "LSTM", [](const ir::Node& n) { return claims_recurrent(n, true); },
      [](KernelContext& c) { recurrent_x86(c, true, false); });
  add_tuned_kernel(
      "", "GRU", [](const ir::Node& n) { return claims_recurrent(n, false); },
      [](KernelContext& c) { recurrent_x86(c, false, false); });
  add_tuned_kernel("tessera", "PackedRecurrent", {}, packed_recurrent_x86);
  add_tuned_kernel("", "MatMul", {}, matmul_x86);
  using kernels::x86::ReduceKind;
  add_tuned_kernel("", "GlobalAveragePool", {},
                   [](KernelContext& c) { global_pool_x86(c, ReduceKind::mean); });
  add_tuned_kernel("", "GlobalMaxPool", {}, [](KernelContext& c) { global_pool_x86(c, ReduceKind::max); });
  add_tuned_kernel("", "ReduceSum", {}, [](KernelContext& c) { reduce_x86(c, ReduceKind::sum); });
  add_tuned_kernel("", "CumSum", {}, cumsum_x86);
  add_tuned_kernel("", "DynamicQuantizeLinear", {}, dynamic_quantize_x86);
  add_tuned_kernel("", "QuantizeLinear", {}, [](KernelContext& c) { quantize_linear_x86(c, true); });
  add_tuned_kernel("", "DequantizeLinear", {}, [](KernelContext& c) { quantize_linear_x86(c, false); });
  add_tuned_kernel("", "ArgMax", {}, [](KernelContext& c) { arg_extreme_x86(c, true); });
  add_tuned_kernel("", "ArgMin", {}, [](KernelContext& c) { arg_extreme_x86(c, false); });
  add_tuned_kernel("", "GridSample", claims_grid_sample, grid_sample_x86);
  add_tuned_kernel("", "RoiAlign", {}, roi_align_x86);
  add_tuned_kernel("", "NonMaxSuppression", {}, nms_x86);
  add_tuned_kernel("", "MaxUnpool", {}, max_unpool_x86);
  add_tuned_kernel("", "ReduceMean", {}, [](KernelContext& c) { reduce_x86(c, ReduceKind::mean); });
  add_tuned_kernel("", "ReduceSumSquare", {},
                   [](KernelContext& c) { reduce_x86(c, ReduceKind::sum_square); });
  add_tuned_kernel("", "ReduceL1", {}, [](KernelContext& c) { reduce_x86(c, ReduceKind::l1); });
  add_tuned_kernel("", "ReduceL2", {}, [](KernelContext& c) { reduce_x86(c, ReduceKind::l2); });
  add_tuned_kernel("", "ReduceMax", {}, [](KernelContext& c) { reduce_x86(c, ReduceKind::max); });
  add_tuned_kernel("", "ReduceMin", {}, [](KernelContext& c) { reduce_x86(c, ReduceKind::min); });
  void register_x86_eltwise_bindings();
  register_x86_eltwise_bindings();  // kfast: until cpu_backend.cpp calls it
  void register_x86_concat_bindings();
  register_x86_concat_bindings();
  void register_x86_tile_bindings();
  register_x86_tile_bindings();
  void register_x86_gather_bindings();
  register_x86_gather_bindings();
  void register_x86_pad_bindings();
  register_x86_pad_bindings();
  void register_x86_norm_bindings();
  register_x86_norm_bindings();
  void register_x86_qlinear_bindings();
  register_x86_qlinear_bindings();
  void register_x86_cast_bindings();
  register_x86_cast_bindings();
}

}  // namespace tessera::backends::cpu
