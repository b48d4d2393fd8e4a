// Reference kernels: conv family (Conv, ConvTranspose, Col2Im, DeformConv).
// N-d over the spatial dims, double accumulation, zero padding.
#include <cmath>

#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

Shape spatial_of(const Shape& s) {
  return Shape(s.begin() + 2, s.end());
}

// kernel_shape attribute if present (checked against W), else W's spatial dims.
std::vector<int64_t> kernel_of(const KernelContext& ctx, const Tensor& w) {
  const Shape ws = spatial_of(w.shape());
  if (ctx.has_attr("kernel_shape")) {
    const std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
    ctx.check(k == ws, "kernel_shape ", shape_text(k), " does not match W ", w.text());
  }
  return ws;
}

// Flat offset of spatial coordinate `pos` (already checked in range).
int64_t flat_of(const std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + pos[d];
  return f;
}

void conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& w = ctx.required_input(1);
  const Tensor* b = ctx.has_input(2) ? ctx.input(2) : nullptr;
  nn_require_float(ctx, x, "X");
  ctx.check(w.dtype() == x.dtype(), "W type ", dtype_name(w.dtype()), " differs from X type ",
            dtype_name(x.dtype()));
  ctx.check(x.rank() >= 3, "X must be [N, C, spatial...], got ", x.text());
  ctx.check(w.rank() == x.rank(), "W ", w.text(), " must have the rank of X ", x.text());
  const int64_t group = ctx.attr_int("group", 1);
  ctx.check(group > 0, "group must be positive, got ", group);
  const int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), cg = w.dim(1);
  ctx.check(c == cg * group, "X has ", c, " channels but W ", w.text(), " with group ", group, " expects ",
            cg * group);
  ctx.check(m % group == 0, "output channels ", m, " are not divisible by group ", group);
  if (b) ctx.check(b->numel() == m && b->rank() == 1, "B must be [", m, "], got ", b->text());
  const NnWindow win = nn_window(ctx, spatial_of(x.shape()), kernel_of(ctx, w), false);
  const size_t nsp = win.nsp();
  const int64_t in_sp = nn_prod(win.in), out_sp = nn_prod(win.out), k_sp = nn_prod(win.kernel);
  const int64_t mg = m / group;
  const std::vector<double> vx = nn_load(x), vw = nn_load(w);
  const std::vector<double> vb = b ? nn_load(*b) : std::vector<double>(size_t(m), 0.0);
  Shape os{n, m};
  os.insert(os.end(), win.out.begin(), win.out.end());
  std::vector<double> out = out_buffer(ctx, nn_prod(os), 0.0);
  std::vector<int64_t> oc, kc, ic(nsp);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t mi = 0; mi < m; ++mi) {
      const int64_t g = mi / mg;
      for (int64_t op = 0; op < out_sp; ++op) {
        nn_unravel(op, win.out, oc);
        double acc = vb[size_t(mi)];
        for (int64_t kp = 0; kp < k_sp; ++kp) {
          nn_unravel(kp, win.kernel, kc);
          bool inside = true;
          for (size_t d = 0; d < nsp && inside; ++d) {
            ic[d] = oc[d] * win.strides[d] - win.pad_begin[d] + kc[d] * win.dilations[d];
            inside = ic[d] >= 0 && ic[d] < win.in[d];
          }
          if (!inside) continue;
          const int64_t ioff = flat_of(ic, win.in);
          for (int64_t ci = 0; ci < cg; ++ci) {
            const double xv = vx[size_t((bi * c + g * cg + ci) * in_sp + ioff)];
            const double wv = vw[size_t((mi * cg + ci) * k_sp + kp)];
            acc += xv * wv;
          }
        }
        out[size_t((bi * m + mi) * out_sp + op)] = acc;
      }
    }
  nn_emit(ctx, 0, x.dtype(), os, out);
}

// Python-style floor division for (possibly negative) padding totals.
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

