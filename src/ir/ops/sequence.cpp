// Schemas and shape inference: sequence family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_sequence_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
