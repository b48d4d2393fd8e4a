// Schemas and shape inference: resize family (Resize, Upsample, GridSample, AffineGrid).
#include <cmath>

#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

void infer_resize(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& xs = ctx.input_shape(0);
  if (!xs) return ctx.set_output(0, t, std::nullopt);
  const int64_t r = int64_t(xs->size());
  std::vector<Dim> out(xs->size());  // unknown dims unless computable
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty())
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  for (int64_t& a : axes) {
    if (a < -r || a >= r) ctx.fail("axes value ", a, " out of range for rank ", r);
    if (a < 0) a += r;
  }
  std::vector<bool> resized(size_t(r), false);
  for (int64_t a : axes) resized[size_t(a)] = true;
  for (int64_t d = 0; d < r; ++d)
    if (!resized[size_t(d)]) out[size_t(d)] = (*xs)[size_t(d)];
  const bool two = ctx.num_inputs() == 2 && ctx.node().opset > 0 && ctx.node().opset < 11;
  const Tensor* scales = ctx.input_constant(two ? 1 : 2);
  const Tensor* sizes = two ? nullptr : ctx.input_constant(3);
  const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  if (scales && scales->numel() == int64_t(axes.size()) && scales->numel() > 0) {
    const std::vector<double> sv = scales->to_double_vector();
    for (size_t i = 0; i < axes.size(); ++i) {
      const Dim& in = (*xs)[size_t(axes[i])];
      if (in.known()) out[size_t(axes[i])] = Dim(int64_t(std::floor(sv[i] * double(in.value))));
    }
  } else if (sizes && sizes->numel() == int64_t(axes.size()) && policy == "stretch") {
    const std::vector<int64_t> zv = sizes->to_int_vector();
    for (size_t i = 0; i < axes.size(); ++i) out[size_t(axes[i])] = Dim(zv[i]);
  }
  ctx.set_output(0, t, out);
}

void infer_grid_sample(InferenceContext& ctx) {
  const auto& xs = ctx.input_shape(0);
  const auto& gs = ctx.input_shape(1);
  if (!xs || !gs) return ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
  if (xs->size() < 3 || gs->size() != xs->size()) ctx.fail("GridSample: input and grid ranks are incompatible");
  std::vector<Dim> out{(*xs)[0], (*xs)[1]};
  for (size_t i = 1; i + 1 < gs->size(); ++i) out.push_back((*gs)[i]);
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_affine_grid(InferenceContext& ctx) {
  const Tensor* sz = ctx.input_constant(1);
  if (!sz) return ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
  const std::vector<int64_t> v = sz->to_int_vector();
  if (v.size() == 4) ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{v[0], v[2], v[3], 2});
  else if (v.size() == 5) ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{v[0], v[2], v[3], v[4], 3});
  else ctx.fail("AffineGrid: size must have 4 or 5 values");
}

}  // namespace

void register_resize_schemas(OpRegistry& r) {
  r.add(make_schema("Resize", 1, 4, 1, 1, infer_resize,
                    {{"antialias", K::i}, {"axes", K::ints}, {"coordinate_transformation_mode", K::s},
                     {"cubic_coeff_a", K::f}, {"exclude_outside", K::i}, {"extrapolation_value", K::f},
                     {"keep_aspect_ratio_policy", K::s}, {"mode", K::s}, {"nearest_mode", K::s}}));
  r.add(make_schema("Upsample", 1, 2, 1, 1, infer_resize, {{"mode", K::s}, {"scales", K::floats}}));
  r.add(make_schema("GridSample", 2, 2, 1, 1, infer_grid_sample,
                    {{"align_corners", K::i}, {"mode", K::s}, {"padding_mode", K::s}}));
  r.add(make_schema("AffineGrid", 2, 2, 1, 1, infer_affine_grid, {{"align_corners", K::i}}));
}

}  // namespace tessera::ir
