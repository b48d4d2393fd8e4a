// Schemas and shape inference: reduction family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_reduction_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
