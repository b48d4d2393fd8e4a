// Reference kernels: resize family (Resize, GridSample, AffineGrid).
#include "kernels/ref/resize.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/ref/misc_util.h"
#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

using namespace misc;

// ---------------------------------------------------------------- Resize ----
// Resize is separable: each resized axis is a 1-D pass in which every output
// index reads a few input indices with weights (taps), or the extrapolation
// value (tf_crop_and_resize outside the roi).

struct ResizeParams {
  std::string mode, ctm, nearest_mode;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

// Weights for the fractional position `ratio` (in (0,1], 1 meaning on a sample).
std::vector<double> resize_coeffs(const ResizeParams& p, double ratio, double scale) {
  if (p.mode == "nearest") {
    if (ratio == std::floor(ratio)) return {0, 1};
    const std::string& m = p.nearest_mode;
    if (m == "round_prefer_floor") return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (m == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  if (p.mode == "linear") {
    if (!p.antialias) return {1 - ratio, ratio};
    const double s = std::min(scale, 1.0);
    const int64_t start = int64_t(std::floor(-1 / s) + 1);
    const int64_t footprint = 2 - 2 * start;
    std::vector<double> c(static_cast<size_t>(footprint));
    double sum = 0;
    for (int64_t i = 0; i < footprint; ++i) {
      const double a = (double(start + i) - ratio) * s;
      c[size_t(i)] = std::clamp(1 - std::abs(a), 0.0, 1.0);
      sum += c[size_t(i)];
    }
    for (double& v : c) v /= sum;
    return c;
  }
  // cubic
  const double A = p.cubic_a;
  if (!p.antialias) {
    const double r = ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
            ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A};
  }
  const double s = std::min(scale, 1.0);
  auto coeff = [&](double x) {
    x = std::abs(x);
    const double x2 = x * x, x3 = x * x2;
    if (x <= 1) return (A + 2) * x3 - (A + 3) * x2 + 1;
    if (x < 2) return A * x3 - 5 * A * x2 + 8 * A * x - 4 * A;
    return 0.0;
  };
  const int64_t i_start = int64_t(std::floor(-2 / s) + 1), i_end = 2 - i_start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = i_start; i < i_end; ++i) {
    c.push_back(coeff(s * (double(i) - ratio)));
    sum += c.back();
  }
  for (double& v : c) v /= sum;
  return c;
}

ResizeTaps resize_taps(const KernelContext& ctx, const ResizeParams& p, int64_t in_w, int64_t out_w,
                       double scale, double roi_lo, double roi_hi) {
  ResizeTaps t;
  const double out_wf = scale * double(in_w);
  const std::string& m = p.ctm;
  t.extrapolate.assign(size_t(out_w), 0);
  for (int64_t o = 0; o < out_w; ++o) {
    const double y = double(o);
    double x;
    if (m == "align_corners") {
      x = out_wf == 1 ? 0.0 : y * double(in_w - 1) / (out_wf - 1);
    } else if (m == "asymmetric") {
      x = y / scale;
    } else if (m == "tf_crop_and_resize") {
      x = out_wf == 1 ? (roi_hi - roi_lo) * double(in_w - 1) / 2
                      : y * (roi_hi - roi_lo) * double(in_w - 1) / (out_wf - 1);
      x += roi_lo * double(in_w - 1);
      if (x < 0 || x > double(in_w - 1)) t.extrapolate[size_t(o)] = 1;
    } else if (m == "pytorch_half_pixel") {
      x = out_wf == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    } else if (m == "half_pixel") {
      x = (y + 0.5) / scale - 0.5;
    } else if (m == "half_pixel_symmetric") {
      const double adjustment = double(out_w) / out_wf;
      const double center = double(in_w) / 2;
      x = center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
    } else {
      ctx.fail(ErrorCode::invalid_model, "unknown coordinate_transformation_mode '", m, "'");
    }
    const double xf = std::floor(x);
    const double ratio = x == xf ? 1.0 : x - xf;
    std::vector<double> c = resize_coeffs(p, ratio, scale);
    const int n = int(c.size());
    if (o == 0) t.n = n;
    ctx.check(n == t.n, "internal: varying tap count");
    const int64_t pad = (n + 1) / 2;
    const double xp = x + double(pad);
    const double pp = std::floor(xp);
    const double frac = xp - pp;
    int64_t off;
    if (n % 2 == 0)
      off = frac == 0 ? -(n / 2) : -(n / 2) + 1;
    else
      off = frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    const int64_t start = int64_t(pp) + off - pad;
    if (p.exclude_outside) {
      double sum = 0;
      for (int k = 0; k < n; ++k) {
        const int64_t i = start + k;
        if (i < 0 || i >= in_w) c[size_t(k)] = 0;
        sum += c[size_t(k)];
      }
      if (sum == 0) sum = 1;
      for (double& v : c) v /= sum;
    }
    for (int k = 0; k < n; ++k) {
      t.idx.push_back(std::clamp<int64_t>(start + k, 0, in_w - 1));
      t.w.push_back(c[size_t(k)]);
    }
  }
  return t;
}

// One resize pass along `axis` of data (row-major with shape `shape`).
std::vector<double> resize_axis(const KernelContext& ctx, const std::vector<double>& data, Shape& shape,
                                int64_t axis, int64_t out_w, const ResizeTaps& t, double extrapolation) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t in_w = shape[size_t(axis)];
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{outer, out_w, inner}));
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t o = 0; o < out_w; ++o)
      for (int64_t b = 0; b < inner; ++b) {
        double v;
        if (t.extrapolate[size_t(o)]) {
          v = extrapolation;
        } else {
          v = 0;
          for (int k = 0; k < t.n; ++k) {
            const size_t j = size_t(o * t.n + k);
            if (t.w[j] == 0) continue;  // also keeps a far-away NaN/Inf from leaking in through 0 * x
            v += t.w[j] * data[size_t((a * in_w + t.idx[j]) * inner + b)];
          }
        }
        out[size_t((a * out_w + o) * inner + b)] = v;
      }
  shape[size_t(axis)] = out_w;
  return out;
}

