// onnxruntime's quantized contrib ops (domain com.microsoft), which its quantizer writes in the QOperator
// format (quant_format=QOperator, and the int8 models of the ONNX model zoo), expanded at import into the
// ONNX QDQ form that defines them: DequantizeLinear of each quantized input, the float op, QuantizeLinear of
// the result. The optimization passes then run them as the QDQ format's models run (fuse_qdq: QLinearAdd on
// the bytes; fuse_qlookup: QLinearSigmoid / QLinearLeakyRelu, and QLinearMul of a value by its own sigmoid,
// as lookup tables; QLinearConcat on the bytes), and with no passes (optimization level 0) the expansion is
// the reference.
//
// | com.microsoft op              | expansion                                                          |
// |-------------------------------|--------------------------------------------------------------------|
// | QuantizeLinear, DequantizeLinear | the ONNX op                                                     |
// | QLinearAdd, QLinearMul        | Q(Add / Mul(DQ(A), DQ(B)))                                         |
// | QLinearSigmoid                | Q(Sigmoid(DQ(X)))                                                  |
// | QLinearLeakyRelu (alpha)      | Q(LeakyRelu(DQ(X)))                                                |
// | QLinearGlobalAveragePool      | Q(GlobalAveragePool(DQ(X))); channels_last: Q(ReduceMean(DQ(X), axes 1,
// 2)) | | QLinearConcat (axis)          | Q(Concat(DQ(X_1), ..., DQ(X_n))) | | QGemm (alpha, transA, transB)
// | Gemm(DQ(A), DQ(B), DQ(C, A_scale * B_scale)), then Q when Y_scale  |
//
// A zero point left out is 0 of the quantized type (the input's for an output: onnxruntime's T).
#include <string>
#include <vector>

#include "core/error.h"
#include "frontend/onnx/onnx_internal.h"
#include "ir/graph.h"

namespace tessera::frontend::onnx::detail {

namespace {

constexpr const char* kMs = "com.microsoft";

class Expander {
 public:
  Expander(ir::Graph& g, ir::Node* n) : g_(g), n_(n), name_(n->name.empty() ? n->op_type : n->name) {}

  ir::Value* in(size_t i) const { return i < n_->inputs.size() ? n_->inputs[i] : nullptr; }

  // A new node of the ONNX domain; returns its (new) output, or writes `out` where given.
  ir::Value* node(const char* op, int opset, std::vector<ir::Value*> inputs, ir::Value* out = nullptr) {
    ir::Node* m = g_.add_node(op, g_.unique_name(name_ + "_" + op));
    m->opset = opset;
    for (ir::Value* v : inputs) g_.connect_input(m, v);
    if (!out) out = g_.add_value(g_.unique_name(name_ + "_" + op + "_out"));
    g_.connect_output(m, out);
    last_ = m;
    return out;
  }
  ir::Node* last() const { return last_; }

  ir::Value* dq(ir::Value* x, ir::Value* s, ir::Value* z) { return node("DequantizeLinear", 13, {x, s, z}); }

  // QuantizeLinear into the contrib op's output (its zero point: z, or 0 of like's type where like is a
  // constant, else u8)
  void q(ir::Value* f, ir::Value* s, ir::Value* z, ir::Value* like) {
    if (!z) {
      const DType t = like && like->initializer ? like->initializer->dtype() : DType::u8;
      z = constant(Tensor(t, {}), "zero_point");
    }
    ir::Value* out = take_output();
    node("QuantizeLinear", 13, {f, s, z}, out);
  }

  ir::Value* constant(Tensor t, const std::string& what) {
    ir::Value* v = g_.add_value(g_.unique_name(name_ + "_" + what));
    v->type = ir::TypeInfo::tensor_of(t);
    v->initializer = std::move(t);
    return v;
  }

  // The contrib node's output 0, freed from it (the node goes away: nothing reads n_ after this).
  ir::Value* take_output() {
    ir::Value* out = n_->outputs[0];
    g_.remove_node(n_);
    return out;
  }

