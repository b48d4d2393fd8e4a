// The tuned CPU kernels Tessera ships, registered with add_tuned_kernel. Each
// x86 kernel family adds one call here, with a predicate that claims only the
// nodes (dtypes, shapes, attributes) and CPUs (cpu_features()) it handles.
#include "backends/cpu/cpu_backend.h"

namespace tessera::backends::cpu {

void register_builtin_tuned_kernels() {}

}  // namespace tessera::backends::cpu
