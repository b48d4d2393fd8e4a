// Reference kernels: pool family. N-d windows over the spatial dims of
// [N, C, spatial...] inputs; double accumulation.
#include <cmath>
#include <limits>

#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

enum class PoolKind { max, avg, lp };

int64_t flat_of(const std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + pos[d];
  return f;
}

template <PoolKind K>
void pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  if constexpr (K == PoolKind::max)
    ctx.check(nn_is_real_float(x.dtype()) || x.dtype() == DType::i8 || x.dtype() == DType::u8,
              "X must be a float type or int8/uint8, got ", dtype_name(x.dtype()));
  else
    nn_require_float(ctx, x, "X");
  ctx.check(x.rank() >= 3, "X must be [N, C, spatial...], got ", x.text());
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const size_t nsp = in.size();
  ctx.check(ctx.has_attr("kernel_shape"), "attribute 'kernel_shape' is required");
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  const NnWindow win = nn_window(ctx, in, kernel, ceil_mode);
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const int64_t p = ctx.attr_int("p", 2);
  if constexpr (K == PoolKind::lp) ctx.check(p >= 1, "p must be >= 1, got ", p);
  const int64_t storage_order = ctx.attr_int("storage_order", 0);
  const int64_t n = x.dim(0), c = x.dim(1), in_sp = nn_prod(in), out_sp = nn_prod(win.out),
                k_sp = nn_prod(kernel);
  const std::vector<double> v = nn_load(x);
  Shape os{n, c};
  os.insert(os.end(), win.out.begin(), win.out.end());
  std::vector<double> out = out_buffer(ctx, nn_prod(os));
  std::vector<double> idx(K == PoolKind::max ? out.size() : 0);
  // Column-major spatial strides for storage_order = 1.
  std::vector<int64_t> col_strides(nsp, 1);
  for (size_t d = 1; d < nsp; ++d) col_strides[d] = col_strides[d - 1] * in[d - 1];
  std::vector<int64_t> oc, kc, ic(nsp);
  for (int64_t plane = 0; plane < n * c; ++plane) {
    const double* px = v.data() + plane * in_sp;
    for (int64_t op = 0; op < out_sp; ++op) {
      nn_unravel(op, win.out, oc);
      double acc = K == PoolKind::max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t best = -1, count = 0;
      for (int64_t kp = 0; kp < k_sp; ++kp) {
        nn_unravel(kp, kernel, kc);
        bool inside = true, in_padded = true;
        for (size_t d = 0; d < nsp; ++d) {
          ic[d] = oc[d] * win.strides[d] - win.pad_begin[d] + kc[d] * win.dilations[d];
          inside = inside && ic[d] >= 0 && ic[d] < in[d];
          in_padded = in_padded && ic[d] >= -win.pad_begin[d] && ic[d] < in[d] + win.pad_end[d];
        }
        if (K == PoolKind::avg && include_pad && in_padded && !inside) ++count;
        if (!inside) continue;
        const double e = px[flat_of(ic, in)];
        ++count;
        if constexpr (K == PoolKind::max) {
          if (best < 0 || e > acc || (std::isnan(e) && !std::isnan(acc))) {
            acc = e;
            int64_t si = 0;
            if (storage_order == 0)
              si = flat_of(ic, in);
            else
              for (size_t d = 0; d < nsp; ++d) si += ic[d] * col_strides[d];
            best = si;
          }
        } else if constexpr (K == PoolKind::avg) {
          acc += e;
        } else {
          acc += std::pow(std::fabs(e), double(p));
        }
      }
      const size_t o = size_t(plane * out_sp + op);
      if constexpr (K == PoolKind::max) {
        out[o] = best < 0 ? 0.0 : acc;
        idx[o] = double(plane * in_sp + (best < 0 ? 0 : best));
      } else if constexpr (K == PoolKind::avg) {
        out[o] = count ? acc / double(count) : std::numeric_limits<double>::quiet_NaN();
      } else {
        out[o] = std::pow(acc, 1.0 / double(p));
      }
    }
  }
  nn_emit(ctx, 0, x.dtype(), os, out);
  if (K == PoolKind::max && ctx.num_outputs() > 1 && ctx.output_requested(1))
    nn_emit(ctx, 1, DType::i64, os, idx);
}

