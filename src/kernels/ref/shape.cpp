// Reference kernels: shape family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_shape_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
