#include "passes/pass_manager.h"

namespace tessera::passes {

void run_pipeline(ir::Model& model, int level) {
  (void)model;
  if (level <= 0) return;
  // The passes (fold, fuse, layout, ...) are added here.
}

}  // namespace tessera::passes
