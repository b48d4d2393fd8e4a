// Schemas and shape inference: cast family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_cast_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
