// Schemas and shape inference: signal family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_signal_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