template <PoolKind K>
void global_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "X");
  ctx.check(x.rank() >= 2, "X must be [N, C, spatial...], got ", x.text());
  const int64_t nc = x.dim(0) * x.dim(1), sp = nn_prod(x.shape(), 2);
  const int64_t p = ctx.attr_int("p", 2);
  const std::vector<double> v = nn_load(x);
  std::vector<double> out = out_buffer(ctx, nc);
  for (int64_t i = 0; i < nc; ++i) {
    double acc = K == PoolKind::max ? -std::numeric_limits<double>::infinity() : 0.0;
    bool nan = false;
    for (int64_t j = 0; j < sp; ++j) {
      const double e = v[size_t(i * sp + j)];
      nan = nan || std::isnan(e);
      if (K == PoolKind::max)
        acc = std::max(acc, e);
      else if (K == PoolKind::avg)
        acc += e;
      else
        acc += std::pow(std::fabs(e), double(p));
    }
    if (K == PoolKind::avg) acc /= double(sp);
    if (K == PoolKind::lp) acc = std::pow(acc, 1.0 / double(p));
    out[size_t(i)] = nan ? std::numeric_limits<double>::quiet_NaN() : acc;
  }
  Shape os{x.dim(0), x.dim(1)};
  os.resize(size_t(x.rank()), 1);
  nn_emit(ctx, 0, x.dtype(), os, out);
}

void max_unpool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& ind = ctx.required_input(1);
  ctx.check(x.rank() >= 3, "X must be [N, C, spatial...], got ", x.text());
  ctx.check(ind.shape() == x.shape(), "I ", ind.text(), " must have the shape of X ", x.text());
  const size_t nsp = size_t(x.rank()) - 2;
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  ctx.check(kernel.size() == nsp, "kernel_shape must have ", nsp, " values");
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  ctx.check(strides.size() == nsp && pads.size() == 2 * nsp, "strides/pads do not match the spatial dims");
  Shape os{x.dim(0), x.dim(1)};
  for (size_t i = 0; i < nsp; ++i) {
    ctx.check(kernel[i] >= 1 && strides[i] >= 1 && pads[i] >= 0 && pads[nsp + i] >= 0,
              "kernel_shape and strides must be positive and pads non-negative");
    const int64_t d = (x.dim(int64_t(i) + 2) - 1) * strides[i] + kernel[i] - pads[i] - pads[nsp + i];
    ctx.check(x.dim(int64_t(i) + 2) == 0 || d >= 0, "pads leave spatial dim ", i, " a negative size ", d);
    os.push_back(std::max<int64_t>(d, 0));
  }
  // Indices are flat (row-major) over the tensor MaxPool read, whose shape is the
  // default output shape here; with an explicit output_shape each index is
  // moved to the same coordinates in the (larger) output.
  const Shape natural = os;
  if (ctx.has_input(2)) {
    const Shape given = ctx.input(2)->to_int_vector();
    ctx.check(given.size() == os.size(), "output_shape must have ", os.size(), " values");
    for (int64_t g : given) ctx.check(g >= 0, "output_shape has a negative value ", g);
    os = given;
  }
  const int64_t total = nn_prod(os), natural_total = nn_prod(natural);
  std::vector<double> out = out_buffer(ctx, total, 0.0);
  const std::vector<double> v = nn_load(x);
  const std::vector<int64_t> iv = ind.to_int_vector();
  std::vector<int64_t> coord;
  for (size_t j = 0; j < iv.size(); ++j) {
    ctx.check(iv[j] >= 0 && iv[j] < natural_total, "index ", iv[j], " is out of range for ",
              shape_text(natural));
    nn_unravel(iv[j], natural, coord);
    int64_t f = 0;
    for (size_t d = 0; d < os.size(); ++d) {
      ctx.check(coord[d] < os[d], "index ", iv[j], " falls outside output_shape ", shape_text(os));
      f = f * os[d] + coord[d];
    }
    out[size_t(f)] = v[j];
  }
  nn_emit(ctx, 0, x.dtype(), os, out);
}

