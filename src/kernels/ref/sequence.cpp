// Reference kernels: sequence family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_sequence_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
