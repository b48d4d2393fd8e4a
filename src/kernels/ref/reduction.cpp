// Reference kernels: reduction family (Reduce*, ArgMax/ArgMin, TopK, CumSum, CumProd).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/ref/registry.h"
#include "kernels/ref/shape_util.h"

namespace tessera::kernels::ref {

using namespace shape_util;

namespace {

enum class RK { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

// The axes a Reduce* node reduces over, as a per-dim mask. Returns false for
// "no reduction" (empty axes with noop_with_empty_axes).
bool reduce_axes(const KernelContext& ctx, int64_t rank, std::vector<bool>& mask) {
  std::vector<int64_t> axes;
  bool given = false;
  if (ctx.has_input(1)) {
    const Tensor& a = *ctx.input(1);
    ctx.check(is_integer(a.dtype()) && a.rank() <= 1, "axes must be a 1-D integer tensor, got ", a.text());
    axes = a.to_int_vector();
    given = true;
  } else if (ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes");
    given = true;
  }
  mask.assign(size_t(rank), false);
  if (!given || axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) return false;
    mask.assign(size_t(rank), true);
    return true;
  }
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(ctx, a, rank, "reduction axis");
    ctx.check(!mask[size_t(n)], "reduction axis ", a, " is repeated");
    mask[size_t(n)] = true;
  }
  return true;
}

template <typename T>
void reduce_typed(KernelContext& ctx, const Tensor& x, const std::vector<bool>& mask, RK kind,
                  bool keepdims) {
  using W = WideOf<T>;
  constexpr bool kFloat = std::is_same_v<W, double>;
  const Shape& in_shape = x.shape();
  const int64_t rank = x.rank();
  Shape kept(in_shape), out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (mask[size_t(d)]) kept[size_t(d)] = 1;
    if (!mask[size_t(d)] || keepdims) out_shape.push_back(kept[size_t(d)]);
  }
  const int64_t out_n = shape_numel(kept);
  // Output strides over the input's multi-index (0 along reduced dims).
  std::vector<int64_t> ostr = contiguous_strides(kept);
  for (int64_t d = 0; d < rank; ++d)
    if (mask[size_t(d)]) ostr[size_t(d)] = 0;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (mask[size_t(d)]) count *= in_shape[size_t(d)];

  W init{};
  switch (kind) {
    case RK::prod:
      init = W(1);
      break;
    case RK::max:
      if constexpr (kFloat)
        init = -std::numeric_limits<double>::infinity();
      else if constexpr (kIsSubByteInt<T>)
        init = W(T::kMin);
      else
        init = W(std::numeric_limits<T>::lowest());
      break;
    case RK::min:
      if constexpr (kFloat)
        init = std::numeric_limits<double>::infinity();
      else if constexpr (kIsSubByteInt<T>)
        init = W(T::kMax);
      else
        init = W(std::numeric_limits<T>::max());
      break;
    default:
      init = W(0);
  }
  std::vector<W> acc(size_t(out_n), init);
  std::vector<double> mx;  // per-output max for log_sum_exp
  const T* src = x.data<T>();
  const int64_t n = x.numel();

  auto walk = [&](auto&& f) {
    if (n == 0) return;
    std::vector<int64_t> idx(size_t(rank), 0);
    int64_t o = 0;
    for (int64_t i = 0; i < n; ++i) {
      f(o, src[i]);
      // advance idx and o together
      for (int64_t d = rank; d-- > 0;) {
        o += ostr[size_t(d)];
        if (++idx[size_t(d)] < in_shape[size_t(d)]) break;
        o -= ostr[size_t(d)] * in_shape[size_t(d)];
        idx[size_t(d)] = 0;
      }
    }
  };

  if (kind == RK::log_sum_exp) {
    mx.assign(size_t(out_n), -std::numeric_limits<double>::infinity());
    walk([&](int64_t o, const T& v) {
      const double d = to_double(v);
      if (std::isnan(d) || d > mx[size_t(o)]) mx[size_t(o)] = d;
    });
    std::vector<double> s(size_t(out_n), 0.0);
    walk([&](int64_t o, const T& v) {
      const double m = mx[size_t(o)];
      s[size_t(o)] += std::isfinite(m) ? std::exp(to_double(v) - m) : std::exp(to_double(v));
    });
    T* dst = ctx.output(0, x.dtype(), out_shape).template data<T>();
    for (int64_t o = 0; o < out_n; ++o) {
      const double m = mx[size_t(o)];
      const double r = std::isfinite(m) ? m + std::log(s[size_t(o)]) : std::log(s[size_t(o)]);
      dst[o] = from_wide<T>(W(r));
    }
    return;
  }

