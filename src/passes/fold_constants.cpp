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
#include <algorithm>
#include <map>
#include <set>

#include "ir/op_registry.h"
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

// Shape / Size of a value whose shape is static (every dim known) is a constant: a graph input's declared
// dims are checked against every feed, and inference derives the others from them. Folded, the shape
// arithmetic exporters write around Reshape (Shape -> Gather -> Concat) folds too, and the values after
// it get static shapes (the fusion passes then see, e.g., a GEMM's rows).
bool fold_static_shape(ir::Graph& g, ir::Node* n) {
  if (!n->domain.empty() || (n->op_type != "Shape" && n->op_type != "Size") || n->inputs.size() != 1 ||
      !n->inputs[0] || n->outputs.size() != 1 || !n->outputs[0] || is_graph_output(g, n->outputs[0]))
    return false;
  const auto& shape = n->inputs[0]->type.shape;
  if (n->inputs[0]->type.kind != ir::TypeInfo::Kind::tensor || !shape) return false;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : *shape) {
    if (!d.known()) return false;
    dims.push_back(d.value);
  }
  Tensor t;
  if (n->op_type == "Size") {
    t = Tensor(DType::i64, {});
    t.data<int64_t>()[0] = shape_numel(dims);
  } else {  // start / end (opset 15) clamp to [0, rank] after a negative one counts from the end
    const int64_t r = int64_t(dims.size());
    auto bound = [&](const char* key, int64_t dflt) {
      const Attribute* a = n->attr(key);
      int64_t v = a ? a->i : dflt;
      if (v < 0) v += r;
      return std::clamp<int64_t>(v, 0, r);
    };
    const int64_t b = bound("start", 0), e = std::max(b, bound("end", r));
    t = Tensor(DType::i64, {e - b});
    for (int64_t i = b; i < e; ++i) t.data<int64_t>()[i - b] = dims[size_t(i)];
  }
  ir::Value* out = n->outputs[0];
  g.remove_node(n);
  out->initializer = t;
  out->type = ir::TypeInfo::tensor_of(t);
  return true;
}

}  // namespace

void fold_constants(ir::Graph& g) {
  const auto& table = kernels::ref::KernelTable::instance();
  bool changed = true, shapes_folded = false;
  while (changed) {
    changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    for (ir::Node* n : nodes) {
      if (fold_static_shape(g, n)) {
        changed = shapes_folded = true;
        continue;
      }
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
    if (!changed && shapes_folded) {
      // constant shapes reach Reshape & co.: infer again, then fold the Shapes of what became static
      ir::infer_shapes(g);
      shapes_folded = false;
      changed = true;
    }
  }
  g.remove_unused_values();
}

}  // namespace tessera::passes
