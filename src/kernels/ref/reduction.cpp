// Reference kernels: reduction family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_reduction_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
