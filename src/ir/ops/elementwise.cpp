// Schemas and shape inference: elementwise family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_elementwise_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
