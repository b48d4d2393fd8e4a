// eliminate_dead: removes nodes none of whose outputs is read (by a node, a subgraph or as a graph output),
// last reader first so that a dead chain goes in one sweep. An exporter leaves them (a branch a model's
// forward computes and drops, shape arithmetic whose result folding made unused); onnxruntime drops them too,
// and a run would otherwise pay for them (an unused ConvTranspose cost seconds).
#include <algorithm>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

void eliminate_dead(ir::Graph& g) {
  g.topological_sort();
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  bool any = false;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node* n = *it;
    const bool read = std::any_of(n->outputs.begin(), n->outputs.end(), [&](const ir::Value* v) {
      return v && (!v->uses.empty() || is_graph_output(g, v));
    });
    if (read || n->outputs.empty()) continue;
    g.remove_node(n);
    any = true;
  }
  if (any) g.remove_unused_values();
}

}  // namespace tessera::passes
