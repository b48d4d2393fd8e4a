// Schemas and shape inference: indexing family.
#include "ir/op_registry.h"
#include "ir/ops/shape_infer_util.h"

namespace tessera::ir {

using namespace shape_infer;
using K = Attribute::Kind;

namespace {

void infer_gather(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& data = ctx.input_shape(0);
  const auto& ind = ctx.input_shape(1);
  if (!data || !ind) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), int64_t(data->size()));
  Dims out(data->begin(), data->begin() + axis);
  out.insert(out.end(), ind->begin(), ind->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  ctx.set_output(0, t, out);
}

void infer_gather_elements(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(1));
}

void infer_gather_nd(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& data = ctx.input_shape(0);
  const auto& ind = ctx.input_shape(1);
  if (!data || !ind || ind->empty() || !ind->back().known()) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t b = ctx.attr_int("batch_dims", 0);
  const int64_t k = ind->back().value;
  if (b < 0 || b + k > int64_t(data->size())) ctx.fail("indices last dim ", k, " is too large for data rank ", data->size());
  Dims out(ind->begin(), ind->end() - 1);
  out.insert(out.end(), data->begin() + b + k, data->end());
  ctx.set_output(0, t, out);
}

void add(OpRegistry& r, OpSchema s) { add_schema(r, std::move(s), "indexing"); }

}  // namespace

void register_indexing_schemas(OpRegistry& r) {
  add(r, make_schema("Gather", 2, 2, 1, 1, infer_gather, {{"axis", K::i}}));
  add(r, make_schema("GatherElements", 2, 2, 1, 1, infer_gather_elements, {{"axis", K::i}}));
  add(r, make_schema("GatherND", 2, 2, 1, 1, infer_gather_nd, {{"batch_dims", K::i}}));
  add(r, make_schema("Scatter", 3, 3, 1, 1, infer_same_as_input0, {{"axis", K::i}}));
  add(r, make_schema("ScatterElements", 3, 3, 1, 1, infer_same_as_input0, {{"axis", K::i}, {"reduction", K::s}}));
  add(r, make_schema("ScatterND", 3, 3, 1, 1, infer_same_as_input0, {{"reduction", K::s}}));
  add(r, make_schema("TensorScatter", 2, 3, 1, 1, infer_same_as_input0, {{"axis", K::i}, {"mode", K::s}}));
}

}  // namespace tessera::ir
