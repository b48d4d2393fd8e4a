// Reference kernels: indexing family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_indexing_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
