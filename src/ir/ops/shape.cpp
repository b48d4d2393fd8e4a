// Schemas and shape inference: shape family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_shape_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
