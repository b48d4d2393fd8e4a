// Schemas and shape inference: loss family (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
#include "ir/op_registry.h"

namespace tessera::ir {

namespace {
// Loss output: the target's shape for reduction "none", a scalar otherwise.
void infer_loss(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const std::string red = ctx.attr_string("reduction", "mean");
  if (red == "none") ctx.set_output(0, t, ctx.input_shape(1));
  else ctx.set_output(0, t, std::vector<Dim>{});
  if (ctx.num_outputs() > 1) ctx.propagate(1, 0);  // SoftmaxCrossEntropyLoss log_prob
}
}  // namespace

void register_loss_schemas(OpRegistry& r) {
  const std::vector<AttrSpec> attrs = {{"reduction", Attribute::Kind::s}, {"ignore_index", Attribute::Kind::i}};
  OpSchema nll = make_schema("NegativeLogLikelihoodLoss", 2, 3, 1, 1, infer_loss, attrs);
  nll.family = "loss";
  r.add(nll);
  OpSchema sce = make_schema("SoftmaxCrossEntropyLoss", 2, 3, 1, 2, infer_loss, attrs);
  sce.family = "loss";
  r.add(sce);
}

}  // namespace tessera::ir