const Tensor* optional_nonempty(const KernelContext& ctx, size_t i) {
  const Tensor* t = ctx.input(i);
  return (t && t->numel() > 0) ? t : nullptr;
}

}  // namespace

ResizePlan plan_resize(const KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const int64_t r = x.rank();
  const bool old = ctx.opset() < 11;
  ResizeParams p;
  p.mode = ctx.attr_string("mode", "nearest");
  ctx.check(p.mode == "nearest" || p.mode == "linear" || p.mode == "cubic", "unknown mode '", p.mode, "'");
  p.ctm = ctx.attr_string("coordinate_transformation_mode", old ? "asymmetric" : "half_pixel");
  p.nearest_mode = ctx.attr_string("nearest_mode", old ? "floor" : "round_prefer_floor");
  ctx.check(p.nearest_mode == "round_prefer_floor" || p.nearest_mode == "round_prefer_ceil" ||
                p.nearest_mode == "floor" || p.nearest_mode == "ceil",
            "unknown nearest_mode '", p.nearest_mode, "'");
  p.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = ctx.attr_float("extrapolation_value", 0.0f);
  p.antialias = ctx.attr_int("antialias", 0) != 0;
  ctx.check(!(p.antialias && p.mode == "nearest"), "antialias is not supported with mode 'nearest'");
  const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  ctx.check(policy == "stretch" || policy == "not_larger" || policy == "not_smaller",
            "unknown keep_aspect_ratio_policy '", policy, "'");

  const Tensor *roi_t = nullptr, *scales_t = nullptr, *sizes_t = nullptr;
  if (old && ctx.num_inputs() == 2) {
    scales_t = optional_nonempty(ctx, 1);
  } else {
    roi_t = optional_nonempty(ctx, 1);
    scales_t = optional_nonempty(ctx, 2);
    sizes_t = optional_nonempty(ctx, 3);
  }
  ctx.check((scales_t != nullptr) != (sizes_t != nullptr),
            "exactly one of 'scales' and 'sizes' must be given");

  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty()) {
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  } else {
    for (int64_t& a : axes) a = norm_axis(ctx, a, r, "axes value");
    std::vector<int64_t> s = axes;
    std::sort(s.begin(), s.end());
    ctx.check(std::adjacent_find(s.begin(), s.end()) == s.end(), "axes contain duplicates");
  }
  const size_t na = axes.size();
  std::vector<double> scale(size_t(r), 1.0);
  std::vector<int64_t> out_size(x.shape().begin(), x.shape().end());
  std::vector<double> roi_lo(size_t(r), 0.0), roi_hi(size_t(r), 1.0);
  if (roi_t) {
    const std::vector<double> rv = roi_t->to_double_vector();
    ctx.check(rv.size() == 2 * na, "roi has ", rv.size(), " values, expected ", 2 * na);
    for (size_t i = 0; i < na; ++i) {
      roi_lo[size_t(axes[i])] = rv[i];
      roi_hi[size_t(axes[i])] = rv[na + i];
    }
  }
  if (scales_t) {
    const std::vector<double> sv = scales_t->to_double_vector();
    ctx.check(sv.size() == na, "scales has ", sv.size(), " values, expected ", na);
    for (size_t i = 0; i < na; ++i) {
      ctx.check(sv[i] > 0 && std::isfinite(sv[i]), "scales must be positive, got ", sv[i]);
      scale[size_t(axes[i])] = sv[i];
      const double o = std::floor(sv[i] * double(x.dim(axes[i])));
      ctx.check(o <= double(int64_t(1) << 40), "scales ", sv[i], " make an output dim of ", o);
      out_size[size_t(axes[i])] = int64_t(o);
    }
  } else {
    ctx.check(sizes_t->dtype() == DType::i64, "sizes must be int64");
    const std::vector<int64_t> zv = sizes_t->to_int_vector();
    ctx.check(zv.size() == na, "sizes has ", zv.size(), " values, expected ", na);
    for (size_t i = 0; i < na; ++i) {
      ctx.check(zv[i] >= 0, "sizes must be >= 0");
      ctx.check(x.dim(axes[i]) > 0, "cannot resize an empty dimension to a non-empty one");
      scale[size_t(axes[i])] = double(zv[i]) / double(x.dim(axes[i]));
    }
    if (policy != "stretch") {
      double s = policy == "not_larger" ? 1e300 : -1e300;
      for (int64_t a : axes)
        s = policy == "not_larger" ? std::min(s, scale[size_t(a)]) : std::max(s, scale[size_t(a)]);
      for (int64_t a : axes) {
        scale[size_t(a)] = s;
        out_size[size_t(a)] = int64_t(s * double(x.dim(a)) + 0.5);
      }
    } else {
      for (size_t i = 0; i < na; ++i) out_size[size_t(axes[i])] = zv[i];
    }
  }
  // the output refused as its tensor would be, before any pass builds tables or buffers that size
  check_output_size(ctx, nn_prod(Shape(out_size.begin(), out_size.end())), dtype_size(x.dtype()));
  ResizePlan plan;
  plan.extrapolation = p.extrapolation;
  Shape shape = x.shape();
  for (int64_t a : axes) {
    const size_t au = size_t(a);
    const bool identity = std::abs(scale[au] - 1.0) <= 1e-9 && out_size[au] == shape[au] &&
                          std::abs(roi_lo[au]) <= 1e-9 && std::abs(roi_hi[au] - 1.0) <= 1e-9;
    if (identity) continue;
    ResizeTaps t;
    t.axis = a, t.out = out_size[au];
    if (out_size[au] != 0 && shape[au] != 0)
      t = resize_taps(ctx, p, shape[au], out_size[au], scale[au], roi_lo[au], roi_hi[au]), t.axis = a,
      t.out = out_size[au];
    shape[au] = out_size[au];
    plan.passes.push_back(std::move(t));
  }
  plan.out_shape = shape;
  return plan;
}

