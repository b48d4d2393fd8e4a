// Reference kernels: softmax family (Softmax, LogSoftmax, Hardmax).
// Opset >= 13: the op runs along `axis` (default -1). Opset < 13: the input is
// coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] (default axis 1) and the
// op runs along the second dim.
#include <cmath>
#include <limits>

#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

enum class Mode { softmax, log_softmax, hardmax };

template <Mode M>
void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  const int64_t r = x.rank();
  const bool legacy = ctx.opset() > 0 && ctx.opset() < 13;
  const int64_t axis = nn_axis(ctx, ctx.attr_int("axis", legacy ? 1 : -1), r);
  const Shape& s = x.shape();
  // outer x len x inner view.
  int64_t outer, len, inner;
  if (r == 0) {
    outer = len = inner = 1;
  } else if (legacy) {
    outer = nn_prod(s, 0, size_t(axis));
    len = nn_prod(s, size_t(axis));
    inner = 1;
  } else {
    outer = nn_prod(s, 0, size_t(axis));
    len = s[size_t(axis)];
    inner = nn_prod(s, size_t(axis) + 1);
  }
  const std::vector<double> v = nn_load(x);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t k) { return size_t((o * len + k) * inner + in); };
      if (len == 0) continue;
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      int64_t arg = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double e = v[at(k)];
        if (std::isnan(e)) nan = true;
        if (e > mx) {
          mx = e;
          arg = k;
        }
      }
      if constexpr (M == Mode::hardmax) {
        for (int64_t k = 0; k < len; ++k) out[at(k)] = k == arg ? 1.0 : 0.0;
        continue;
      }
      if (nan) {
        for (int64_t k = 0; k < len; ++k) out[at(k)] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(v[at(k)] - mx);
      for (int64_t k = 0; k < len; ++k) {
        const double d = v[at(k)] - mx;
        out[at(k)] = M == Mode::softmax ? std::exp(d) / sum : d - std::log(sum);
      }
    }
  nn_emit(ctx, 0, x.dtype(), s, out);
}

}  // namespace

void register_softmax_kernels(KernelTable& t) {
  t.add("Softmax", softmax_kernel<Mode::softmax>);
  t.add("LogSoftmax", softmax_kernel<Mode::log_softmax>);
  t.add("Hardmax", softmax_kernel<Mode::hardmax>);
}

}  // namespace tessera::kernels::ref
