// Reference kernels: normalization family. Statistics are computed in double
// (mean, then the biased variance of the deviations) and outputs rounded once.
#include <cmath>

#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

// Per-channel parameter of length c as doubles, checking its size.
std::vector<double> channel_param(const KernelContext& ctx, const Tensor& t, int64_t c, const char* what) {
  ctx.check(t.numel() == c, what, " must have ", c, " elements, got ", t.text());
  return nn_load(t);
}

struct Stats {
  double mean = 0, var = 0;
};
// Mean and biased variance over n values at base + i*stride... given as a getter.
template <typename F>
Stats stats_of(int64_t n, F&& at) {
  Stats s;
  if (n == 0) return s;
  for (int64_t i = 0; i < n; ++i) s.mean += at(i);
  s.mean /= double(n);
  for (int64_t i = 0; i < n; ++i) {
    const double d = at(i) - s.mean;
    s.var += d * d;
  }
  s.var /= double(n);
  return s;
}

void batchnorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "X");
  ctx.check(x.rank() >= 2, "X must have rank >= 2, got ", x.text());
  const int64_t n = x.dim(0), c = x.dim(1), sp = nn_prod(x.shape(), 2);
  const std::vector<double> scale = channel_param(ctx, ctx.required_input(1), c, "scale");
  const std::vector<double> bias = channel_param(ctx, ctx.required_input(2), c, "B");
  const std::vector<double> rmean = channel_param(ctx, ctx.required_input(3), c, "input_mean");
  const std::vector<double> rvar = channel_param(ctx, ctx.required_input(4), c, "input_var");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const double momentum = ctx.attr_float("momentum", 0.9f);
  const bool training = ctx.attr_int("training_mode", 0) != 0;
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size()), mean(rmean), var(rvar);
  for (int64_t ch = 0; ch < c; ++ch) {
    if (training) {
      const Stats s =
          stats_of(n * sp, [&](int64_t i) { return v[size_t(((i / sp) * c + ch) * sp + i % sp)]; });
      mean[size_t(ch)] = s.mean;
      var[size_t(ch)] = s.var;
    }
    const double inv = 1.0 / std::sqrt(var[size_t(ch)] + eps);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < sp; ++i) {
        const size_t k = size_t((b * c + ch) * sp + i);
        out[k] = (v[k] - mean[size_t(ch)]) * inv * scale[size_t(ch)] + bias[size_t(ch)];
      }
  }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
  if (training) {
    std::vector<double> run_mean(static_cast<size_t>(c)), run_var(static_cast<size_t>(c));
    for (size_t ch = 0; ch < size_t(c); ++ch) {
      run_mean[ch] = rmean[ch] * momentum + mean[ch] * (1 - momentum);
      run_var[ch] = rvar[ch] * momentum + var[ch] * (1 - momentum);
    }
    if (ctx.num_outputs() > 1 && ctx.output_requested(1))
      nn_emit(ctx, 1, ctx.required_input(3).dtype(), ctx.required_input(3).shape(), run_mean);
    if (ctx.num_outputs() > 2 && ctx.output_requested(2))
      nn_emit(ctx, 2, ctx.required_input(4).dtype(), ctx.required_input(4).shape(), run_var);
  }
}

void instancenorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  ctx.check(x.rank() >= 3, "input must have rank >= 3, got ", x.text());
  const int64_t n = x.dim(0), c = x.dim(1), sp = nn_prod(x.shape(), 2);
  const std::vector<double> scale = channel_param(ctx, ctx.required_input(1), c, "scale");
  const std::vector<double> bias = channel_param(ctx, ctx.required_input(2), c, "B");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t base = size_t((b * c + ch) * sp);
      const Stats s = stats_of(sp, [&](int64_t i) { return v[base + size_t(i)]; });
      const double inv = 1.0 / std::sqrt(s.var + eps);
      for (int64_t i = 0; i < sp; ++i)
        out[base + size_t(i)] = (v[base + size_t(i)] - s.mean) * inv * scale[size_t(ch)] + bias[size_t(ch)];
    }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
}

DType stash_dtype(const KernelContext& ctx) {
  const int64_t st = ctx.attr_int("stash_type", 1);
  switch (st) {
    case 1:
      return DType::f32;
    case 10:
      return DType::f16;
    case 11:
      return DType::f64;
    case 16:
      return DType::bf16;
    default:
      ctx.fail(ErrorCode::invalid_argument, "unsupported stash_type ", st);
  }
}

