// Reference kernels: resize family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_resize_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