void conv_transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& w = ctx.required_input(1);
  const Tensor* b = ctx.has_input(2) ? ctx.input(2) : nullptr;
  nn_require_float(ctx, x, "X");
  ctx.check(w.dtype() == x.dtype(), "W type differs from X type");
  ctx.check(x.rank() >= 3, "X must be [N, C, spatial...], got ", x.text());
  ctx.check(w.rank() == x.rank(), "W ", w.text(), " must have the rank of X ", x.text());
  const int64_t group = ctx.attr_int("group", 1);
  ctx.check(group > 0, "group must be positive, got ", group);
  const int64_t n = x.dim(0), c = x.dim(1), mg = w.dim(1), m = mg * group;
  ctx.check(w.dim(0) == c, "X has ", c, " channels but W ", w.text(), " expects ", w.dim(0));
  ctx.check(c % group == 0, "input channels ", c, " are not divisible by group ", group);
  if (b) ctx.check(b->numel() == m && b->rank() == 1, "B must be [", m, "], got ", b->text());
  const std::vector<int64_t> kernel = kernel_of(ctx, w);
  const Shape in = spatial_of(x.shape());
  const size_t nsp = in.size();
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> opad = ctx.attr_ints("output_padding", std::vector<int64_t>(nsp, 0));
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  ctx.check(strides.size() == nsp && dil.size() == nsp && opad.size() == nsp,
            "strides/dilations/output_padding must have ", nsp, " values");
  std::vector<int64_t> pb(nsp, 0), outs(nsp, 0);
  const bool has_pads = ctx.has_attr("pads");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  ctx.check(pads.size() == 2 * nsp, "pads must have ", 2 * nsp, " values");
  std::vector<int64_t> out_shape = ctx.attr_ints("output_shape");
  if (out_shape.size() == nsp + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  ctx.check(out_shape.empty() || out_shape.size() == nsp, "output_shape must have ", nsp, " values");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < nsp; ++i) {
    ctx.check(strides[i] > 0 && dil[i] > 0, "strides and dilations must be positive");
    const int64_t eff = (kernel[i] - 1) * dil[i] + 1;
    const int64_t full = strides[i] * (in[i] - 1) + opad[i] + eff;
    if (!out_shape.empty() && has_pads && !same) {
      pb[i] = pads[i];
      outs[i] = out_shape[i];
    } else if (!out_shape.empty() || same) {
      outs[i] = out_shape.empty() ? in[i] * strides[i] : out_shape[i];
      const int64_t total = full - outs[i];
      const int64_t half = floor_div(total, 2);
      pb[i] = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      if (auto_pad != "VALID") pb[i] = pads[i];
      outs[i] = full - (auto_pad == "VALID" ? 0 : pads[i] + pads[nsp + i]);
    }
    ctx.check(outs[i] >= 0, "output spatial dim ", i, " would be negative (", outs[i], ")");
  }
  const int64_t in_sp = nn_prod(in), out_sp = nn_prod(outs), k_sp = nn_prod(kernel);
  const int64_t cg = c / group;
  const std::vector<double> vx = nn_load(x), vw = nn_load(w);
  Shape os{n, m};
  os.insert(os.end(), outs.begin(), outs.end());
  std::vector<double> out = out_buffer(ctx, nn_prod(os), 0.0);
  std::vector<int64_t> icrd, kc, oc(nsp);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t g = ci / cg;
      for (int64_t ip = 0; ip < in_sp; ++ip) {
        nn_unravel(ip, in, icrd);
        const double xv = vx[size_t((bi * c + ci) * in_sp + ip)];
        for (int64_t kp = 0; kp < k_sp; ++kp) {
          nn_unravel(kp, kernel, kc);
          bool inside = true;
          for (size_t d = 0; d < nsp && inside; ++d) {
            oc[d] = icrd[d] * strides[d] - pb[d] + kc[d] * dil[d];
            inside = oc[d] >= 0 && oc[d] < outs[d];
          }
          if (!inside) continue;
          const int64_t ooff = flat_of(oc, outs);
          for (int64_t mo = 0; mo < mg; ++mo) {
            const double wv = vw[size_t((ci * mg + mo) * k_sp + kp)];
            out[size_t((bi * m + g * mg + mo) * out_sp + ooff)] += xv * wv;
          }
        }
      }
    }
  if (b) {
    const std::vector<double> vb = nn_load(*b);
    for (int64_t bi = 0; bi < n; ++bi)
      for (int64_t mi = 0; mi < m; ++mi)
        for (int64_t op = 0; op < out_sp; ++op) out[size_t((bi * m + mi) * out_sp + op)] += vb[size_t(mi)];
  }
  nn_emit(ctx, 0, x.dtype(), os, out);
}

