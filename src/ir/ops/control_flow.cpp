// Schemas and shape inference: control_flow family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_control_flow_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
