// Schemas and shape inference: reduction family.
#include "ir/op_registry.h"
#include "ir/ops/shape_infer_util.h"

namespace tessera::ir {

using namespace shape_infer;
using K = Attribute::Kind;

namespace {

void infer_reduce(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    auto c = const_ints(ctx, 1);
    if (!c) {
      const bool keep = ctx.attr_int("keepdims", 1) != 0;
      ctx.set_output(0, t, keep ? std::optional<Dims>(unknown_dims(r)) : std::nullopt);
      return;
    }
    axes = *c;
  } else {
    axes = ctx.attr_ints("axes");
  }
  std::vector<bool> mask(size_t(r), false);
  if (axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) {
      ctx.propagate(0, 0);
      return;
    }
    mask.assign(size_t(r), true);
  }
  for (int64_t a : axes) mask[size_t(norm_axis(ctx, a, r))] = true;
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  Dims out;
  for (int64_t d = 0; d < r; ++d) {
    if (!mask[size_t(d)]) out.push_back((*in)[size_t(d)]);
    else if (keep) out.push_back(Dim(1));
  }
  ctx.set_output(0, t, out);
}

void infer_arg(InferenceContext& ctx) {
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, DType::i64, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), std::max<int64_t>(r, 1));
  Dims out;
  for (int64_t d = 0; d < r; ++d) {
    if (d != axis) out.push_back((*in)[size_t(d)]);
    else if (ctx.attr_int("keepdims", 1) != 0) out.push_back(Dim(1));
  }
  ctx.set_output(0, DType::i64, out);
}

void infer_topk(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    ctx.set_output(1, DType::i64, std::nullopt);
    return;
  }
  Dims out = *in;
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), int64_t(in->size()));
  auto k = const_ints(ctx, 1);
  out[size_t(axis)] = (k && k->size() == 1) ? Dim((*k)[0]) : Dim();
  ctx.set_output(0, t, out);
  ctx.set_output(1, DType::i64, out);
}

const std::vector<AttrSpec> kReduceAttrs = {{"keepdims", K::i}, {"noop_with_empty_axes", K::i}, {"axes", K::ints}};

}  // namespace

void register_reduction_schemas(OpRegistry& r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    OpSchema s = make_schema(op, 1, 2, 1, 1, infer_reduce, kReduceAttrs);
    add_schema(r, std::move(s), "reduction");
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    OpSchema s = make_schema(op, 1, 1, 1, 1, infer_arg, {{"axis", K::i}, {"keepdims", K::i}, {"select_last_index", K::i}});
    add_schema(r, std::move(s), "reduction");
  }
  {
    OpSchema s = make_schema("TopK", 2, 2, 2, 2, infer_topk, {{"axis", K::i}, {"largest", K::i}, {"sorted", K::i}});
    add_schema(r, std::move(s), "reduction");
  }
  for (const char* op : {"CumSum", "CumProd"}) {
    OpSchema s = make_schema(op, 2, 2, 1, 1, infer_same_as_input0, {{"exclusive", K::i}, {"reverse", K::i}});
    add_schema(r, std::move(s), "reduction");
  }
}

}  // namespace tessera::ir
