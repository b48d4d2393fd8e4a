// Reference kernels: detection family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_detection_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
