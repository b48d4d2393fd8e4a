// Reference kernels: normalization family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_normalization_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
