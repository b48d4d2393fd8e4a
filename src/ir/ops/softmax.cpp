// Schemas and shape inference: softmax family (Softmax, LogSoftmax, Hardmax).
#include "ir/ops/nn_infer.h"

namespace tessera::ir {

namespace {
void infer_softmax(InferenceContext& ctx) {
  auto s = nn::shape_of(ctx, 0);
  if (s) {
    const int64_t r = int64_t(s->size());
    const int64_t axis = ctx.attr_int("axis", ctx.node().opset >= 13 || ctx.node().opset == 0 ? -1 : 1);
    if (axis < -r || axis >= std::max<int64_t>(r, 1)) ctx.fail("axis ", axis, " is out of range for rank ", r);
  }
  ctx.propagate(0, 0);
}
}  // namespace

void register_softmax_schemas(OpRegistry& r) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    OpSchema s = make_schema(op, 1, 1, 1, 1, infer_softmax, {{"axis", nn::A::i}});
    s.family = "softmax";
    r.add(std::move(s));
  }
}

}  // namespace tessera::ir
