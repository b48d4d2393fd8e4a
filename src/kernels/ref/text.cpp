// Reference kernels: text family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_text_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
