// Reference kernels: control_flow family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_control_flow_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
