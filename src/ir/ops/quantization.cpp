// Schemas and shape inference: quantization family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_quantization_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
