// Reference kernels: Tessera's fused ops (see src/ir/ops/fused.cpp). Plain
// loops in double — the oracle the tuned CPU versions are tested against.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "core/ew_program.h"
#include "kernels/ref/broadcast.h"
#include "kernels/ref/misc_util.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/conv3d.h"
#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemm_amx.h"

namespace tessera::kernels::ref {

namespace {

double activate(double v, const std::string& act, double lo, double hi) {
  if (act == "Relu") return v > 0 ? v : 0;
  if (act == "Clip") return std::min(std::max(v, lo), hi);
  if (act == "Silu") return v / (1.0 + std::exp(-v));
  if (act == "HardSwish") return v * std::max(0.0, std::min(1.0, v / 6.0 + 0.5));
  if (act == "Gelu") return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  if (act == "GeluTanh")
    return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
  return v;
}

// The activation attribute, checked against what the op supports (GELUs: FusedGemm only).
std::string activation_attr(KernelContext& ctx, const char* key, bool gelu) {
  std::string act = ctx.attr_string(key, "");
  ctx.check(act.empty() || act == "Relu" || act == "Clip" || act == "Silu" || act == "HardSwish" ||
                (gelu && (act == "Gelu" || act == "GeluTanh")),
            "unsupported ", key, " '", act, "'");
  return act;
}

void fused_gemm(KernelContext& ctx) {
  const Tensor a = ctx.required_input(0).contiguous();
  const Tensor& bp = ctx.required_input(1);
  const Tensor* bias = ctx.input(2);
  const int64_t k = ctx.required_attr_int("K"), n = ctx.required_attr_int("N");
  const int64_t kc = ctx.required_attr_int("kc"), nr = ctx.required_attr_int("nr");
  const bool coded = ctx.attr_int("coded", 0) != 0;
  ctx.check(a.dtype() == DType::f32 && bp.dtype() == (coded ? DType::u8 : DType::f32),
            "FusedGemm takes float32 (coded weights: uint8)");
  ctx.check(a.rank() >= 1 && a.dim(-1) == k, "A ", a.text(), " does not have K = ", k, " columns");
  const int64_t a_rank = ctx.attr_int("a_rank", 0);
  ctx.check(a_rank == 0 || a.rank() == a_rank, "A must have rank ", a_rank, " (Gemm), got ", a.text());
  const bool strassen = ctx.attr_int("strassen", 0) != 0;
  ctx.check(!strassen || (k % 2 == 0 && n % 2 == 0), "Strassen packing needs an even K and N");
  ctx.check(!(coded && strassen), "FusedGemm: coded and strassen exclude each other");
  const bool split = ctx.attr_int("split", 0) != 0;
  ctx.check(!split || (!coded && !strassen), "FusedGemm: split excludes coded and strassen");
  ctx.check(coded || size_t(bp.numel()) == (strassen ? x86::StrassenB::packed_floats(k, n, kc, nr)
                                                     : x86::PackedB::packed_floats(k, n, kc, nr) +
                                                           (split ? x86::split_b_floats(k, n) : 0)),
            "packed B has the wrong size");
  if (coded)  // checks the coding's header and size (an error naming what is wrong)
    x86::CodedB::view(bp.data<uint8_t>(), bp.nbytes(), k, n, kc, nullptr);
  const std::string act = activation_attr(ctx, "activation", true);
  const double lo = ctx.attr_float("clip_min", 0), hi = ctx.attr_float("clip_max", 0);
  Shape os = a.shape();
  os.back() = n;
  const Tensor* res0 = ctx.input(3);
  ctx.check(!bias || (bias->dtype() == DType::f32 && bias->numel() == n), "bias must be float32[", n, "]");
  ctx.check(!res0 || res0->dtype() == DType::f32, "Residual must be float32");
  const int64_t m = k ? a.numel() / k : 0;
  const float* ap = a.data<float>();
  const float* bd = coded ? nullptr : bp.data<float>();
  const float* bb = bias ? bias->data<float>() : nullptr;
  std::vector<double> prod(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bb ? bb[j] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ap[i * k + p]) * (coded ? x86::CodedB::at(bp.data<uint8_t>(), bp.nbytes(), k, n, kc, p, j)
                                      : strassen ? x86::StrassenB::at(bd, k, n, kc, nr, p, j)
                                                 : x86::PackedB::at(bd, k, n, kc, nr, p, j));
      prod[size_t(i * n + j)] = s;
    }
  if (!res0) {
    float* yp = ctx.output(0, DType::f32, os).data<float>();
    for (int64_t i = 0; i < m * n; ++i) yp[i] = float(activate(prod[size_t(i)], act, lo, hi));
    return;
  }
  // The residual broadcasts against the product (numpy rules), as the Add it replaces.
  const Tensor res = res0->contiguous();
  const Shape ys = broadcast_shape(os, res.shape());
  float* yp = ctx.output(0, DType::f32, ys).data<float>();
  const float* rp = res.data<float>();
  BroadcastIndexer(ys, {os, res.shape()}).for_each([&](int64_t o, const int64_t* in) {
    yp[o] = float(activate(prod[size_t(in[0])] + rp[in[1]], act, lo, hi));
  });
}

// Conv geometry read from the attributes, checked.
struct ConvGeom {
  std::vector<int64_t> ks, st, dl, pd;
  int64_t g = 1;
};

ConvGeom conv_geom(KernelContext& ctx) {
  ConvGeom c{ctx.attr_ints("kernel_shape"), ctx.attr_ints("strides", {1, 1}),
             ctx.attr_ints("dilations", {1, 1}), ctx.attr_ints("pads", {0, 0, 0, 0}),
             ctx.attr_int("group", 1)};
  ctx.check(c.ks.size() == 2 && c.st.size() == 2 && c.dl.size() == 2 && c.pd.size() == 4,
            "kernel_shape, strides, dilations must have 2 values and pads 4");
  for (int i = 0; i < 2; ++i)
    ctx.check(c.ks[size_t(i)] > 0 && c.st[size_t(i)] > 0 && c.dl[size_t(i)] > 0,
              "kernel_shape, strides and dilations must be positive");
  for (int64_t v : c.pd) ctx.check(v >= 0, "pads must not be negative");
  return c;
}

// A 3-D FusedConv: layout NCHW (ONNX Conv's 5-D tensors) or NCDHW (depth taps packed, conv3d.h).
void fused_conv3d(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor w = ctx.required_input(1).contiguous();
  const Tensor* b = ctx.input(2);
  const Tensor* res = ctx.input(3);
  const std::string layout = ctx.attr_string("layout", "NCHW");
  ctx.check(layout == "NCHW" || layout == "NCDHW", "a 3-D FusedConv is layout NCHW or NCDHW, not ", layout);
  const bool packed = layout == "NCDHW";
  ctx.check(x.dtype() == DType::f32 && w.dtype() == DType::f32 && x.rank() == 5,
            "a 3-D FusedConv takes 5-D float32 tensors");
  const auto ks = ctx.attr_ints("kernel_shape"), st = ctx.attr_ints("strides", {1, 1, 1}),
             dl = ctx.attr_ints("dilations", {1, 1, 1}), pd = ctx.attr_ints("pads", {0, 0, 0, 0, 0, 0});
  ctx.check(ks.size() == 3 && st.size() == 3 && dl.size() == 3 && pd.size() == 6,
            "kernel_shape, strides, dilations must have 3 values and pads 6");
  for (size_t i = 0; i < 3; ++i)
    ctx.check(ks[i] > 0 && st[i] > 0 && dl[i] > 0, "kernel_shape, strides and dilations must be positive");
  for (int64_t v : pd) ctx.check(v >= 0, "pads must not be negative");
  const std::vector<int64_t> ws =
      packed ? ctx.attr_ints("weight_shape") : std::vector<int64_t>(w.shape().begin(), w.shape().end());
  ctx.check(ws.size() == 5, "weights must be 5-D");
  const int64_t g = ctx.attr_int("group", 1), n = x.dim(0), c = x.dim(1), oc = ws[0];
  ctx.check(g > 0 && oc > 0 && c % g == 0 && oc % g == 0 && ws[1] == c / g,
            "channels do not match the groups");
  ctx.check(ws[2] == ks[0] && ws[3] == ks[1] && ws[4] == ks[2], "weights do not match kernel_shape");
  x86::Conv3dParams p;  // a packing's geometry (conv3d.h)
  p.n = n, p.s.c = c, p.d = x.dim(2), p.s.h = x.dim(3), p.s.w = x.dim(4), p.s.oc = oc, p.s.groups = g;
  p.kd = ks[0], p.s.kh = ks[1], p.s.kw = ks[2];
  const int wino = packed ? int(ctx.attr_int("winograd", 0)) : 0;
  if (packed) {
    ctx.check(x86::conv3d_applies(p), "packed 3-D FusedConv weights are dense, depthwise or grouped");
    ctx.check(wino == 0 || (g == 1 && ks[1] == 3 && ks[2] == 3 && st[1] == 1 && st[2] == 1 && dl[1] == 1 &&
                            dl[2] == 1 && (wino == 2 || wino == 4)),
              "winograd = 2 or 4 needs dense 3x3 taps of stride 1 and dilation 1");
    ctx.check(size_t(w.numel()) == size_t(p.kd) * x86::conv3d_slice_floats(p, wino),
              "packed weights have the wrong size");
  }
  int64_t out[3];
  for (size_t i = 0; i < 3; ++i) {
    out[i] = (x.dim(int64_t(i) + 2) + pd[i] + pd[i + 3] - dl[i] * (ks[i] - 1) - 1) / st[i] + 1;
    ctx.check(out[i] > 0, "output would be empty");
  }
  if (b) ctx.check(b->numel() == oc, "bias must have ", oc, " elements");
  Tensor& y = ctx.output(0, DType::f32, {n, oc, out[0], out[1], out[2]});
  if (res) ctx.check(res->shape() == y.shape(), "residual ", res->text(), " does not match the output");
  const std::string act = activation_attr(ctx, "activation", false);
  const double lo = ctx.attr_float("clip_min", 0), hi = ctx.attr_float("clip_max", 0);
  const Tensor rc = res ? res->contiguous() : Tensor();
  const int64_t cg = c / g, ocg = oc / g, in[3] = {x.dim(2), x.dim(3), x.dim(4)};
  const float *xp = x.data<float>(), *wp = w.data<float>();
  float* yp = y.data<float>();
  int64_t idx = 0;
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t a0 = 0; a0 < out[0]; ++a0)
        for (int64_t a1 = 0; a1 < out[1]; ++a1)
          for (int64_t a2 = 0; a2 < out[2]; ++a2, ++idx) {
            double s = b ? b->data<float>()[o] : 0.0;
            const int64_t gi = o / ocg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t t = 0; t < ks[0]; ++t)
                for (int64_t r = 0; r < ks[1]; ++r)
                  for (int64_t q = 0; q < ks[2]; ++q) {
                    const int64_t i0 = a0 * st[0] - pd[0] + t * dl[0], i1 = a1 * st[1] - pd[1] + r * dl[1],
                                  i2 = a2 * st[2] - pd[2] + q * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const double wv = packed ? x86::conv3d_packed_at(wp, p, wino, o, ci, t, r, q)
                                             : wp[(((o * cg + ci) * ks[0] + t) * ks[1] + r) * ks[2] + q];
                    s += double(xp[(((bi * c + gi * cg + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2]) * wv;
                  }
            if (res) s += rc.data<float>()[idx];
            yp[idx] = float(activate(s, act, lo, hi));
          }
}

void fused_conv(KernelContext& ctx) {
  if (ctx.attr_ints("kernel_shape").size() == 3) return fused_conv3d(ctx);
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor w = ctx.required_input(1).contiguous();
  const Tensor* b = ctx.input(2);
  const Tensor* res = ctx.input(3);
  const bool nhwc = ctx.attr_string("layout", "NCHW") == "NHWC";
  ctx.check(x.dtype() == DType::f32 && w.dtype() == DType::f32, "FusedConv takes float32");
  const ConvGeom cg_ = conv_geom(ctx);
  const auto &ks = cg_.ks, &st = cg_.st, &dl = cg_.dl, &pd = cg_.pd;
  const int64_t g = cg_.g;
  ctx.check(x.rank() == 4, "FusedConv is 2-D");
  std::vector<int64_t> wshape;
  if (nhwc) {
    wshape = ctx.attr_ints("weight_shape");
    ctx.check(wshape.size() == 4, "weight_shape must have 4 values");
  } else {
    ctx.check(w.rank() == 4, "FusedConv is 2-D");
    wshape = {w.dim(0), w.dim(1), w.dim(2), w.dim(3)};
  }
  // layout NHWC with input_layout NCHW: the input alone is NCHW (a stem conv)
  const bool x_nhwc = nhwc && ctx.attr_string("input_layout", "NHWC") != "NCHW";
  const int64_t n = x.dim(0), c = x_nhwc ? x.dim(3) : x.dim(1), h = x_nhwc ? x.dim(1) : x.dim(2),
                wd = x_nhwc ? x.dim(2) : x.dim(3), oc = wshape[0];
  ctx.check(g > 0 && oc > 0 && c % g == 0 && oc % g == 0 && wshape[1] == c / g,
            "channels do not match the groups");
  ctx.check(wshape[2] == ks[0] && wshape[3] == ks[1], "weights do not match kernel_shape");
  const int64_t oh = (h + pd[0] + pd[2] - dl[0] * (ks[0] - 1) - 1) / st[0] + 1;
  const int64_t ow = (wd + pd[1] + pd[3] - dl[1] * (ks[1] - 1) - 1) / st[1] + 1;
  ctx.check(oh > 0 && ow > 0, "output would be empty");
  const int64_t cg = c / g, ocg = oc / g, taps = ks[0] * ks[1];
  const bool dw = nhwc && g > 1 && g == c && g == oc;
  x86::Conv2dParams gp;  // a grouped NHWC conv's packing (conv_nhwc.h)
  gp.c = c, gp.oc = oc, gp.groups = g, gp.kh = ks[0], gp.kw = ks[1];
  const bool grouped = nhwc && g > 1 && !dw;
  const int64_t wino_m = nhwc ? ctx.attr_int("winograd", 0) : 0;
  const bool wino = wino_m != 0;
  ctx.check(x_nhwc || !nhwc || (g == 1 && !wino), "input_layout NCHW needs a dense direct conv");
  if (wino) {
    gp.sh = st[0], gp.sw = st[1], gp.dh = dl[0], gp.dw = dl[1];
    ctx.check((wino_m == 2 || wino_m == 4) && x86::wino_applies(gp),
              "winograd = 2 or 4 needs a 3x3 conv of stride 1, dense or in groups it takes");
    ctx.check(size_t(w.numel()) == x86::wino_packed_floats(oc, cg, int(wino_m), g),
              "Winograd weights have the wrong size");
  } else if (nhwc) {
    ctx.check(g == 1 || dw || x86::conv_grouped_applies(gp),
              "NHWC FusedConv is dense, depthwise or grouped as the NHWC kernels take");
    const size_t want = dw        ? size_t(c * taps)
                        : grouped ? x86::grouped_nhwc_packed_floats(gp)
                                  : x86::conv_nhwc_packed_floats(oc, c * taps);
    ctx.check(size_t(w.numel()) == want, "packed weights have ", w.numel(), " floats, not ", want);
  }
  if (b) ctx.check(b->numel() == oc, "bias must have ", oc, " elements");
  Tensor& y = ctx.output(0, DType::f32, nhwc ? Shape{n, oh, ow, oc} : Shape{n, oc, oh, ow});
  if (res) ctx.check(res->shape() == y.shape(), "residual ", res->text(), " does not match the output");
  const std::string act = activation_attr(ctx, "activation", false);
  const double lo = ctx.attr_float("clip_min", 0), hi = ctx.attr_float("clip_max", 0);
  const Tensor rc = res ? res->contiguous() : Tensor();
  const float *xp = x.data<float>(), *wp = w.data<float>();
  float* yp = y.data<float>();
  auto xat = [&](int64_t bi, int64_t ch, int64_t iy, int64_t ix) {
    return x_nhwc ? xp[((bi * h + iy) * wd + ix) * c + ch] : xp[((bi * c + ch) * h + iy) * wd + ix];
  };
  auto wat = [&](int64_t o, int64_t ci, int64_t r, int64_t q) {
    if (!nhwc) return wp[((o * cg + ci) * ks[0] + r) * ks[1] + q];
    if (dw) return wp[(r * ks[1] + q) * c + o];
    if (grouped) return x86::grouped_nhwc_packed_at(wp, gp, o, ci, r * ks[1] + q);
    if (wino) return x86::wino_weight_at(wp, oc, cg, int(wino_m), o, ci, r, q, g);
    return x86::conv_nhwc_packed_at(wp, oc, c * taps, o, (r * ks[1] + q) * c + ci);
  };
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = b ? b->data<float>()[o] : 0.0;
          const int64_t gi = o / ocg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t r = 0; r < ks[0]; ++r)
              for (int64_t q = 0; q < ks[1]; ++q) {
                const int64_t iy = oy * st[0] - pd[0] + r * dl[0], ix = ox * st[1] - pd[1] + q * dl[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += double(xat(bi, gi * cg + ci, iy, ix)) * wat(o, ci, r, q);
              }
          const int64_t idx =
              nhwc ? ((bi * oh + oy) * ow + ox) * oc + o : ((bi * oc + o) * oh + oy) * ow + ox;
          if (res) s += rc.data<float>()[idx];
          yp[idx] = float(activate(s, act, lo, hi));
        }
}

// MaxPool (NaN propagates) or AveragePool (in double) over NHWC.
template <bool kMax>
void nhwc_pool(KernelContext& ctx) {
  const Tensor x0 = ctx.required_input(0).contiguous();
  const bool bytes = kMax && (x0.dtype() == DType::u8 || x0.dtype() == DType::i8);  // an int8 region's
  ctx.check((x0.dtype() == DType::f32 || bytes) && x0.rank() == 4, ctx.op_type(),
            " takes a 4-D float32 tensor (NhwcMaxPool also uint8 / int8)");
  // bytes run as floats (exact) and come back
  Tensor x = x0;
  if (bytes) {
    const std::vector<double> d = x0.to_double_vector();
    x = Tensor::from_vector(std::vector<float>(d.begin(), d.end()), x0.shape());
  }
  const ConvGeom cg_ = conv_geom(ctx);
  const auto &ks = cg_.ks, &st = cg_.st, &dl = cg_.dl, &pd = cg_.pd;
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const int64_t n = x.dim(0), h = x.dim(1), wd = x.dim(2), c = x.dim(3);
  const int64_t oh = (h + pd[0] + pd[2] - dl[0] * (ks[0] - 1) - 1) / st[0] + 1;
  const int64_t ow = (wd + pd[1] + pd[3] - dl[1] * (ks[1] - 1) - 1) / st[1] + 1;
  ctx.check(oh > 0 && ow > 0, "output would be empty");
  Tensor yf(DType::f32, bytes ? Shape{n, oh, ow, c} : Shape{0});
  Tensor& y = bytes ? yf : ctx.output(0, DType::f32, {n, oh, ow, c});
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ch = 0; ch < c; ++ch) {
          float m = -std::numeric_limits<float>::infinity();
          double sum = 0;
          int64_t count = 0;
          for (int64_t r = 0; r < ks[0]; ++r)
            for (int64_t q = 0; q < ks[1]; ++q) {
              const int64_t iy = oy * st[0] - pd[0] + r * dl[0], ix = ox * st[1] - pd[1] + q * dl[1];
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              const float v = xp[((bi * h + iy) * wd + ix) * c + ch];
              ++count;
              sum += v;
              if (std::isnan(v) || v > m) m = std::isnan(m) ? m : v;
            }
          if (include_pad) count = ks[0] * ks[1];  // ceil_mode 0: the whole window is in the padded input
          yp[((bi * oh + oy) * ow + ox) * c + ch] = kMax    ? m
                                                    : count ? float(sum / double(count))
                                                            : std::numeric_limits<float>::quiet_NaN();
        }
  if (bytes) {
    const std::vector<double> d = yf.to_double_vector();
    misc::from_doubles(ctx.output(0, x0.dtype(), {n, oh, ow, c}), d, /*saturate=*/true);
  }
}

