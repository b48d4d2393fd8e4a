// Reference kernels: rnn family.
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

void register_rnn_kernels(KernelTable& t) { (void)t; }

}  // namespace tessera::kernels::ref
