// KernelContext: what a kernel sees of the node it runs. Kernels (reference
// or tuned) are functions `void(KernelContext&)`; the runtime implements the
// context. Inputs are read-only; outputs are allocated through the context so
// that the runtime's memory plan decides where they live.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/attribute.h"
#include "core/tensor.h"

namespace tessera {

class ThreadPool;

class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual const std::string& node_name() const = 0;
  virtual const std::string& op_type() const = 0;
  // Version of the op's definition the node was written against (the model's
  // opset for the op's domain). Kernels use it only where semantics differ.
  virtual int opset() const = 0;

  virtual size_t num_inputs() const = 0;
  // nullptr for an omitted optional input (or one that is not a tensor).
  virtual const Tensor* input(size_t i) const = 0;
  virtual const DataValue* input_value(size_t i) const = 0;

  virtual size_t num_outputs() const = 0;
  // False when the graph does not use output i (kernels may skip it).
  virtual bool output_requested(size_t i) const = 0;
  // Allocates output i with the given type and shape and returns it to fill.
  virtual Tensor& output(size_t i, DType dtype, const Shape& shape) = 0;
  // Same, with unspecified contents: for kernels that write every element
  // (saves clearing the buffer first).
  virtual Tensor& output_for_overwrite(size_t i, DType dtype, const Shape& shape) {
    return output(i, dtype, shape);
  }
  // Same, and the output may share input `in`'s buffer: the memory plan puts it there when that input's
  // buffer is as large and nothing reads it after this node (a conv's or GEMM's residual, oneDNN's "sum"
  // post-op). The kernel must then be right with the two aliased — it reads each element of the input
  // before it writes that element of the output, and never after — or check for it (data() equal).
  // Saves a buffer's worth of cache and memory traffic on memory-bound ops.
  virtual Tensor& output_reusing(size_t i, size_t in, DType dtype, const Shape& shape) {
    (void)in;
    return output_for_overwrite(i, dtype, shape);
  }
  // Sets output i to an existing value (e.g. a view of an input, or a sequence).
  virtual void set_output(size_t i, DataValue v) = 0;
  // True when every reader of output i reads a strided view in place (the runtime decides at session
  // creation, CompiledNode::strided_ok): a Slice or Reshape may then set it to a non-contiguous view of its
  // input instead of copying. Otherwise outputs are contiguous.
  virtual bool output_may_be_strided(size_t i) const {
    (void)i;
    return false;
  }

  virtual const Attribute* attr(std::string_view name) const = 0;

  virtual ThreadPool* pool() const { return nullptr; }

  // Runs a subgraph attribute (If/Loop/Scan bodies) with the given inputs and
  // returns its outputs. Implemented by the runtime.
  virtual std::vector<DataValue> run_subgraph(const Subgraph& g, const std::vector<DataValue>& inputs) = 0;

  // ---- conveniences (non-virtual) ----
  const Tensor& required_input(size_t i) const;
  bool has_input(size_t i) const { return i < num_inputs() && input(i) != nullptr; }
  bool has_attr(std::string_view n) const { return attr(n) != nullptr; }
  int64_t attr_int(std::string_view n, int64_t def) const;
  float attr_float(std::string_view n, float def) const;
  std::string attr_string(std::string_view n, std::string def) const;
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> def = {}) const;
  // The same without a copy: a view of the attribute's values (valid while the kernel runs), or def.
  std::span<const int64_t> attr_ints_view(std::string_view n, std::span<const int64_t> def = {}) const;
  std::vector<float> attr_floats(std::string_view n, std::vector<float> def = {}) const;
  std::vector<std::string> attr_strings(std::string_view n) const;
  int64_t required_attr_int(std::string_view n) const;
  const Tensor* attr_tensor(std::string_view n) const;

  // Throws an Error attributed to this node.
  template <typename... Args>
  [[noreturn]] void fail(ErrorCode code, const Args&... parts) const {
    throw Error(code, cat(parts...), node_name(), op_type());
  }
  template <typename... Args>
  void check(bool cond, const Args&... parts) const {
    if (!cond) [[unlikely]]
      fail(ErrorCode::invalid_argument, parts...);
  }
};

using KernelFn = void (*)(KernelContext&);

}  // namespace tessera