// A parameter (Scale / B) broadcast unidirectionally onto the normalized
// shape (dims from axis on), returned as one value per normalized element.
std::vector<double> norm_param(const KernelContext& ctx, const Tensor& t, const Shape& norm_shape,
                               const char* what) {
  ctx.check(t.rank() <= int64_t(norm_shape.size()), what, " ", t.text(),
            " has more dims than the normalized shape ", shape_text(norm_shape));
  const Shape b = nn_broadcast(ctx, t.shape(), norm_shape);
  ctx.check(b == norm_shape, what, " ", t.text(), " does not broadcast to ", shape_text(norm_shape));
  const std::vector<double> v = nn_load(t);
  const std::vector<int64_t> idx = nn_broadcast_index(t.shape(), norm_shape);
  std::vector<double> out(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) out[i] = v[size_t(idx[i])];
  return out;
}

template <bool Rms>
void layernorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "X");
  const int64_t r = x.rank();
  ctx.check(r >= 1, "X must have rank >= 1");
  int64_t axis = ctx.attr_int("axis", -1);
  ctx.check(axis >= -r && axis < r, "axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const DType stash = stash_dtype(ctx);
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t outer = nn_prod(x.shape(), 0, size_t(axis)), len = nn_prod(norm_shape);
  const std::vector<double> scale = norm_param(ctx, ctx.required_input(1), norm_shape, "Scale");
  std::vector<double> bias;
  if (!Rms && ctx.has_input(2)) bias = norm_param(ctx, *ctx.input(2), norm_shape, "B");
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size()), means(static_cast<size_t>(outer)), invs(static_cast<size_t>(outer));
  for (int64_t o = 0; o < outer; ++o) {
    const size_t base = size_t(o * len);
    double mean = 0, var = 0;
    if (Rms) {
      for (int64_t i = 0; i < len; ++i) var += v[base + size_t(i)] * v[base + size_t(i)];
      var = len ? var / double(len) : 0;
    } else {
      const Stats s = stats_of(len, [&](int64_t i) { return v[base + size_t(i)]; });
      mean = s.mean;
      var = s.var;
    }
    const double inv = 1.0 / std::sqrt(var + eps);
    means[size_t(o)] = mean;
    invs[size_t(o)] = inv;
    for (int64_t i = 0; i < len; ++i) {
      double y = (v[base + size_t(i)] - mean) * inv * scale[size_t(i)];
      if (!bias.empty()) y += bias[size_t(i)];
      out[base + size_t(i)] = y;
    }
  }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
  Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
  stat_shape.resize(size_t(r), 1);
  if (!Rms && ctx.num_outputs() > 1 && ctx.output_requested(1)) nn_emit(ctx, 1, stash, stat_shape, means);
  if (!Rms && ctx.num_outputs() > 2 && ctx.output_requested(2)) nn_emit(ctx, 2, stash, stat_shape, invs);
}

void groupnorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "X");
  ctx.check(x.rank() >= 2, "X must have rank >= 2, got ", x.text());
  const int64_t g = ctx.attr_int("num_groups", -1);
  ctx.check(g > 0, "attribute 'num_groups' must be positive, got ", g);
  const int64_t n = x.dim(0), c = x.dim(1), sp = nn_prod(x.shape(), 2);
  ctx.check(c % g == 0, "channels ", c, " are not divisible by num_groups ", g);
  const Tensor& st = ctx.required_input(1);
  const Tensor& bt = ctx.required_input(2);
  // Opset 18 (deprecated form): scale and bias per group; opset 21: per channel.
  const bool per_group = ctx.opset() > 0 && ctx.opset() < 21;
  const int64_t plen = per_group ? g : c;
  const std::vector<double> scale = channel_param(ctx, st, plen, "scale");
  const std::vector<double> bias = channel_param(ctx, bt, plen, "bias");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const int64_t cpg = c / g, len = cpg * sp;
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < g; ++gi) {
      const size_t base = size_t((b * c + gi * cpg) * sp);
      const Stats s = stats_of(len, [&](int64_t i) { return v[base + size_t(i)]; });
      const double inv = 1.0 / std::sqrt(s.var + eps);
      for (int64_t i = 0; i < len; ++i) {
        const size_t p = size_t(per_group ? gi : gi * cpg + i / sp);
        out[base + size_t(i)] = (v[base + size_t(i)] - s.mean) * inv * scale[p] + bias[p];
      }
    }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
}

void lpnorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  const int64_t r = x.rank();
  const int64_t axis = nn_axis(ctx, ctx.attr_int("axis", -1), r);
  const int64_t p = ctx.attr_int("p", 2);
  ctx.check(p == 1 || p == 2, "p must be 1 or 2, got ", p);
  const int64_t outer = nn_prod(x.shape(), 0, size_t(axis)), len = r ? x.dim(axis) : 1,
                inner = nn_prod(x.shape(), size_t(axis) + 1);
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double e = v[size_t((o * len + k) * inner + i)];
        norm += p == 1 ? std::fabs(e) : e * e;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < len; ++k) {
        const size_t idx = size_t((o * len + k) * inner + i);
        out[idx] = norm == 0 ? 0.0 : v[idx] / norm;
      }
    }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
}

void mvn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  const int64_t r = x.rank();
  std::vector<int64_t> axes = ctx.attr_ints("axes", {0, 2, 3});
  std::vector<bool> reduced(size_t(r), false);
  for (int64_t a : axes) reduced[size_t(nn_axis(ctx, a, r, "axes entry"))] = true;
  // Group elements by their coordinates on the kept axes.
  const Shape& s = x.shape();
  const int64_t total = x.numel();
  std::vector<int64_t> group(static_cast<size_t>(total));
  std::vector<int64_t> coord(size_t(r), 0);
  int64_t ngroups = 1;
  for (int64_t d = 0; d < r; ++d)
    if (!reduced[size_t(d)]) ngroups *= s[size_t(d)];
  for (int64_t f = 0; f < total; ++f) {
    int64_t gid = 0;
    for (int64_t d = 0; d < r; ++d)
      if (!reduced[size_t(d)]) gid = gid * s[size_t(d)] + coord[size_t(d)];
    group[size_t(f)] = gid;
    for (int64_t d = r; d-- > 0;) {
      if (++coord[size_t(d)] < s[size_t(d)]) break;
      coord[size_t(d)] = 0;
    }
  }
  const std::vector<double> v = nn_load(x);
  std::vector<double> sum(size_t(ngroups), 0), sq(size_t(ngroups), 0), cnt(size_t(ngroups), 0);
  for (int64_t f = 0; f < total; ++f) {
    sum[size_t(group[size_t(f)])] += v[size_t(f)];
    cnt[size_t(group[size_t(f)])] += 1;
  }
  for (size_t gi = 0; gi < sum.size(); ++gi) sum[gi] /= cnt[gi] > 0 ? cnt[gi] : 1;
  for (int64_t f = 0; f < total; ++f) {
    const double d = v[size_t(f)] - sum[size_t(group[size_t(f)])];
    sq[size_t(group[size_t(f)])] += d * d;
  }
  std::vector<double> out(v.size());
  for (int64_t f = 0; f < total; ++f) {
    const size_t gi = size_t(group[size_t(f)]);
    const double sd = std::sqrt(sq[gi] / (cnt[gi] > 0 ? cnt[gi] : 1));
    out[size_t(f)] = (v[size_t(f)] - sum[gi]) / (sd + 1e-9);
  }
  nn_emit(ctx, 0, x.dtype(), s, out);
}

void lrn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  ctx.check(x.rank() >= 2, "input must have rank >= 2, got ", x.text());
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f),
               bias = ctx.attr_float("bias", 1.0f);
  const int64_t size = ctx.required_attr_int("size");
  ctx.check(size >= 1, "size must be >= 1, got ", size);
  const int64_t n = x.dim(0), c = x.dim(1), sp = nn_prod(x.shape(), 2);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < sp; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
          const double e = v[size_t((b * c + k) * sp + i)];
          sq += e * e;
        }
        const size_t idx = size_t((b * c + ch) * sp + i);
        out[idx] = v[idx] / std::pow(bias + alpha / double(size) * sq, beta);
      }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
}

}  // namespace

void register_normalization_kernels(KernelTable& t) {
  t.add("BatchNormalization", batchnorm_kernel);
  t.add("InstanceNormalization", instancenorm_kernel);
  t.add("LayerNormalization", layernorm_kernel<false>);
  t.add("RMSNormalization", layernorm_kernel<true>);
  t.add("GroupNormalization", groupnorm_kernel);
  t.add("LpNormalization", lpnorm_kernel);
  t.add("MeanVarianceNormalization", mvn_kernel);
  t.add("LRN", lrn_kernel);
}

}  // namespace tessera::kernels::ref
