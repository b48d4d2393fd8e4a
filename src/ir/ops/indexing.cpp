// Schemas and shape inference: indexing family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_indexing_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