  walk([&](int64_t o, const T& v) {
    const W w = to_wide(v);
    W& a = acc[size_t(o)];
    switch (kind) {
      case RK::sum:
      case RK::mean:
      case RK::log_sum:
        a = W(a + w);
        break;
      case RK::prod:
        a = W(a * w);
        break;
      case RK::max:
        if constexpr (kFloat) {
          if (std::isnan(w) || w > a) a = w;
        } else if (w > a)
          a = w;
        break;
      case RK::min:
        if constexpr (kFloat) {
          if (std::isnan(w) || w < a) a = w;
        } else if (w < a)
          a = w;
        break;
      case RK::l1:
        if constexpr (std::is_signed_v<W>)
          a = W(a + (w < 0 ? W(-w) : w));
        else
          a = W(a + w);
        break;
      case RK::l2:
      case RK::sum_square:
        a = W(a + w * w);
        break;
      case RK::log_sum_exp:
        break;
    }
  });
  // NaN already in the accumulator must stay (max/min compare above handles new NaNs).
  T* dst = ctx.output(0, x.dtype(), out_shape).template data<T>();
  for (int64_t o = 0; o < out_n; ++o) {
    W a = acc[size_t(o)];
    switch (kind) {
      case RK::mean:
        if constexpr (kFloat)
          a = a / double(count);
        else
          a = count ? W(a / W(count)) : W(0);
        break;
      case RK::l2:
        a = W(std::sqrt(double(a)));
        break;
      case RK::log_sum:
        a = W(std::log(double(a)));
        break;
      default:
        break;
    }
    dst[o] = from_wide<T>(a);
  }
}

template <RK kKind>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor x = x0.contiguous();
  std::vector<bool> mask;
  // noop_with_empty_axes: a reduction over no axes, which still applies the kind's per-element part
  // (ReduceSumSquare x^2, ReduceL1 |x|, ReduceLogSum log x), as onnx's reference and onnxruntime do
  if (!reduce_axes(ctx, x.rank(), mask)) mask.assign(size_t(x.rank()), false);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsNumeric<T> && !std::is_same_v<T, bool>) {
      reduce_typed<T>(ctx, x, mask, kKind, keepdims);
    } else {
      ctx.fail(ErrorCode::unsupported, "element type ", dtype_name(x.dtype()), " is not supported");
    }
  });
}

// Boolean ReduceMax/ReduceMin are "any" / "all".
template <RK kKind>
void reduce_entry(KernelContext& ctx) {
  const Tensor* x = ctx.input(0);
  if (x && x->dtype() == DType::boolean) {
    const Tensor xc = x->contiguous();
    std::vector<bool> mask;
    if (!reduce_axes(ctx, xc.rank(), mask)) {
      ctx.set_output(0, DataValue(xc));
      return;
    }
    ctx.check(kKind == RK::max || kKind == RK::min, "boolean input is only supported by ReduceMax/ReduceMin");
    const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
    Shape out_shape, kept(xc.shape());
    for (int64_t d = 0; d < xc.rank(); ++d) {
      if (mask[size_t(d)]) kept[size_t(d)] = 1;
      if (!mask[size_t(d)] || keepdims) out_shape.push_back(kept[size_t(d)]);
    }
    const auto ostr_full = contiguous_strides(kept);
    Tensor& out = ctx.output(0, DType::boolean, out_shape);
    bool* dst = out.data<bool>();
    const bool init = kKind == RK::min;
    std::fill(dst, dst + out.numel(), init);
    const bool* src = xc.data<bool>();
    if (xc.numel() == 0) return;
    std::vector<int64_t> idx(size_t(xc.rank()), 0);
    for (int64_t i = 0; i < xc.numel(); ++i) {
      int64_t o = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        if (!mask[d]) o += idx[d] * ostr_full[d];
      if (kKind == RK::max)
        dst[o] = dst[o] || src[i];
      else
        dst[o] = dst[o] && src[i];
      next_index(idx, xc.shape());
    }
    return;
  }
  reduce_kernel<kKind>(ctx);
}

// ---- ArgMax / ArgMin ----
template <bool kMax>
void arg_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const int64_t rank = x.rank();
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), std::max<int64_t>(rank, 1));
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.attr_int("select_last_index", 0) != 0;
  Shape shape = x.shape();
  if (rank == 0) shape = {1};
  const int64_t outer = dims_product(shape, 0, axis), len = shape[size_t(axis)],
                inner = dims_product(shape, axis + 1, int64_t(shape.size()));
  ctx.check(len > 0, "cannot take ", kMax ? "ArgMax" : "ArgMin", " over an empty axis");
  Shape out_shape;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d == axis) {
      if (keepdims) out_shape.push_back(1);
    } else
      out_shape.push_back(shape[size_t(d)]);
  }
  if (rank == 0) out_shape = {};
  Tensor& out = ctx.output(0, DType::i64, out_shape);
  int64_t* dst = out.data<int64_t>();
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsOrderable<T>) {
      const T* src = x.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          const T* p = src + o * len * inner + in;
          int64_t best = 0;
          auto bk = order_key(p[0]);
          for (int64_t k = 1; k < len; ++k) {
            auto v = order_key(p[k * inner]);
            bool better;
            if constexpr (std::is_floating_point_v<decltype(v)>) {
              if (std::isnan(bk))
                better = false;
              else if (std::isnan(v))
                better = true;
              else
                better = kMax ? (last ? v >= bk : v > bk) : (last ? v <= bk : v < bk);
            } else {
              better = kMax ? (last ? v >= bk : v > bk) : (last ? v <= bk : v < bk);
            }
            if (better) {
              best = k;
              bk = v;
            }
          }
          dst[o * inner + in] = best;
        }
    } else {
      ctx.fail(ErrorCode::unsupported, "element type ", dtype_name(x.dtype()), " is not supported");
    }
  });
}

