// Schemas and shape inference: detection family (NonMaxSuppression).
#include "ir/op_registry.h"

namespace tessera::ir {

void register_detection_schemas(OpRegistry& r) {
  r.add(make_schema(
      "NonMaxSuppression", 2, 5, 1, 1,
      [](InferenceContext& ctx) { ctx.set_output(0, DType::i64, std::vector<Dim>{Dim(), Dim(3)}); },
      {{"center_point_box", Attribute::Kind::i}}));
}

}  // namespace tessera::ir
