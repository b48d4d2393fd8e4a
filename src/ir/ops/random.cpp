// Schemas and shape inference: random family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_random_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