void col2im_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  ctx.check(x.rank() == 3, "input must be [N, C*prod(block_shape), L], got ", x.text());
  const std::vector<int64_t> image = ctx.required_input(1).to_int_vector();
  const std::vector<int64_t> block = ctx.required_input(2).to_int_vector();
  ctx.check(image.size() == block.size() && !image.empty(),
            "image_shape and block_shape must have the same length");
  const int64_t bprod = nn_prod(block);
  ctx.check(bprod > 0 && x.dim(1) % bprod == 0, "input dim 1 (", x.dim(1),
            ") is not a multiple of prod(block_shape) ", bprod);
  const NnWindow win = nn_window(ctx, image, block, false);
  const int64_t l = nn_prod(win.out);
  ctx.check(l == x.dim(2), "input has ", x.dim(2), " blocks but the image/block geometry gives ", l);
  const int64_t n = x.dim(0), c = x.dim(1) / bprod, img_sp = nn_prod(image);
  const size_t nsp = image.size();
  const std::vector<double> v = nn_load(x);
  Shape os{n, c};
  os.insert(os.end(), image.begin(), image.end());
  std::vector<double> out = out_buffer(ctx, nn_prod(os), 0.0);
  std::vector<int64_t> lc, kc, ic(nsp);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t kp = 0; kp < bprod; ++kp) {
        nn_unravel(kp, block, kc);
        for (int64_t li = 0; li < l; ++li) {
          nn_unravel(li, win.out, lc);
          bool inside = true;
          for (size_t d = 0; d < nsp && inside; ++d) {
            ic[d] = lc[d] * win.strides[d] - win.pad_begin[d] + kc[d] * win.dilations[d];
            inside = ic[d] >= 0 && ic[d] < image[d];
          }
          if (!inside) continue;
          out[size_t((bi * c + ci) * img_sp + flat_of(ic, image))] +=
              v[size_t(((bi * c + ci) * bprod + kp) * l + li)];
        }
      }
  nn_emit(ctx, 0, x.dtype(), os, out);
}

// Bilinear sample of a [h, w] plane at (y, x); points outside contribute zero.
double bilinear(const double* plane, int64_t h, int64_t w, double y, double x) {
  const double y0 = std::floor(y), x0 = std::floor(x);
  double acc = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t yy = int64_t(y0) + dy, xx = int64_t(x0) + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      const double wy = dy ? y - y0 : 1 - (y - y0), wx = dx ? x - x0 : 1 - (x - x0);
      acc += wy * wx * plane[yy * w + xx];
    }
  return acc;
}

void deform_conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& w = ctx.required_input(1);
  const Tensor& off = ctx.required_input(2);
  const Tensor* b = ctx.has_input(3) ? ctx.input(3) : nullptr;
  const Tensor* mask = ctx.has_input(4) ? ctx.input(4) : nullptr;
  nn_require_float(ctx, x, "X");
  if (x.rank() != 4)
    ctx.fail(ErrorCode::unsupported, "only 2-D DeformConv is implemented, X is ", x.describe());
  ctx.check(w.rank() == 4, "W must be [M, C/group, kH, kW], got ", w.text());
  const int64_t group = ctx.attr_int("group", 1), og = ctx.attr_int("offset_group", 1);
  const int64_t n = x.dim(0), c = x.dim(1), ih = x.dim(2), iw = x.dim(3), m = w.dim(0), cg = w.dim(1);
  ctx.check(group > 0 && og > 0, "group and offset_group must be positive");
  ctx.check(c == cg * group && m % group == 0, "channel counts do not match group: X ", x.text(), " W ",
            w.text(), " group ", group);
  ctx.check(c % og == 0, "input channels ", c, " are not divisible by offset_group ", og);
  const std::vector<int64_t> kernel = kernel_of(ctx, w);
  const NnWindow win = nn_window(ctx, {ih, iw}, kernel, false);
  const int64_t kh = kernel[0], kw = kernel[1], oh = win.out[0], ow = win.out[1];
  ctx.check(off.shape() == Shape{n, og * kh * kw * 2, oh, ow}, "offset must be [", n, ", ", og * kh * kw * 2,
            ", ", oh, ", ", ow, "], got ", off.text());
  if (mask)
    ctx.check(mask->shape() == Shape{n, og * kh * kw, oh, ow}, "mask must be [", n, ", ", og * kh * kw, ", ",
              oh, ", ", ow, "], got ", mask->text());
  if (b) ctx.check(b->numel() == m, "B must have ", m, " elements");
  const std::vector<double> vx = nn_load(x), vw = nn_load(w), vo = nn_load(off);
  const std::vector<double> vm = mask ? nn_load(*mask) : std::vector<double>();
  const std::vector<double> vb = b ? nn_load(*b) : std::vector<double>(size_t(m), 0.0);
  const int64_t mg = m / group, cpo = c / og;
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{n, m, oh, ow}), 0.0);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t mi = 0; mi < m; ++mi) {
      const int64_t g = mi / mg;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = vb[size_t(mi)];
          for (int64_t cj = 0; cj < cg; ++cj) {
            const int64_t ci = g * cg + cj, ogi = ci / cpo;
            const double* plane = vx.data() + (bi * c + ci) * ih * iw;
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t kidx = ky * kw + kx;
                const int64_t ochan = (ogi * kh * kw + kidx) * 2;
                const double dy = vo[size_t(((bi * og * kh * kw * 2 + ochan) * oh + oy) * ow + ox)];
                const double dx = vo[size_t(((bi * og * kh * kw * 2 + ochan + 1) * oh + oy) * ow + ox)];
                const double y = double(oy * win.strides[0] - win.pad_begin[0] + ky * win.dilations[0]) + dy;
                const double xx = double(ox * win.strides[1] - win.pad_begin[1] + kx * win.dilations[1]) + dx;
                double val = bilinear(plane, ih, iw, y, xx);
                if (mask) val *= vm[size_t(((bi * og * kh * kw + ogi * kh * kw + kidx) * oh + oy) * ow + ox)];
                acc += val * vw[size_t(((mi * cg + cj) * kh + ky) * kw + kx)];
              }
          }
          out[size_t(((bi * m + mi) * oh + oy) * ow + ox)] = acc;
        }
    }
  nn_emit(ctx, 0, x.dtype(), {n, m, oh, ow}, out);
}

