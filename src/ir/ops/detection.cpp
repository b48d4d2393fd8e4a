// Schemas and shape inference: detection family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_detection_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