// Mean over H and W of an NHWC tensor, in double; Y is [N, C, 1, 1].
void nhwc_global_average_pool(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  ctx.check(x.dtype() == DType::f32 && x.rank() == 4, "NhwcGlobalAveragePool takes a 4-D float32 tensor");
  const int64_t n = x.dim(0), hw = x.dim(1) * x.dim(2), c = x.dim(3);
  Tensor& y = ctx.output(0, DType::f32, {n, c, 1, 1});
  const float* xp = x.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0;
      for (int64_t i = 0; i < hw; ++i) s += xp[(b * hw + i) * c + ch];
      y.data<float>()[b * c + ch] = float(hw ? s / double(hw) : std::nan(""));
    }
}

// ChannelShuffle (ir/ops/fused.cpp): each output channel's source worked out from the definition, one
// element (of any fixed-size type) at a time.
void channel_shuffle(KernelContext& ctx) {
  const size_t n = ctx.num_inputs();
  std::vector<Tensor> x;
  for (size_t i = 0; i < n; ++i) x.push_back(ctx.required_input(i).contiguous());
  const int64_t r = x[0].rank(), axis = ctx.attr_int("axis", -1), groups = ctx.attr_int("groups", 0);
  const std::vector<int64_t> splits = ctx.attr_ints("splits");
  ctx.check(axis >= 0 && axis < r, "ChannelShuffle: axis ", axis, " of a rank-", r, " tensor");
  ctx.check(x[0].dtype() != DType::string, "ChannelShuffle: string tensors are not supported");
  std::vector<int64_t> first(n + 1, 0);  // input i holds channels [first[i], first[i + 1]) of the concat
  for (size_t i = 0; i < n; ++i) {
    ctx.check(x[i].dtype() == x[0].dtype() && x[i].rank() == r, "ChannelShuffle: input ", i, " is ",
              x[i].text(), ", input 0 ", x[0].text());
    for (int64_t d = 0; d < r; ++d)
      ctx.check(d == axis || x[i].dim(d) == x[0].dim(d), "ChannelShuffle: input ", i, " is ", x[i].text(),
                ", input 0 ", x[0].text());
    first[i + 1] = first[i] + x[i].dim(axis);
  }
  const int64_t c = first[n];
  int64_t total = 0;
  for (int64_t sp : splits) total += sp;
  ctx.check(groups > 0 && c % groups == 0 && splits.size() == ctx.num_outputs() && total == c,
            "ChannelShuffle: ", c, " channels in ", groups, " groups, splits adding to ", total, " for ",
            ctx.num_outputs(), " outputs");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[0].dim(d);
  for (int64_t d = axis + 1; d < r; ++d) inner *= x[0].dim(d);
  const size_t es = dtype_size(x[0].dtype());
  int64_t k = 0;  // the shuffle's channel
  for (size_t o = 0; o < splits.size(); ++o) {
    Shape shape = x[0].shape();
    shape[size_t(axis)] = splits[o];
    Tensor& y = ctx.output_for_overwrite(o, x[0].dtype(), shape);
    auto* yp = static_cast<uint8_t*>(y.raw_data());
    for (int64_t q = 0; q < splits[o]; ++q, ++k) {
      const int64_t z = k % groups * (c / groups) + k / groups;  // its channel of the concat
      const size_t i = size_t(std::upper_bound(first.begin(), first.end(), z) - first.begin() - 1);
      const int64_t ci = x[i].dim(axis);
      const auto* xp = static_cast<const uint8_t*>(x[i].raw_data());
      for (int64_t b = 0; b < outer; ++b)
        std::memcpy(yp + size_t((b * splits[o] + q) * inner) * es,
                    xp + size_t((b * ci + z - first[i]) * inner) * es, size_t(inner) * es);
    }
  }
}

