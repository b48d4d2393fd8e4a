// Reference kernels: cast family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_cast_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
