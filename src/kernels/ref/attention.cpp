// Reference kernels: attention family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_attention_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
