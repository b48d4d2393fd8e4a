// A plain N-D convolution over int64 values for the integer conv ops
// (ConvInteger, QLinearConv): x [N, C, D1..Dk], w [M, C/group, K1..Kk].
#pragma once

#include <string>
#include <vector>

#include "core/kernel_context.h"
#include "kernels/ref/misc_util.h"

namespace tessera::kernels::ref::misc {

struct ConvGeometry {
  int64_t n = 0, c = 0, m = 0, group = 1;
  Shape in_sp, k_sp, out_sp;
  std::vector<int64_t> strides, dilations, pads_begin;
  Shape out_shape() const {
    Shape s{n, m};
    s.insert(s.end(), out_sp.begin(), out_sp.end());
    return s;
  }
};

inline ConvGeometry conv_geometry(const KernelContext& ctx, const Shape& xs, const Shape& ws) {
  ConvGeometry g;
  ctx.check(xs.size() >= 3, "input must have rank >= 3 (N, C, spatial...), got ", shape_text(xs));
  ctx.check(ws.size() == xs.size(), "weight rank ", ws.size(), " differs from input rank ", xs.size());
  const size_t k = xs.size() - 2;
  g.n = xs[0];
  g.c = xs[1];
  g.m = ws[0];
  g.group = ctx.attr_int("group", 1);
  ctx.check(g.group >= 1 && g.c % g.group == 0 && g.m % g.group == 0, "group ", g.group,
            " must divide input channels ", g.c, " and output channels ", g.m);
  ctx.check(ws[1] * g.group == g.c, "weight has ", ws[1], " channels per group, expected ", g.c / g.group);
  g.in_sp.assign(xs.begin() + 2, xs.end());
  g.k_sp.assign(ws.begin() + 2, ws.end());
  auto ks = ctx.attr_ints("kernel_shape");
  if (!ks.empty()) {
    ctx.check(ks.size() == k, "kernel_shape has ", ks.size(), " values, expected ", k);
    for (size_t i = 0; i < k; ++i) ctx.check(ks[i] == g.k_sp[i], "kernel_shape does not match the weight shape");
  }
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(k, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(k, 1));
  ctx.check(g.strides.size() == k && g.dilations.size() == k, "strides/dilations must have ", k, " values");
  for (size_t i = 0; i < k; ++i) ctx.check(g.strides[i] >= 1 && g.dilations[i] >= 1, "strides and dilations must be >= 1");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  ctx.check(pads.size() == 2 * k, "pads must have ", 2 * k, " values");
  const std::string ap = ctx.attr_string("auto_pad", "NOTSET");
  g.pads_begin.assign(k, 0);
  g.out_sp.assign(k, 0);
  for (size_t i = 0; i < k; ++i) {
    const int64_t ek = (g.k_sp[i] - 1) * g.dilations[i] + 1;
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      const int64_t out = (g.in_sp[i] + g.strides[i] - 1) / g.strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + ek - g.in_sp[i]);
      g.pads_begin[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.out_sp[i] = out;
    } else if (ap == "VALID") {
      g.out_sp[i] = (g.in_sp[i] - ek) / g.strides[i] + 1;
    } else {
      ctx.check(ap == "NOTSET", "unknown auto_pad '", ap, "'");
      g.pads_begin[i] = pads[i];
      g.out_sp[i] = (g.in_sp[i] + pads[i] + pads[i + k] - ek) / g.strides[i] + 1;
    }
    ctx.check(g.out_sp[i] >= 0, "convolution output would be empty/negative");
    if (g.out_sp[i] < 0) g.out_sp[i] = 0;
  }
  return g;
}

// y[n, m, o...] = sum over c in group, kernel offsets of x * w (zero outside).
inline std::vector<int64_t> conv_int(const ConvGeometry& g, const std::vector<int64_t>& x,
                                     const std::vector<int64_t>& w) {
  const size_t k = g.in_sp.size();
  const int64_t in_sz = shape_numel(g.in_sp), k_sz = shape_numel(g.k_sp), out_sz = shape_numel(g.out_sp);
  const int64_t cpg = g.c / g.group, mpg = g.m / g.group;
  std::vector<int64_t> y(size_t(g.n * g.m * out_sz), 0);
  std::vector<int64_t> oi, ki;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.m; ++m) {
      const int64_t grp = m / mpg;
      for (int64_t o = 0; o < out_sz; ++o) {
        unravel(o, g.out_sp, oi);
        int64_t acc = 0;
        for (int64_t kk = 0; kk < k_sz; ++kk) {
          unravel(kk, g.k_sp, ki);
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < k; ++d) {
            const int64_t p = oi[d] * g.strides[d] - g.pads_begin[d] + ki[d] * g.dilations[d];
            if (p < 0 || p >= g.in_sp[d]) {
              inside = false;
              break;
            }
            off = off * g.in_sp[d] + p;
          }
          if (!inside) continue;
          for (int64_t c = 0; c < cpg; ++c) {
            const int64_t ci = grp * cpg + c;
            acc += x[size_t((n * g.c + ci) * in_sz + off)] * w[size_t((m * cpg + c) * k_sz + kk)];
          }
        }
        y[size_t((n * g.m + m) * out_sz + o)] = acc;
      }
    }
  return y;
}

}  // namespace tessera::kernels::ref::misc
