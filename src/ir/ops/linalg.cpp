// Schemas and shape inference: linalg family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_linalg_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
