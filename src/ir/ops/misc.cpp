// Schemas and shape inference: misc family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_misc_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
