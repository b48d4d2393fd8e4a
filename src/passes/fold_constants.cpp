// fold_constants: a node whose inputs are all constants (initializers the user
// cannot override) is evaluated once here with its reference kernel and
// replaced by an initializer. Exporters route weights through such nodes
// (Identity of a shared bias, Reshape / Transpose / Cast of constants); folding
// them lets the fusion passes see the weights. Nodes with subgraphs, random
// ops and outputs over 256 MiB are left alone.
//
// Note on layering: this pass runs reference kernels (layer 1), which
// DESIGN.md's table did not list for src/passes; constant folding needs an
// evaluator and the reference kernels are the oracle.
#include <map>
#include <set>

#include "kernels/ref/registry.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

// Runs one node on constant inputs.
class FoldContext : public KernelContext {
 public:
  FoldContext(const ir::Node& n, std::vector<DataValue> inputs)
      : node_(n), inputs_(std::move(inputs)), outputs_(n.outputs.size()) {}
  const std::string& node_name() const override { return node_.name; }
  const std::string& op_type() const override { return node_.op_type; }
  int opset() const override { return node_.opset; }
  size_t num_inputs() const override { return inputs_.size(); }
  const Tensor* input(size_t i) const override {
    return i < inputs_.size() && inputs_[i].is_tensor() ? &inputs_[i].tensor : nullptr;
  }
  const DataValue* input_value(size_t i) const override {
    return i < inputs_.size() && inputs_[i].kind != DataValue::Kind::none ? &inputs_[i] : nullptr;
  }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < node_.outputs.size() && node_.outputs[i]; }
  Tensor& output(size_t i, DType dtype, const Shape& shape) override {
    outputs_.at(i) = DataValue(Tensor(dtype, shape));
    return outputs_[i].tensor;
  }
  void set_output(size_t i, DataValue v) override { outputs_.at(i) = std::move(v); }
  const Attribute* attr(std::string_view n) const override { return node_.attr(std::string(n)); }
  std::vector<DataValue> run_subgraph(const Subgraph&, const std::vector<DataValue>&) override {
    fail(ErrorCode::unsupported, "no subgraphs while folding constants");
  }
  std::vector<DataValue>& outputs() { return outputs_; }

 private:
  const ir::Node& node_;
  std::vector<DataValue> inputs_;
  std::vector<DataValue> outputs_;
};

const std::set<std::string> kNeverFold = {
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
    "Bernoulli",    "Multinomial",   "Dropout"};
constexpr size_t kMaxFoldedBytes = size_t(256) << 20;

bool foldable(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || kNeverFold.count(n.op_type) || !n.subgraphs().empty()) return false;
  if (n.op_type == "Constant") return false;  // the frontend made these initializers already
  bool any = false;
  for (const ir::Value* v : n.inputs) {
    if (!v) continue;
    if (!is_constant(g, v)) return false;
    any = true;
  }
  if (!any) return false;  // e.g. ConstantOfShape without input: leave it
  for (const ir::Value* v : n.outputs)
    if (v && is_graph_output(g, v)) return false;  // keep graph outputs produced by nodes
  return true;
}

}  // namespace

void fold_constants(ir::Graph& g) {
  const auto& table = kernels::ref::KernelTable::instance();
  bool changed = true;
  while (changed) {
    changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    for (ir::Node* n : nodes) {
      if (!foldable(g, *n)) continue;
      KernelFn fn = table.find(n->domain, n->op_type);
      if (!fn) continue;
      std::vector<DataValue> in;
      for (const ir::Value* v : n->inputs) in.push_back(v ? DataValue(*v->initializer) : DataValue());
      FoldContext ctx(*n, std::move(in));
      try {
        fn(ctx);
      } catch (const Error&) {
        continue;  // leave it for run time, where the error will name the node
      }
      bool ok = true;
      for (size_t i = 0; i < n->outputs.size(); ++i) {
        if (!n->outputs[i]) continue;
        const DataValue& o = ctx.outputs()[i];
        if (!o.is_tensor() || o.tensor.nbytes() > kMaxFoldedBytes) ok = false;
      }
      if (!ok) continue;
      std::vector<ir::Value*> outs = n->outputs;
      g.remove_node(n);
      for (size_t i = 0; i < outs.size(); ++i) {
        if (!outs[i]) continue;
        Tensor t = ctx.outputs()[i].tensor.contiguous();
        // own the data (a kernel may have returned a view of a constant input)
        outs[i]->initializer = t.clone();
        outs[i]->type = ir::TypeInfo::tensor_of(t);
      }
      changed = true;
    }
  }
  g.remove_unused_values();
}

}  // namespace tessera::passes