// Evaluates the program element by element in float (each instruction rounds
// as the unfused op would), inputs broadcast numpy-style.
void fused_elementwise(KernelContext& ctx) {
  const int64_t n_in = int64_t(ctx.num_inputs());
  const auto prog = ew_decode(ctx.attr_ints("program"), n_in, ctx.attr_int("num_registers", -1));
  ctx.check(prog.has_value(), "malformed elementwise program");
  std::vector<Tensor> in;
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < n_in; ++i) {
    const Tensor& t = ctx.required_input(size_t(i));
    ctx.check(t.dtype() == DType::f32, "FusedElementwise takes float32, input ", i, " is ", t.text());
    in.push_back(t.contiguous());
    shapes.push_back(t.shape());
  }
  const BroadcastIndexer bi(broadcast_shape(shapes), shapes);
  Tensor& y = ctx.output(0, DType::f32, bi.shape());
  float* yp = y.data<float>();
  std::vector<float> regs(size_t(ctx.attr_int("num_registers", 0)));
  bi.for_each([&](int64_t o, const int64_t* idx) {
    auto get = [&](int32_t k) {
      return k < n_in ? in[size_t(k)].data<float>()[idx[k]] : regs[size_t(k - n_in)];
    };
    float v = 0;
    for (const EwInstr& ins : *prog) {
      v = ew_apply(ins.op, get(ins.a), ins.b >= 0 ? get(ins.b) : 0.0f);
      if (ins.dst >= 0) regs[size_t(ins.dst - n_in)] = v;
    }
    yp[o] = v;
  });
}

