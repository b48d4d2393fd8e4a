// Reference kernels: misc family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_misc_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
