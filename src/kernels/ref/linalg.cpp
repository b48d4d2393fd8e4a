// Reference kernels: linalg family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_linalg_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
