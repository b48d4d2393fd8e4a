// Shape-inference helpers shared by the nn op families (linalg, conv, pool,
// normalization, softmax, attention).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace tessera::ir::nn {

using A = Attribute::Kind;

inline std::optional<std::vector<Dim>> shape_of(const InferenceContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.input_shape(i) : std::nullopt;
}

// Output length of one sliding-window dim (conv / pool). `pad_total` is the
// sum of begin + end padding. Unknown input -> unknown output.
inline Dim window_out(const Dim& in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_total,
                      bool ceil_mode) {
  if (!in.known()) return Dim();
  const int64_t eff = (k - 1) * dilation + 1;
  const int64_t span = in.value + pad_total - eff;
  if (span < 0) return Dim(0);
  int64_t out = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in.value) --out;  // last window must start inside
  return Dim(out);
}

// Spatial output dims for conv / pool style ops on input shape [N, C, d...].
// kernel: spatial kernel dims; attributes strides/dilations/pads/auto_pad read from ctx.
inline std::vector<Dim> spatial_out(const InferenceContext& ctx, const std::vector<Dim>& x,
                                    const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t nsp = kernel.size();
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp)
    ctx.fail("strides/dilations/pads do not match the ", nsp, " spatial dims");
  std::vector<Dim> out;
  for (size_t i = 0; i < nsp; ++i) {
    const Dim& in = x[2 + i];
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0) ctx.fail("strides, dilations and kernel must be positive");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(in.known() ? Dim((in.value + strides[i] - 1) / strides[i]) : Dim());
    } else if (auto_pad == "VALID") {
      out.push_back(window_out(in, kernel[i], strides[i], dil[i], 0, ceil_mode));
    } else {
      const int64_t pb = pads[i], pe = pads[nsp + i];
      if (!in.known()) {
        out.push_back(Dim());
        continue;
      }
      const int64_t eff = (kernel[i] - 1) * dil[i] + 1;
      const int64_t span = in.value + pb + pe - eff;
      if (span < 0) ctx.fail("kernel extent ", eff, " exceeds padded input ", in.value + pb + pe);
      int64_t o = ceil_mode ? (span + strides[i] - 1) / strides[i] + 1 : span / strides[i] + 1;
      if (ceil_mode && (o - 1) * strides[i] >= in.value + pb) --o;
      out.push_back(Dim(o));
    }
  }
  return out;
}

}  // namespace tessera::ir::nn