// ---- TopK ----
void topk_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& kt = ctx.required_input(1);
  ctx.check(is_integer(kt.dtype()) && kt.numel() == 1, "K must be a single integer, got ", kt.text());
  const int64_t k = kt.at_int(0);
  const int64_t rank = x.rank();
  ctx.check(rank >= 1, "TopK needs an input of rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank);
  const bool largest = ctx.attr_int("largest", 1) != 0;
  const int64_t len = x.dim(axis);
  ctx.check(k >= 0 && k <= len, "K = ", k, " is out of range for axis of size ", len);
  const int64_t outer = dims_product(x.shape(), 0, axis), inner = dims_product(x.shape(), axis + 1, rank);
  Shape out_shape = x.shape();
  out_shape[size_t(axis)] = k;
  Tensor& vals = ctx.output(0, x.dtype(), out_shape);
  Tensor& inds = ctx.output(1, DType::i64, out_shape);
  int64_t* pi = inds.data<int64_t>();
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsOrderable<T>) {
      const T* src = x.data<T>();
      T* pv = vals.data<T>();
      std::vector<int64_t> order(static_cast<size_t>(len));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          const T* p = src + o * len * inner + in;
          std::iota(order.begin(), order.end(), 0);
          auto cmp = [&](int64_t a, int64_t b) {
            const auto va = order_key(p[a * inner]), vb = order_key(p[b * inner]);
            if constexpr (std::is_floating_point_v<decltype(va)>) {
              // NaN sorts as the largest value.
              const bool na = std::isnan(va), nb = std::isnan(vb);
              if (na || nb) {
                if (na && nb) return a < b;
                return largest ? na : nb;
              }
            }
            if (va == vb) return a < b;
            return largest ? va > vb : va < vb;
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
          for (int64_t j = 0; j < k; ++j) {
            pv[(o * k + j) * inner + in] = p[order[size_t(j)] * inner];
            pi[(o * k + j) * inner + in] = order[size_t(j)];
          }
        }
    } else {
      ctx.fail(ErrorCode::unsupported, "element type ", dtype_name(x.dtype()), " is not supported");
    }
  });
}

// ---- CumSum / CumProd ----
template <bool kProd>
void cum_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& at = ctx.required_input(1);
  ctx.check(is_integer(at.dtype()) && at.numel() == 1, "axis must be a single integer, got ", at.text());
  const int64_t rank = x.rank();
  ctx.check(rank >= 1, "input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, at.at_int(0), rank);
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  const int64_t len = x.dim(axis), outer = dims_product(x.shape(), 0, axis),
                inner = dims_product(x.shape(), axis + 1, rank);
  Tensor& out = ctx.output(0, x.dtype(), x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsNumeric<T> && !std::is_same_v<T, bool>) {
      using W = WideOf<T>;
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          W acc = kProd ? W(1) : W(0);
          for (int64_t j = 0; j < len; ++j) {
            const int64_t kk = reverse ? len - 1 - j : j;
            const int64_t off = (o * len + kk) * inner + in;
            const W v = to_wide(src[off]);
            if (!exclusive) acc = kProd ? W(acc * v) : W(acc + v);
            dst[off] = from_wide<T>(acc);
            if (exclusive) acc = kProd ? W(acc * v) : W(acc + v);
          }
        }
    } else {
      ctx.fail(ErrorCode::unsupported, "element type ", dtype_name(x.dtype()), " is not supported");
    }
  });
}

}  // namespace

void register_reduction_kernels(KernelTable& t) {
  t.add("ReduceSum", reduce_entry<RK::sum>);
  t.add("ReduceMean", reduce_entry<RK::mean>);
  t.add("ReduceMax", reduce_entry<RK::max>);
  t.add("ReduceMin", reduce_entry<RK::min>);
  t.add("ReduceProd", reduce_entry<RK::prod>);
  t.add("ReduceL1", reduce_entry<RK::l1>);
  t.add("ReduceL2", reduce_entry<RK::l2>);
  t.add("ReduceLogSum", reduce_entry<RK::log_sum>);
  t.add("ReduceLogSumExp", reduce_entry<RK::log_sum_exp>);
  t.add("ReduceSumSquare", reduce_entry<RK::sum_square>);
  t.add("ArgMax", arg_kernel<true>);
  t.add("ArgMin", arg_kernel<false>);
  t.add("TopK", topk_kernel);
  t.add("CumSum", cum_kernel<false>);
  t.add("CumProd", cum_kernel<true>);
}

}  // namespace tessera::kernels::ref
