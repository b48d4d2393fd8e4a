// Reference kernels: signal family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_signal_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
