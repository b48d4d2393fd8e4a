// Running one node's reference kernel on given inputs, inside a pass: constant folding (fold_constants), and
// evaluating a quantized elementwise chain over all 256 byte values for its lookup table (fuse_qlookup).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernels/ref/registry.h"

namespace tessera::passes {

// Runs one node on constant inputs.
class FoldContext final : public KernelContext {
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

// The node's outputs from its reference kernel on `inputs` (a null DataValue for an omitted one), or nothing
// where the kernel is missing or reports an error (the run will name the node).
inline std::optional<std::vector<DataValue>> evaluate_node(const ir::Node& n, std::vector<DataValue> inputs) {
  KernelFn fn = kernels::ref::KernelTable::instance().find(n.domain, n.op_type);
  if (!fn) return std::nullopt;
  FoldContext ctx(n, std::move(inputs));
  try {
    fn(ctx);
  } catch (const Error&) {
    return std::nullopt;
  }
  return std::move(ctx.outputs());
}

}  // namespace tessera::passes
