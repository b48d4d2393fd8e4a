// Reference kernels: conv family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_conv_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
