// Schemas and shape inference: rnn family.
#include "ir/op_registry.h"

namespace tessera::ir {

void register_rnn_schemas(OpRegistry& r) { (void)r; }

}  // namespace tessera::ir
