// Reference kernels: pool family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_pool_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
