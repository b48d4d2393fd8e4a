// Schemas and shape inference: attention family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_attention_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
