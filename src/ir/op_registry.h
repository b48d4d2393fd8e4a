// The op registry: for each (domain, op_type) a schema with input/output
// counts, attribute types and a shape + type inference function. Schemas are
// registered per op family (src/ir/ops/<family>.cpp, listed in ops/families.def).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace tessera::ir {

// What an inference function sees: the node, its input types, and the values
// of inputs that are known constants (initializers or folded shapes).
class InferenceContext {
 public:
  InferenceContext(const Node& node, std::vector<const TypeInfo*> in, std::vector<const Tensor*> consts)
      : node_(node), in_(std::move(in)), consts_(std::move(consts)), out_(node.outputs.size()) {}

  const Node& node() const { return node_; }
  size_t num_inputs() const { return in_.size(); }
  size_t num_outputs() const { return out_.size(); }
  bool has_input(size_t i) const { return i < in_.size() && in_[i] != nullptr; }
  // Type of input i (an unknown TypeInfo when the input is omitted).
  const TypeInfo& input_type(size_t i) const;
  DType input_dtype(size_t i) const { return input_type(i).elem; }
  // Shape of input i if its rank is known.
  const std::optional<std::vector<Dim>>& input_shape(size_t i) const { return input_type(i).shape; }
  // Value of input i if known at compile time.
  const Tensor* input_constant(size_t i) const { return i < consts_.size() ? consts_[i] : nullptr; }

  TypeInfo& output(size_t i) { return out_.at(i); }
  void set_output(size_t i, DType t, std::optional<std::vector<Dim>> shape) {
    if (i < out_.size()) out_[i] = TypeInfo::tensor(t, std::move(shape));
  }
  // Output i has the same type and shape as input j.
  void propagate(size_t out, size_t in) {
    if (out < out_.size()) out_[out] = input_type(in);
  }
  std::vector<TypeInfo>& outputs() { return out_; }

  // Attribute access with defaults (throws on a wrong attribute type).
  int64_t attr_int(const std::string& n, int64_t def) const;
  float attr_float(const std::string& n, float def) const;
  std::string attr_string(const std::string& n, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> def = {}) const;
  bool has_attr(const std::string& n) const { return node_.attr(n) != nullptr; }

  template <typename... Args>
  [[noreturn]] void fail(const Args&... parts) const {
    throw Error(ErrorCode::invalid_model, cat(parts...), node_.name, node_.op_type);
  }

 private:
  const Node& node_;
  std::vector<const TypeInfo*> in_;
  std::vector<const Tensor*> consts_;
  std::vector<TypeInfo> out_;
};

using InferFn = std::function<void(InferenceContext&)>;

struct AttrSpec {
  std::string name;
  Attribute::Kind kind;
};

struct OpSchema {
  std::string domain;  // "" = ONNX default domain
  std::string op_type;
  int min_inputs = 0, max_inputs = 0;    // max -1: variadic
  int min_outputs = 1, max_outputs = 1;  // max -1: variadic
  std::vector<AttrSpec> attrs;           // declared attributes and their types (checked by the verifier)
  InferFn infer;                         // may be empty: outputs stay unknown until run time
  std::string family;                    // which ops/<family>.cpp defines it (for docs)
};

class OpRegistry {
 public:
  static OpRegistry& instance();  // all families registered on first use
  void add(OpSchema s);
  const OpSchema* find(const std::string& domain, const std::string& op_type) const;
  std::vector<const OpSchema*> all() const;

 private:
  std::map<std::pair<std::string, std::string>, OpSchema> schemas_;
};

// Shorthand for family files: an op with n..m inputs, k..l outputs.
OpSchema make_schema(std::string op_type, int min_in, int max_in, int min_out, int max_out, InferFn infer,
                     std::vector<AttrSpec> attrs = {}, std::string domain = "");

// Common inference helpers.
// Multidirectional (numpy) broadcasting of two shapes; nullopt if a rank is unknown.
std::optional<std::vector<Dim>> broadcast_shapes(const std::optional<std::vector<Dim>>& a,
                                                 const std::optional<std::vector<Dim>>& b);
void infer_same_as_input0(InferenceContext& ctx);

// Runs inference for every node of g (and its subgraphs) in order, filling
// Value::type; unknown stays unknown. Input errors carry the node.
void infer_shapes(Graph& g);

}  // namespace tessera::ir