void max_roi_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& rois = ctx.required_input(1);
  nn_require_float(ctx, x, "X");
  ctx.check(x.rank() == 4, "X must be [N, C, H, W], got ", x.text());
  ctx.check(rois.rank() == 2 && rois.dim(1) == 5, "rois must be [R, 5], got ", rois.text());
  const std::vector<int64_t> ps = ctx.attr_ints("pooled_shape");
  ctx.check(ps.size() == 2 && ps[0] > 0 && ps[1] > 0, "pooled_shape must be 2 positive values");
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), r = rois.dim(0), phh = ps[0], pww = ps[1];
  const std::vector<double> v = nn_load(x), rv = nn_load(rois);
  for (double e : rv) ctx.check(std::isfinite(e), "rois must be finite");
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{r, c, phh, pww}), 0.0);
  for (int64_t ri = 0; ri < r; ++ri) {
    const int64_t b = int64_t(rv[size_t(ri * 5)]);
    ctx.check(b >= 0 && b < x.dim(0), "roi batch index ", b, " is out of range");
    const int64_t x1 = std::llround(rv[size_t(ri * 5 + 1)] * scale),
                  y1 = std::llround(rv[size_t(ri * 5 + 2)] * scale);
    const int64_t x2 = std::llround(rv[size_t(ri * 5 + 3)] * scale),
                  y2 = std::llround(rv[size_t(ri * 5 + 4)] * scale);
    const double rh = double(std::max<int64_t>(y2 - y1 + 1, 1)),
                 rw = double(std::max<int64_t>(x2 - x1 + 1, 1));
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t py = 0; py < phh; ++py)
        for (int64_t px = 0; px < pww; ++px) {
          int64_t hs = int64_t(std::floor(double(py) * rh / double(phh))) + y1;
          int64_t he = int64_t(std::ceil(double(py + 1) * rh / double(phh))) + y1;
          int64_t ws = int64_t(std::floor(double(px) * rw / double(pww))) + x1;
          int64_t we = int64_t(std::ceil(double(px + 1) * rw / double(pww))) + x1;
          hs = std::clamp<int64_t>(hs, 0, h);
          he = std::clamp<int64_t>(he, 0, h);
          ws = std::clamp<int64_t>(ws, 0, w);
          we = std::clamp<int64_t>(we, 0, w);
          double m = 0;
          if (he > hs && we > ws) {
            m = -std::numeric_limits<double>::infinity();
            for (int64_t yy = hs; yy < he; ++yy)
              for (int64_t xx = ws; xx < we; ++xx)
                m = std::max(m, v[size_t(((b * c + ci) * h + yy) * w + xx)]);
          }
          out[size_t(((ri * c + ci) * phh + py) * pww + px)] = m;
        }
  }
  nn_emit(ctx, 0, x.dtype(), {r, c, phh, pww}, out);
}

