// Reference kernels: random family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_random_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
