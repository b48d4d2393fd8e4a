#include "passes/pass_manager.h"

#include "core/error.h"

namespace tessera::passes {

namespace {
struct PassEntry {
  const char* name;
  void (*fn)(ir::Graph&);
  int level;
};
constexpr PassEntry kPasses[] = {
#define PASS(name, fn, level) {#name, fn, level},
#include "passes/passes.def"
#undef PASS
};
}  // namespace

void run_pipeline(ir::Model& model, int level, const std::string& dump_after, std::string* dump) {
  bool known = dump_after.empty();
  for (const PassEntry& p : kPasses) {
    if (p.name == dump_after) known = true;
    if (level < p.level) continue;
    p.fn(*model.graph);
    model.graph->topological_sort();
    if (dump && p.name == dump_after) *dump = ir::to_string(*model.graph);
  }
  check_arg(known, "unknown pass '", dump_after, "'");
}

std::vector<std::string> pass_names() {
  std::vector<std::string> v;
  for (const PassEntry& p : kPasses) v.push_back(p.name);
  return v;
}

}  // namespace tessera::passes