void roi_align_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& rois = ctx.required_input(1);
  const Tensor& bidx = ctx.required_input(2);
  nn_require_float(ctx, x, "X");
  ctx.check(x.rank() == 4, "X must be [N, C, H, W], got ", x.text());
  ctx.check(rois.rank() == 2 && rois.dim(1) == 4, "rois must be [R, 4], got ", rois.text());
  ctx.check(bidx.rank() == 1 && bidx.dim(0) == rois.dim(0), "batch_indices must be [", rois.dim(0), "], got ",
            bidx.text());
  const std::string mode = ctx.attr_string("mode", "avg");
  ctx.check(mode == "avg" || mode == "max", "mode must be 'avg' or 'max', got '", mode, "'");
  const std::string ctm = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  ctx.check(ctm == "half_pixel" || ctm == "output_half_pixel", "unknown coordinate_transformation_mode '",
            ctm, "'");
  const bool half_pixel = ctm == "half_pixel";
  const int64_t oh = ctx.attr_int("output_height", 1), ow = ctx.attr_int("output_width", 1);
  ctx.check(oh > 0 && ow > 0, "output_height and output_width must be positive");
  const int64_t sampling = ctx.attr_int("sampling_ratio", 0);
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), r = rois.dim(0);
  const std::vector<double> v = nn_load(x), rv = nn_load(rois);
  const std::vector<int64_t> bi = bidx.to_int_vector();
  for (double c : rv) ctx.check(std::isfinite(c), "rois must be finite");
  ctx.check(sampling >= 0, "sampling_ratio must be >= 0, got ", sampling);
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{r, c, oh, ow}), 0.0);
  for (int64_t ri = 0; ri < r; ++ri) {
    const int64_t b = bi[size_t(ri)];
    ctx.check(b >= 0 && b < x.dim(0), "batch index ", b, " is out of range");
    const double off = half_pixel ? 0.5 : 0.0;
    const double sw = rv[size_t(ri * 4)] * scale - off, sh = rv[size_t(ri * 4 + 1)] * scale - off;
    const double ew = rv[size_t(ri * 4 + 2)] * scale - off, eh = rv[size_t(ri * 4 + 3)] * scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(oh), bw = rw / double(ow);
    const int64_t gh = sampling > 0 ? sampling : int64_t(std::ceil(rh / double(oh)));
    const int64_t gw = sampling > 0 ? sampling : int64_t(std::ceil(rw / double(ow)));
    const double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t ci = 0; ci < c; ++ci) {
      const double* plane = v.data() + (b * c + ci) * h * w;
      for (int64_t py = 0; py < oh; ++py)
        for (int64_t px = 0; px < ow; ++px) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = sh + double(py) * bh + (double(iy) + 0.5) * bh / double(gh);
              double xx = sw + double(px) * bw + (double(ix) + 0.5) * bw / double(gw);
              double val = 0;
              if (!(yy < -1.0 || yy > double(h) || xx < -1.0 || xx > double(w))) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t y0 = int64_t(yy), x0 = int64_t(xx), y1, x1;
                if (y0 >= h - 1) {
                  y0 = y1 = h - 1;
                  yy = double(y0);
                } else {
                  y1 = y0 + 1;
                }
                if (x0 >= w - 1) {
                  x0 = x1 = w - 1;
                  xx = double(x0);
                } else {
                  x1 = x0 + 1;
                }
                const double ly = yy - double(y0), lx = xx - double(x0), hy = 1 - ly, hx = 1 - lx;
                const double t1 = hy * hx * plane[y0 * w + x0], t2 = hy * lx * plane[y0 * w + x1];
                const double t3 = ly * hx * plane[y1 * w + x0], t4 = ly * lx * plane[y1 * w + x1];
                val = mode == "avg" ? t1 + t2 + t3 + t4 : std::max(std::max(t1, t2), std::max(t3, t4));
              }
              if (mode == "avg")
                acc += val;
              else if (first || val > acc)
                acc = val;
              first = false;
            }
          out[size_t(((ri * c + ci) * oh + py) * ow + px)] = mode == "avg" ? acc / count : acc;
        }
    }
  }
  nn_emit(ctx, 0, x.dtype(), {r, c, oh, ow}, out);
}

}  // namespace

void register_pool_kernels(KernelTable& t) {
  t.add("MaxPool", pool_kernel<PoolKind::max>);
  t.add("AveragePool", pool_kernel<PoolKind::avg>);
  t.add("LpPool", pool_kernel<PoolKind::lp>);
  t.add("GlobalMaxPool", global_pool_kernel<PoolKind::max>);
  t.add("GlobalAveragePool", global_pool_kernel<PoolKind::avg>);
  t.add("GlobalLpPool", global_pool_kernel<PoolKind::lp>);
  t.add("MaxUnpool", max_unpool_kernel);
  t.add("MaxRoiPool", max_roi_pool_kernel);
  t.add("RoiAlign", roi_align_kernel);
}

}  // namespace tessera::kernels::ref
