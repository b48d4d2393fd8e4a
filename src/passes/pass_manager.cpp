#include "passes/pass_manager.h"

#include <cstdlib>
#include <sstream>

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
// TESSERA_DISABLE_PASSES=a,b: passes skipped (as onnxruntime's disabled_optimizers), to bisect a
// difference in the output to one pass.
bool disabled(const char* name) {
  const char* e = std::getenv("TESSERA_DISABLE_PASSES");
  if (!e) return false;
  std::stringstream ss(e);
  for (std::string item; std::getline(ss, item, ',');)
    if (item == name) return true;
  return false;
}
}  // namespace

void run_pipeline(ir::Model& model, int level, const std::string& dump_after, std::string* dump) {
  bool known = dump_after.empty();
  for (const PassEntry& p : kPasses) {
    if (p.name == dump_after) known = true;
    if (level < p.level || disabled(p.name)) continue;
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
