// Schemas and shape inference: pool family (MaxPool, AveragePool, LpPool,
// Global{Average,Max,Lp}Pool, MaxUnpool, MaxRoiPool, RoiAlign).
#include "ir/ops/nn_infer.h"

namespace tessera::ir {

namespace {
using nn::A;

void infer_pool(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto x = nn::shape_of(ctx, 0);
  std::optional<std::vector<Dim>> out;
  if (x) {
    if (x->size() < 3) ctx.fail("X must have rank >= 3, got ", x->size());
    const std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
    if (k.size() != x->size() - 2)
      ctx.fail("kernel_shape has ", k.size(), " dims for ", x->size() - 2, " spatial dims");
    std::vector<Dim> o{(*x)[0], (*x)[1]};
    auto sp = nn::spatial_out(ctx, *x, k, ctx.attr_int("ceil_mode", 0) != 0);
    o.insert(o.end(), sp.begin(), sp.end());
    out = o;
  }
  ctx.set_output(0, t, out);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::i64, out);
}

void infer_global_pool(InferenceContext& ctx) {
  auto x = nn::shape_of(ctx, 0);
  std::optional<std::vector<Dim>> out;
  if (x) {
    if (x->size() < 2) ctx.fail("X must have rank >= 2, got ", x->size());
    out = std::vector<Dim>(x->begin(), x->begin() + 2);
    out->resize(x->size(), Dim(1));
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_max_unpool(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto x = nn::shape_of(ctx, 0);
  if (ctx.has_input(2)) {
    const Tensor* os = ctx.input_constant(2);
    if (!os) return ctx.set_output(0, t, std::nullopt);
    std::vector<Dim> o;
    for (int64_t d : os->to_int_vector()) o.push_back(Dim(d));
    return ctx.set_output(0, t, o);
  }
  if (!x) return ctx.set_output(0, t, std::nullopt);
  if (x->size() < 3) ctx.fail("X must be [N, C, spatial...], got rank ", x->size());
  const std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
  const size_t nsp = x->size() - 2;
  if (k.size() != nsp) ctx.fail("kernel_shape has ", k.size(), " dims for ", nsp, " spatial dims");
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (strides.size() != nsp || pads.size() != 2 * nsp)
    ctx.fail("strides has ", strides.size(), " and pads ", pads.size(), " values for ", nsp, " spatial dims");
  std::vector<Dim> o{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < nsp; ++i) {
    if (k[i] < 1 || strides[i] < 1 || pads[i] < 0 || pads[nsp + i] < 0)
      ctx.fail("kernel_shape and strides must be positive and pads non-negative");
    const Dim& in = (*x)[2 + i];
    if (!in.known()) {
      o.push_back(Dim());
      continue;
    }
    const int64_t d = (in.value - 1) * strides[i] + k[i] - pads[i] - pads[nsp + i];
    if (in.value > 0 && d < 0) ctx.fail("pads leave spatial dim ", i, " a negative size ", d);
    o.push_back(Dim(std::max<int64_t>(d, 0)));
  }
  ctx.set_output(0, t, o);
}

void infer_roi(InferenceContext& ctx, int64_t h, int64_t w) {
  auto x = nn::shape_of(ctx, 0);
  auto rois = nn::shape_of(ctx, 1);
  const Dim r = rois && !rois->empty() ? (*rois)[0] : Dim();
  const Dim c = x && x->size() >= 2 ? (*x)[1] : Dim();
  ctx.set_output(0, ctx.input_dtype(0), std::vector<Dim>{r, c, Dim(h), Dim(w)});
}

void infer_max_roi_pool(InferenceContext& ctx) {
  const std::vector<int64_t> ps = ctx.attr_ints("pooled_shape");
  if (ps.size() != 2) ctx.fail("pooled_shape must have 2 values");
  infer_roi(ctx, ps[0], ps[1]);
}

void infer_roi_align(InferenceContext& ctx) {
  infer_roi(ctx, ctx.attr_int("output_height", 1), ctx.attr_int("output_width", 1));
}

void add(OpRegistry& r, OpSchema s) {
  s.family = "pool";
  r.add(std::move(s));
}
}  // namespace

void register_pool_schemas(OpRegistry& r) {
  const std::vector<AttrSpec> window{{"auto_pad", A::s},        {"ceil_mode", A::i}, {"dilations", A::ints},
                                     {"kernel_shape", A::ints}, {"pads", A::ints},   {"strides", A::ints}};
  auto with = [&](std::vector<AttrSpec> extra) {
    std::vector<AttrSpec> v = window;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  add(r, make_schema("MaxPool", 1, 1, 1, 2, infer_pool, with({{"storage_order", A::i}})));
  add(r, make_schema("AveragePool", 1, 1, 1, 1, infer_pool, with({{"count_include_pad", A::i}})));
  add(r, make_schema("LpPool", 1, 1, 1, 1, infer_pool, with({{"p", A::i}})));
  add(r, make_schema("GlobalAveragePool", 1, 1, 1, 1, infer_global_pool));
  add(r, make_schema("GlobalMaxPool", 1, 1, 1, 1, infer_global_pool));
  add(r, make_schema("GlobalLpPool", 1, 1, 1, 1, infer_global_pool, {{"p", A::i}}));
  add(r, make_schema("MaxUnpool", 2, 3, 1, 1, infer_max_unpool,
                     {{"kernel_shape", A::ints}, {"pads", A::ints}, {"strides", A::ints}}));
  add(r, make_schema("MaxRoiPool", 2, 2, 1, 1, infer_max_roi_pool,
                     {{"pooled_shape", A::ints}, {"spatial_scale", A::f}}));
  add(r, make_schema("RoiAlign", 3, 3, 1, 1, infer_roi_align,
                     {{"coordinate_transformation_mode", A::s},
                      {"mode", A::s},
                      {"output_height", A::i},
                      {"output_width", A::i},
                      {"sampling_ratio", A::i},
                      {"spatial_scale", A::f}}));
}

}  // namespace tessera::ir