namespace {

void resize(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const ResizePlan plan = plan_resize(ctx);
  Shape shape = x.shape();
  std::vector<double> data = x.to_double_vector();
  for (const ResizeTaps& t : plan.passes) {
    const size_t au = size_t(t.axis);
    if (t.out == 0 || shape[au] == 0) {
      shape[au] = t.out;
      data.clear();
      continue;
    }
    data = resize_axis(ctx, data, shape, t.axis, t.out, t, plan.extrapolation);
  }
  Tensor& y = ctx.output(0, x.dtype(), shape);
  if (is_integer(x.dtype())) {
    double lo, hi;
    if (int_range(x.dtype(), lo, hi))
      for (double& v : data) v = std::clamp(std::nearbyint(v), lo, hi);
  }
  data.resize(size_t(y.numel()));
  from_doubles(y, data, true);
}

// ------------------------------------------------------------ GridSample ----

double gs_reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = int64_t(dx / rng);
    const double rr = dx - double(n) * rng;
    return n % 2 == 0 ? lo + rr : hi - rr;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = int64_t(dx / rng);
    const double rr = dx - double(n) * rng;
    return n % 2 == 0 ? hi - rr : lo + rr;
  }
  return x;
}

void cubic_coeffs_075(double x, double c[4]) {
  const double A = -0.75;
  x = std::abs(x);
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

void grid_sample(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& grid = ctx.required_input(1);
  const int64_t r = x.rank();
  ctx.check(r >= 3, "input must have rank >= 3, got ", x.text());
  const int64_t k = r - 2;
  ctx.check(grid.rank() == r && grid.dim(0) == x.dim(0) && grid.dim(-1) == k, "grid must have shape [N, ",
            "D1..Dk, ", k, "] matching input ", x.text(), ", got ", grid.text());
  ctx.check(is_std_float(grid.dtype()), "grid must be float");
  std::string mode = ctx.attr_string("mode", ctx.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  ctx.check(mode == "linear" || mode == "nearest" || mode == "cubic", "unknown mode '", mode, "'");
  const std::string pad = ctx.attr_string("padding_mode", "zeros");
  ctx.check(pad == "zeros" || pad == "border" || pad == "reflection", "unknown padding_mode '", pad, "'");
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  const int64_t N = x.dim(0), C = x.dim(1);
  Shape in_sp(x.shape().begin() + 2, x.shape().end());
  Shape out_sp(grid.shape().begin() + 1, grid.shape().end() - 1);
  Shape yshape{N, C};
  yshape.insert(yshape.end(), out_sp.begin(), out_sp.end());
  const std::vector<double> xv = x.to_double_vector();
  const std::vector<float> gv = to_floats(grid);
  const int64_t in_sz = shape_numel(in_sp), out_sz = shape_numel(out_sp);
  std::vector<double> yv(size_t(shape_numel(yshape)));
  std::vector<double> lo(static_cast<size_t>(k)), hi(static_cast<size_t>(k));
  for (int64_t d = 0; d < k; ++d) {
    lo[size_t(d)] = align ? 0.0 : -0.5;
    hi[size_t(d)] = align ? double(in_sp[size_t(d)] - 1) : double(in_sp[size_t(d)]) - 0.5;
  }
  // Value at integer position (per dim), following the padding mode.
  auto pixel = [&](const double* plane, const std::vector<int64_t>& pos) -> double {
    int64_t off = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t i = pos[size_t(d)];
      const int64_t n = in_sp[size_t(d)];
      if (pad == "zeros") {
        if (i < 0 || i >= n) return 0.0;
      } else if (pad == "border") {
        i = std::clamp<int64_t>(i, 0, n - 1);
      } else {
        i = int64_t(gs_reflect(double(i), lo[size_t(d)], hi[size_t(d)]));
        i = std::clamp<int64_t>(i, 0, n - 1);
      }
      off = off * n + i;
    }
    return plane[off];
  };
  std::vector<double> pos(static_cast<size_t>(k));
  std::vector<int64_t> ip(static_cast<size_t>(k)), base(static_cast<size_t>(k));
  const int taps = mode == "nearest" ? 1 : (mode == "linear" ? 2 : 4);
  std::vector<double> w(size_t(k * taps));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < out_sz; ++o) {
      const float* g = gv.data() + (n * out_sz + o) * k;
      for (int64_t d = 0; d < k; ++d) {
        // grid's last dim is (x, y, z): reversed relative to the spatial dims.
        const float gn = g[k - 1 - d];
        const float len = float(in_sp[size_t(d)]);
        float v = align ? (gn + 1) / 2.0f * (len - 1) : ((gn + 1) * len - 1) / 2.0f;
        if (mode == "nearest") v = std::nearbyint(v);
        double dv = v;
        if (dv < lo[size_t(d)] || dv > hi[size_t(d)]) {
          if (pad == "border")
            dv = std::clamp(dv, 0.0, double(in_sp[size_t(d)] - 1));
          else if (pad == "reflection")
            dv = float(gs_reflect(dv, lo[size_t(d)], hi[size_t(d)]));
        }
        pos[size_t(d)] = dv;
      }
      for (int64_t c = 0; c < C; ++c) {
        const double* plane = xv.data() + (n * C + c) * in_sz;
        double result;
        if (mode == "nearest") {
          for (int64_t d = 0; d < k; ++d) ip[size_t(d)] = int64_t(pos[size_t(d)]);
          result = pixel(plane, ip);
        } else {
          for (int64_t d = 0; d < k; ++d) {
            const double f = std::floor(pos[size_t(d)]);
            const double t = pos[size_t(d)] - f;
            if (mode == "linear") {
              base[size_t(d)] = int64_t(f);
              w[size_t(d * taps)] = 1 - t;
              w[size_t(d * taps + 1)] = t;
            } else {
              base[size_t(d)] = int64_t(f) - 1;
              cubic_coeffs_075(t, &w[size_t(d * taps)]);
            }
          }
          result = 0;
          int64_t combos = 1;
          for (int64_t d = 0; d < k; ++d) combos *= taps;
          for (int64_t cmb = 0; cmb < combos; ++cmb) {
            double wt = 1;
            int64_t rem = cmb;
            for (int64_t d = k; d-- > 0;) {
              const int64_t tap = rem % taps;
              rem /= taps;
              ip[size_t(d)] = base[size_t(d)] + tap;
              wt *= w[size_t(d * taps + tap)];
            }
            if (wt == 0) continue;
            result += wt * pixel(plane, ip);
          }
        }
        yv[size_t((n * C + c) * out_sz + o)] = result;
      }
    }
  Tensor& y = ctx.output(0, x.dtype(), yshape);
  from_doubles(y, yv, true);
}

