// Reference kernels: quantization family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_quantization_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
