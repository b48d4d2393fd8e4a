// Schemas and shape inference: conv family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_conv_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