// ------------------------------------------------------------ AffineGrid ----

void affine_grid(KernelContext& ctx) {
  const Tensor& theta = ctx.required_input(0);
  const Tensor& size_t_ = ctx.required_input(1);
  ctx.check(is_std_float(theta.dtype()), "theta must be float");
  const std::vector<int64_t> sz = size_t_.to_int_vector();
  ctx.check(sz.size() == 4 || sz.size() == 5, "size must have 4 or 5 values, got ", sz.size());
  const bool three = sz.size() == 5;
  const int64_t N = sz[0];
  const int64_t nd = three ? 3 : 2;
  ctx.check(theta.rank() == 3 && theta.dim(0) == N && theta.dim(1) == nd && theta.dim(2) == nd + 1,
            "theta must have shape [N, ", nd, ", ", nd + 1, "], got ", theta.text());
  for (int64_t v : sz) ctx.check(v >= 0, "size values must be >= 0");
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  const int64_t D = three ? sz[2] : 1, H = sz[sz.size() - 2], W = sz.back();
  auto base = [&](int64_t i, int64_t n) -> double {
    if (align) return n <= 1 ? 0.0 : -1.0 + 2.0 * double(i) / double(n - 1);
    return (2.0 * double(i) + 1.0) / double(n) - 1.0;
  };
  const std::vector<double> th = theta.to_double_vector();
  Shape os = three ? Shape{N, D, H, W, 3} : Shape{N, H, W, 2};
  std::vector<double> out = out_buffer(ctx, shape_numel(os));
  size_t o = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const double bx = base(w, W), by = base(h, H), bz = three ? base(d, D) : 0.0;
          const double* t = th.data() + n * nd * (nd + 1);
          for (int64_t row = 0; row < nd; ++row) {
            const double* tr = t + row * (nd + 1);
            out[o++] = three ? tr[0] * bx + tr[1] * by + tr[2] * bz + tr[3] : tr[0] * bx + tr[1] * by + tr[2];
          }
        }
  Tensor& y = ctx.output(0, theta.dtype(), os);
  from_doubles(y, out);
}

}  // namespace

void register_resize_kernels(KernelTable& t) {
  t.add("Resize", resize);
  t.add("Upsample", resize);
  t.add("GridSample", grid_sample);
  t.add("AffineGrid", affine_grid);
}

}  // namespace tessera::kernels::ref
