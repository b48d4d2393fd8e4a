// Schemas and shape inference: normalization family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_normalization_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