// Runs one reference kernel on given inputs (FusedAttention is defined as the
// composition of the ops it replaces, so every shape, broadcast and error is
// exactly theirs).
class SubCall : public KernelContext {
 public:
  SubCall(const KernelContext& parent, std::string op, std::vector<DataValue> in, AttrMap attrs = {},
          std::string domain = "")
      : parent_(parent),
        op_(std::move(op)),
        domain_(std::move(domain)),
        in_(std::move(in)),
        attrs_(std::move(attrs)),
        out_(1) {}
  const std::string& node_name() const override { return parent_.node_name(); }
  const std::string& op_type() const override { return op_; }
  int opset() const override { return 23; }
  size_t num_inputs() const override { return in_.size(); }
  const Tensor* input(size_t i) const override {
    return i < in_.size() && in_[i].is_tensor() ? &in_[i].tensor : nullptr;
  }
  const DataValue* input_value(size_t i) const override { return i < in_.size() ? &in_[i] : nullptr; }
  size_t num_outputs() const override { return 1; }
  bool output_requested(size_t i) const override { return i == 0; }
  Tensor& output(size_t i, DType dtype, const Shape& shape) override {
    out_.at(i) = DataValue(Tensor(dtype, shape));
    return out_[i].tensor;
  }
  void set_output(size_t i, DataValue v) override { out_.at(i) = std::move(v); }
  const Attribute* attr(std::string_view n) const override {
    auto it = attrs_.find(std::string(n));
    return it == attrs_.end() ? nullptr : &it->second;
  }
  std::vector<DataValue> run_subgraph(const Subgraph&, const std::vector<DataValue>&) override {
    fail(ErrorCode::internal, "no subgraphs here");
  }
  Tensor run() {
    KernelFn fn = KernelTable::instance().find(domain_, op_);
    if (!fn) fail(ErrorCode::internal, "no reference kernel for ", op_);
    fn(*this);
    return out_[0].tensor;
  }

