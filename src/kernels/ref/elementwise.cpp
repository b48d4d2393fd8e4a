// Reference kernels: elementwise family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_elementwise_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