// CausalConvWithState (opset 27): depthwise causal 1-D conv over
// concat(past_state or zeros, input), optional fused SiLU; present_state keeps
// the last k-1 positions.
void causal_conv_with_state_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& w = ctx.required_input(1);
  const Tensor* b = ctx.has_input(2) ? ctx.input(2) : nullptr;
  const Tensor* past = ctx.has_input(3) ? ctx.input(3) : nullptr;
  nn_require_float(ctx, x, "input");
  const std::string act = ctx.attr_string("activation", "none");
  ctx.check(act == "none" || act == "silu" || act == "swish", "activation must be none, silu or swish, got '",
            act, "'");
  ctx.check(x.rank() == 3, "input must be [B, C, L], got ", x.text());
  const int64_t n = x.dim(0), c = x.dim(1), l = x.dim(2);
  ctx.check(w.rank() == 3 && w.dim(0) == c && w.dim(1) == 1 && w.dim(2) >= 1, "weight must be [", c,
            ", 1, k], got ", w.text());
  const int64_t k = w.dim(2), p = k - 1, total = p + l;
  if (b) ctx.check(b->numel() == c, "bias must have ", c, " elements, got ", b->text());
  if (past)
    ctx.check(past->shape() == Shape{n, c, p}, "past_state must be [", n, ", ", c, ", ", p, "], got ",
              past->text());
  const std::vector<double> vx = nn_load(x), vw = nn_load(w);
  const std::vector<double> vb = b ? nn_load(*b) : std::vector<double>(size_t(c), 0.0);
  const std::vector<double> vp = past ? nn_load(*past) : std::vector<double>(size_t(n * c * p), 0.0);
  std::vector<double> out(size_t(n * c * l)), present(size_t(n * c * p));
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t ci = 0; ci < c; ++ci) {
      auto padded = [&](int64_t t) {
        return t < p ? vp[size_t((bi * c + ci) * p + t)] : vx[size_t((bi * c + ci) * l + t - p)];
      };
      for (int64_t t = 0; t < l; ++t) {
        double acc = vb[size_t(ci)];
        for (int64_t j = 0; j < k; ++j) acc += padded(t + j) * vw[size_t(ci * k + j)];
        if (act != "none") acc = acc / (1.0 + std::exp(-acc));
        out[size_t((bi * c + ci) * l + t)] = acc;
      }
      for (int64_t t = 0; t < p; ++t) present[size_t((bi * c + ci) * p + t)] = padded(total - p + t);
    }
  nn_emit(ctx, 0, x.dtype(), {n, c, l}, out);
  if (ctx.num_outputs() > 1 && ctx.output_requested(1))
    nn_emit(ctx, 1, past ? past->dtype() : x.dtype(), {n, c, p}, present);
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t.add("Conv", conv_kernel);
  t.add("ConvTranspose", conv_transpose_kernel);
  t.add("Col2Im", col2im_kernel);
  t.add("DeformConv", deform_conv_kernel);
  t.add("CausalConvWithState", causal_conv_with_state_kernel);
}

}  // namespace tessera::kernels::ref
