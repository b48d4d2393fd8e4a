// Schemas and shape inference: resize family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_resize_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