 private:
  const KernelContext& parent_;
  std::string op_, domain_;
  std::vector<DataValue> in_;
  AttrMap attrs_;
  std::vector<DataValue> out_;
};

// MatMul(Q, K^T) * scale (+ Mask) -> Softmax(-1) -> MatMul(., V), each step the reference op.
// (The q_perm / k_perm / v_perm / out_perm Transposes the fuse pass folded in are applied as Transposes.)
void fused_attention(KernelContext& ctx) {
  auto transposed = [&](const Tensor& t, const char* key) {
    const Attribute* pa = ctx.attr(key);
    return pa ? SubCall(ctx, "Transpose", {t}, {{"perm", *pa}}).run() : t;
  };
  // (inputs may be strided views: KernelContext::output_may_be_strided)
  const Tensor q = transposed(ctx.required_input(0).contiguous(), "q_perm");
  Tensor k = transposed(ctx.required_input(1).contiguous(), "k_perm");
  const Tensor v = transposed(ctx.required_input(2).contiguous(), "v_perm");
  if (ctx.attr_int("k_transposed", 0) == 0) {
    ctx.check(k.rank() >= 2, "K must have rank >= 2, got ", k.text());
    std::vector<int64_t> perm(static_cast<size_t>(k.rank()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    Attribute pa;
    pa.kind = Attribute::Kind::ints;
    pa.ints = perm;
    k = SubCall(ctx, "Transpose", {k}, {{"perm", pa}}).run();
  }
  Tensor s = SubCall(ctx, "MatMul", {q, k}).run();
  const float scale = ctx.attr_float("scale", 1.0f);
  if (scale != 1.0f) s = SubCall(ctx, "Mul", {s, Tensor::scalar<float>(scale)}).run();
  if (const Tensor* cond = ctx.input(4)) {
    const Tensor fill = Tensor::scalar<float>(ctx.attr_float("fill", 0.0f));
    s = ctx.attr_int("keep_where", 0) ? SubCall(ctx, "Where", {*cond, s, fill}).run()
                                      : SubCall(ctx, "Where", {*cond, fill, s}).run();
  }
  if (const Tensor* mask = ctx.input(3)) s = SubCall(ctx, "Add", {s, *mask}).run();
  Attribute axis;
  axis.kind = Attribute::Kind::i;
  axis.i = -1;
  const Tensor p = SubCall(ctx, "Softmax", {s}, {{"axis", axis}}).run();
  const Tensor o = SubCall(ctx, "MatMul", {p, v}).run();
  ctx.set_output(0, DataValue(transposed(o, "out_perm")));
}

// The pointwise FusedConv, then the depthwise FusedConv (then the projection FusedConv), each the reference
// kernel (NHWC, packed weights).
void fused_pw_dw_conv(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.check(x.rank() == 4, "FusedPwDwConv takes an NHWC image, got ", x.text());
  const int64_t e = ctx.attr_int("channels", 0);
  ctx.check(e > 0, "channels must be positive");
  const auto ks = ctx.attr_ints("kernel_shape");
  ctx.check(ks.size() == 2, "kernel_shape must have 2 values");
  const auto attr_s = Attribute::of_string;
  const auto attr_i = Attribute::of_int;
  const auto attr_f = Attribute::of_float;
  const auto attr_ints = Attribute::of_ints;
  auto optional = [&](size_t i) { return ctx.input(i) ? DataValue(*ctx.input(i)) : DataValue(); };
  // a 1x1 NHWC FusedConv from c to oc channels, its activation from the attributes after `prefix`
  auto pointwise = [&](int64_t oc, int64_t c, const std::string& prefix) {
    return AttrMap{{"layout", attr_s("NHWC")},
                   {"kernel_shape", attr_ints({1, 1})},
                   {"weight_shape", attr_ints({oc, c, 1, 1})},
                   {"activation", attr_s(ctx.attr_string(prefix + "activation", ""))},
                   {"clip_min", attr_f(ctx.attr_float(prefix + "clip_min", 0))},
                   {"clip_max", attr_f(ctx.attr_float(prefix + "clip_max", 0))}};
  };
  // without W1 (no expansion) the depthwise conv reads X; pw_input_layout NCHW: W1 is a stem conv's over an
  // NCHW X, its geometry in the pw_ attributes
  const bool stem = ctx.attr_string("pw_input_layout", "NHWC") == "NCHW";
  ctx.check(ctx.input(1) || (!stem && x.dim(3) == e), "without expansion weights, channels must be X's ",
            x.dim(3));
  AttrMap producer = pointwise(e, x.dim(3), "pw_");
  if (stem) {
    const auto pks = ctx.attr_ints("pw_kernel_shape");
    ctx.check(pks.size() == 2, "pw_kernel_shape must have 2 values");
    producer["input_layout"] = attr_s("NCHW");
    producer["kernel_shape"] = attr_ints(pks);
    producer["weight_shape"] = attr_ints({e, x.dim(1), pks[0], pks[1]});
    for (const char* name : {"strides", "dilations", "pads"})
      if (const Attribute* a = ctx.attr(std::string("pw_") + name)) producer[name] = *a;
  }
  const Tensor t = ctx.input(1)
                       ? SubCall(ctx, "FusedConv", {x, *ctx.input(1), optional(2)}, producer, "tessera").run()
                       : x;
  AttrMap dw = {{"layout", attr_s("NHWC")},
                {"group", attr_i(e)},
                {"kernel_shape", attr_ints(ks)},
                {"weight_shape", attr_ints({e, 1, ks[0], ks[1]})},
                {"activation", attr_s(ctx.attr_string("activation", ""))},
                {"clip_min", attr_f(ctx.attr_float("clip_min", 0))},
                {"clip_max", attr_f(ctx.attr_float("clip_max", 0))}};
  for (const char* name : {"strides", "dilations", "pads"})
    if (const Attribute* a = ctx.attr(name)) dw[name] = *a;
  const Tensor d = SubCall(ctx, "FusedConv", {t, ctx.required_input(3), optional(4)}, dw, "tessera").run();
  if (!ctx.input(5)) {
    ctx.set_output(0, DataValue(d));
    return;
  }
  const int64_t p = ctx.attr_int("proj_channels", 0);
  ctx.check(p > 0, "proj_channels must be positive with a projection");
  ctx.set_output(0, DataValue(SubCall(ctx, "FusedConv", {d, *ctx.input(5), optional(6), optional(7)},
                                      pointwise(p, e, "proj_"), "tessera")
                                  .run()));
}

}  // namespace

void register_fused_kernels(KernelTable& t) {
  t.add("FusedPwDwConv", fused_pw_dw_conv, "tessera");
  t.add("FusedGemm", fused_gemm, "tessera");
  t.add("FusedElementwise", fused_elementwise, "tessera");
  t.add("FusedAttention", fused_attention, "tessera");
  t.add("FusedConv", fused_conv, "tessera");
  t.add("NhwcMaxPool", nhwc_pool<true>, "tessera");
  t.add("NhwcAveragePool", nhwc_pool<false>, "tessera");
  t.add("NhwcGlobalAveragePool", nhwc_global_average_pool, "tessera");
  t.add("ChannelShuffle", channel_shuffle, "tessera");
}

}  // namespace tessera::kernels::ref
