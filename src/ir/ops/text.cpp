// Schemas and shape inference: text family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_text_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
