// Schemas and shape inference: pool family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_pool_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
