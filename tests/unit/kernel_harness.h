// Runs one kernel outside a graph: a KernelContext over given inputs and
// attributes, for unit tests of reference and tuned kernels.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/kernel_context.h"
#include "kernels/ref/registry.h"

namespace tessera::testing {

class TestKernelContext : public KernelContext {
 public:
  TestKernelContext(std::string op, std::vector<DataValue> inputs, AttrMap attrs, size_t num_outputs,
                    int opset = 23)
      : op_(std::move(op)),
        inputs_(std::move(inputs)),
        attrs_(std::move(attrs)),
        outputs_(num_outputs),
        opset_(opset) {}

  const std::string& node_name() const override { return name_; }
  const std::string& op_type() const override { return op_; }
  int opset() const override { return opset_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const Tensor* input(size_t i) const override {
    return i < inputs_.size() && inputs_[i].is_tensor() ? &inputs_[i].tensor : nullptr;
  }
  const DataValue* input_value(size_t i) const override {
    return i < inputs_.size() && inputs_[i].kind != DataValue::Kind::none ? &inputs_[i] : nullptr;
  }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < outputs_.size(); }
  Tensor& output(size_t i, DType dtype, const Shape& shape) override {
    outputs_.at(i) = DataValue(Tensor(dtype, shape));
    return outputs_[i].tensor;
  }
  void set_output(size_t i, DataValue v) override { outputs_.at(i) = std::move(v); }
  const Attribute* attr(std::string_view n) const override {
    auto it = attrs_.find(std::string(n));
    return it == attrs_.end() ? nullptr : &it->second;
  }
  std::vector<DataValue> run_subgraph(const Subgraph&, const std::vector<DataValue>&) override {
    fail(ErrorCode::unsupported, "subgraphs are not available in the kernel test harness");
  }
  std::vector<DataValue>& outputs() { return outputs_; }

 private:
  std::string name_ = "test_node", op_;
  std::vector<DataValue> inputs_;
  AttrMap attrs_;
  std::vector<DataValue> outputs_;
  int opset_;
};

// The same with a thread pool for the tuned kernels (pool_: none by default).
class PoolKernelContext : public TestKernelContext {
 public:
  using TestKernelContext::TestKernelContext;
  ThreadPool* pool() const override { return pool_; }
  ThreadPool* pool_ = nullptr;
};

// Attribute builders.
inline Attribute attr_i(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}
inline Attribute attr_f(float v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = v;
  return a;
}
inline Attribute attr_s(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::s;
  a.s = std::move(v);
  return a;
}
inline Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::ints;
  a.ints = std::move(v);
  return a;
}
inline Attribute attr_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::floats;
  a.floats = std::move(v);
  return a;
}

// Runs the reference kernel registered for op (default domain) and returns its outputs.
inline std::vector<DataValue> run_ref(const std::string& op, std::vector<DataValue> inputs,
                                      AttrMap attrs = {}, size_t num_outputs = 1, int opset = 23) {
  KernelFn fn = kernels::ref::KernelTable::instance().find("", op);
  if (!fn) throw Error(ErrorCode::unsupported, "no reference kernel for " + op);
  TestKernelContext ctx(op, std::move(inputs), std::move(attrs), num_outputs, opset);
  fn(ctx);
  return std::move(ctx.outputs());
}

}  // namespace tessera::testing
