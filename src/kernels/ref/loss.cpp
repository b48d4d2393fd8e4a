// Reference kernels: loss family.
//   NegativeLogLikelihoodLoss(input [N,C,d...], target [N,d...], weight [C]?)
//     loss[n,d] = -input[n, target[n,d], d] * w[target[n,d]]   (0 where target == ignore_index)
//     reduction: none | sum | mean (sum / sum of the weights applied)
//   SoftmaxCrossEntropyLoss(scores, labels, weights?) = NLL(log_softmax(scores, axis 1), ...),
//     second output: the log-probabilities.
// Computed in double; the output has the input's type.
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

template <typename T>
void write_values(Tensor& out, const std::vector<double>& v) {
  T* p = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = from_double<T>(v[i]);
}

void write_output(KernelContext& ctx, size_t idx, DType t, const Shape& shape, const std::vector<double>& v) {
  Tensor& out = ctx.output(idx, t, shape);
  dispatch_dtype(t, [&]<typename T>() {
    if constexpr (std::is_arithmetic_v<T> || kIsNarrowFloat<T>)
      write_values<T>(out, v);
    else
      ctx.fail(ErrorCode::unsupported, "loss of type ", dtype_name(t));
  });
}

// NLL over log-probabilities `x` laid out [N, C, D] (D = product of trailing dims).
void nll(KernelContext& ctx, const std::vector<double>& x, const Shape& xshape, const Tensor& target,
         const Tensor* weight, DType out_type) {
  ctx.check(xshape.size() >= 2, "input must have rank >= 2, got ", shape_text(xshape));
  const int64_t n = xshape[0], c = xshape[1];
  int64_t d = 1;
  for (size_t i = 2; i < xshape.size(); ++i) d *= xshape[i];
  Shape want_t(xshape.begin(), xshape.end());
  want_t.erase(want_t.begin() + 1);
  ctx.check(target.shape() == want_t, "target shape ", shape_text(target.shape()), " does not match input ",
            shape_text(xshape));
  ctx.check(is_integer(target.dtype()), "target must be an integer tensor");
  if (weight) ctx.check(weight->rank() == 1 && weight->dim(0) == c, "weight must have shape [", c, "]");
  const std::optional<int64_t> ignore =
      ctx.has_attr("ignore_index") ? std::optional<int64_t>(ctx.attr_int("ignore_index", 0)) : std::nullopt;
  const std::string reduction = ctx.attr_string("reduction", "mean");
  ctx.check(reduction == "none" || reduction == "sum" || reduction == "mean", "unknown reduction '",
            reduction, "'");
  const std::vector<int64_t> tv = target.to_int_vector();
  const std::vector<double> wv = weight ? weight->to_double_vector() : std::vector<double>{};
  std::vector<double> loss(size_t(n * d));
  double wsum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = tv[size_t(i * d + j)];
      if (ignore && t == *ignore) continue;
      ctx.check(t >= 0 && t < c, "target value ", t, " out of range [0, ", c, ")");
      const double w = weight ? wv[size_t(t)] : 1.0;
      loss[size_t(i * d + j)] = -x[size_t((i * c + t) * d + j)] * w;
      wsum += w;
    }
  if (reduction == "none") {
    write_output(ctx, 0, out_type, target.shape(), loss);
    return;
  }
  double s = 0;
  for (double v : loss) s += v;
  if (reduction == "mean")
    s = wsum != 0 ? s / wsum : (weight ? std::numeric_limits<double>::quiet_NaN() : 0.0);
  write_output(ctx, 0, out_type, {}, {s});
}

void negative_log_likelihood_loss(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nll(ctx, x.to_double_vector(), x.shape(), ctx.required_input(1), ctx.input(2), x.dtype());
}

void softmax_cross_entropy_loss(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.check(x.rank() >= 2, "scores must have rank >= 2, got ", shape_text(x.shape()));
  const int64_t n = x.dim(0), c = x.dim(1), d = x.numel() / std::max<int64_t>(n * c, 1);
  std::vector<double> lp = x.to_double_vector();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, lp[size_t((i * c + k) * d + j)]);
      double sum = 0;
      for (int64_t k = 0; k < c; ++k) sum += std::exp(lp[size_t((i * c + k) * d + j)] - mx);
      const double lse = mx + std::log(sum);
      for (int64_t k = 0; k < c; ++k) lp[size_t((i * c + k) * d + j)] -= lse;
    }
  nll(ctx, lp, x.shape(), ctx.required_input(1), ctx.input(2), x.dtype());
  if (ctx.num_outputs() > 1 && ctx.output_requested(1)) write_output(ctx, 1, x.dtype(), x.shape(), lp);
}

}  // namespace

void register_loss_kernels(KernelTable& t) {
  t.add("NegativeLogLikelihoodLoss", negative_log_likelihood_loss);
  t.add("SoftmaxCrossEntropyLoss", softmax_cross_entropy_loss);
}

}  // namespace tessera::kernels::ref