 private:
  ir::Graph& g_;
  ir::Node* n_;
  std::string name_;  // (n_'s, kept: the node is removed before the last nodes are made)
  ir::Node* last_ = nullptr;
};

int64_t int_attr_or(const ir::Node* n, const char* name, int64_t d) {
  const Attribute* a = n->attr(name);
  return a && a->kind == Attribute::Kind::i ? a->i : d;
}
float float_attr_or(const ir::Node* n, const char* name, float d) {
  const Attribute* a = n->attr(name);
  return a && a->kind == Attribute::Kind::f ? a->f : d;
}

Attribute attr_i(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}
Attribute attr_f(float v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = v;
  return a;
}

// One contrib node; false where it is not one of these (it stays, and the verifier names it).
bool expand(ir::Graph& g, ir::Node* n) {
  const std::string& op = n->op_type;
  if (n->domain != kMs || n->outputs.empty() || !n->outputs[0]) return false;
  Expander e(g, n);
  const auto need = [&](size_t k) {
    check_model(n->inputs.size() >= k, "node '", n->name, "' (", op, ") has ", n->inputs.size(),
                " inputs, takes at least ", k);
    for (size_t i = 0; i < k; ++i)
      if (i != 2 && i != 5)
        check_model(n->inputs[i] != nullptr, "node '", n->name, "' (", op, "): input ", i, " is required");
  };
  if (op == "QuantizeLinear" || op == "DequantizeLinear") {
    n->domain.clear();
    n->opset = 13;
    return true;
  }
  if (op == "QLinearAdd" || op == "QLinearMul") {
    need(7);
    ir::Value* a = e.dq(e.in(0), e.in(1), e.in(2));
    ir::Value* b = e.dq(e.in(3), e.in(4), e.in(5));
    ir::Value* f = e.node(op == "QLinearAdd" ? "Add" : "Mul", 14, {a, b});
    e.q(f, e.in(6), e.in(7), e.in(2));
    return true;
  }
  if (op == "QLinearSigmoid" || op == "QLinearLeakyRelu") {
    need(4);
    ir::Value* x = e.dq(e.in(0), e.in(1), e.in(2));
    const bool leaky = op == "QLinearLeakyRelu";
    const float alpha = float_attr_or(n, "alpha", 0.01f);
    ir::Value* f = e.node(leaky ? "LeakyRelu" : "Sigmoid", leaky ? 16 : 13, {x});
    if (leaky) e.last()->attrs["alpha"] = attr_f(alpha);
    e.q(f, e.in(3), e.in(4), e.in(2));
    return true;
  }
  if (op == "QLinearGlobalAveragePool") {
    need(4);
    const bool channels_last = int_attr_or(n, "channels_last", 0) != 0;
    ir::Value* x = e.dq(e.in(0), e.in(1), e.in(2));
    ir::Value* f;
    if (channels_last) {
      Tensor axes(DType::i64, {2});
      axes.data<int64_t>()[0] = 1, axes.data<int64_t>()[1] = 2;
      f = e.node("ReduceMean", 18, {x, e.constant(std::move(axes), "axes")});
    } else {
      f = e.node("GlobalAveragePool", 1, {x});
    }
    e.q(f, e.in(3), e.in(4), e.in(2));
    return true;
  }
  if (op == "QLinearConcat") {
    check_model(n->inputs.size() >= 5 && (n->inputs.size() - 2) % 3 == 0, "node '", n->name,
                "' (QLinearConcat) takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got ",
                n->inputs.size(), " inputs");
    std::vector<ir::Value*> parts;
    for (size_t i = 2; i < n->inputs.size(); i += 3) {
      check_model(e.in(i) && e.in(i + 1), "node '", n->name, "' (QLinearConcat): input ", i, " is required");
      parts.push_back(e.dq(e.in(i), e.in(i + 1), e.in(i + 2)));
    }
    const int64_t axis = int_attr_or(n, "axis", 0);
    ir::Value* ys = e.in(0);
    ir::Value* yz = e.in(1);
    ir::Value* like = e.in(4);
    ir::Value* f = e.node("Concat", 13, parts);
    e.last()->attrs["axis"] = attr_i(axis);
    e.q(f, ys, yz, like);
    return true;
  }
  if (op == "QGemm") {
    need(6);
    // C is int32 at scale A_scale * B_scale (zero point 0): its scale a constant here
    ir::Value* as = e.in(1);
    ir::Value* bs = e.in(4);
    ir::Value* c = e.in(6);
    const bool trans_b = int_attr_or(n, "transB", 0) != 0;
    ir::Value* cs = nullptr;
    if (c) {
      check(as->initializer && bs->initializer && as->initializer->dtype() == DType::f32 &&
                bs->initializer->dtype() == DType::f32,
            ErrorCode::unsupported, "node '", n->name, "' (QGemm): a bias needs constant A and B scales");
      const Tensor bsc = bs->initializer->contiguous();
      const float a0 = as->initializer->contiguous().data<float>()[0];
      Tensor prod(DType::f32, bsc.numel() == 1 ? Shape{} : Shape{bsc.numel()});
      for (int64_t i = 0; i < bsc.numel(); ++i) prod.data<float>()[i] = a0 * bsc.data<float>()[i];
      cs = e.constant(std::move(prod), "C_scale");
    }
    ir::Value* a = e.dq(e.in(0), as, e.in(2));
    ir::Value* b = e.dq(e.in(3), bs, e.in(5));
    if (bs->initializer && bs->initializer->numel() > 1)  // per output column: along N
      e.last()->attrs["axis"] = attr_i(trans_b ? 0 : 1);
    std::vector<ir::Value*> gin{a, b};
    if (c) {
      gin.push_back(e.dq(c, cs, nullptr));
      e.last()->attrs["axis"] = attr_i(0);  // (C is [N]: a scale per column is along its only axis)
    }
    ir::Value* y_scale = e.in(7);
    ir::Value* y_zero = e.in(8);
    ir::Value* out = y_scale ? nullptr : e.take_output();
    ir::Value* f = e.node("Gemm", 13, gin, out);
    e.last()->attrs["alpha"] = attr_f(float_attr_or(n, "alpha", 1.0f));
    e.last()->attrs["transA"] = attr_i(int_attr_or(n, "transA", 0));
    e.last()->attrs["transB"] = attr_i(trans_b ? 1 : 0);
    if (y_scale) e.q(f, y_scale, y_zero, e.in(2));
    return true;
  }
  return false;
}

}  // namespace

void expand_contrib_quant(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  bool any = false;
  for (ir::Node* n : nodes) {
    for (ir::Graph* sg : n->subgraphs()) expand_contrib_quant(*sg);
    any = expand(g, n) || any;
  }
  if (any) g.topological_sort();  // (the expansions were appended)
}

}  // namespace tessera::frontend::onnx::detail
