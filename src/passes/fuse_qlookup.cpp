// fuse_qlookup: a quantized elementwise function runs as a 256-entry table. In the QDQ format, float ops
// between quantized tensors are written DequantizeLinear -> op(s) -> QuantizeLinear; where everything the
// QuantizeLinear's input depends on is one 8-bit tensor x (through per-tensor DequantizeLinears) and scalar
// constants, its output byte is a function of x's byte alone, so
//   Q(f(DQ(x)))  ->  tessera.QLookup(x, table)   with table[b] = Q(f(DQ(b))) for the 256 byte values b,
// evaluated here once on the reference kernels. That covers SiLU / Swish (x * sigmoid(x), even through the
// quantized sigmoid in between: Q and DQ nodes inside the chain are elementwise too), HardSwish, Sigmoid,
// Tanh, GELU, LeakyRelu, Clip chains, and a plain requantization Q(DQ(x)) between different scales: one
// byte load and store instead of a float round trip per op (a QDQ EfficientNet-B0 spent a third of its time
// in them, onnxruntime runs them as QLinearSigmoid / lookup tables).
// Also a Concat of DequantizeLinears with different scales into one QuantizeLinear: each input requantized
// by its table (or taken as it is where its scale is the output's), the Concat on the bytes (QLinearConcat's
// meaning; a ShuffleNet's branches).
// Runs after fuse_qdq, which takes the pairs it fuses into the int8 convs, matmuls and adds first.
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "core/ew_program.h"
#include "passes/node_eval.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

constexpr size_t kMaxChain = 64;  // nodes in one chain

bool is_q8(DType t) {
  return t == DType::u8 || t == DType::i8;
}

// A QuantizeLinear / DequantizeLinear with one constant scale and zero point (or none).
bool per_tensor_qdq(const ir::Graph& g, const ir::Node* n, const char* op) {
  if (!is_onnx_op(n, op) || n->inputs.size() < 2 || !n->inputs[0] || n->outputs.size() != 1 ||
      !n->outputs[0] || int_attr(n, "block_size", 0) != 0)
    return false;
  for (size_t i = 1; i < n->inputs.size(); ++i)
    if (n->inputs[i] && (!is_constant(g, n->inputs[i]) || n->inputs[i]->initializer->numel() != 1))
      return false;
  return true;
}

// ONNX ops computing each output element from the same element of their inputs alone (the elementwise
// programs' ops, core/ew_program.def, and other pointwise ones), one output, no state.
bool elementwise_op(const ir::Node* n) {
  static const std::set<std::string> kOps = {
      "Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "Softplus",   "Softsign",
      "Tanh", "Sigmoid",   "Exp",         "Erf",       "Neg", "Abs",  "Sqrt", "Reciprocal", "Floor",
      "Ceil", "Round",     "Sign",        "Clip",      "Max", "Min",  "Pow",  "Gelu",       "ThresholdedRelu",
      "Mul",  "Add",       "Sub",         "Div",       "Log", "Mish", "Sin",  "Cos",        "Identity"};
  return n->domain.empty() && n->outputs.size() == 1 && n->outputs[0] && n->subgraphs().empty() &&
         (kOps.count(n->op_type) || ew_from_onnx(n->op_type));
}

// A chain ending in QuantizeLinear q: its nodes in topological order and its one 8-bit source.
struct Chain {
  ir::Value* x = nullptr;
  std::vector<ir::Node*> nodes;
  bool computes = false;  // an op besides the Q / DQ nodes
};

class ChainFinder {
 public:
  explicit ChainFinder(const ir::Graph& g) : g_(g) {}
  std::optional<Chain> find(ir::Node* q) {
    chain_ = Chain{};
    seen_.clear();
    if (!visit(q) || !chain_.x) return std::nullopt;
    return chain_;
  }

 private:
  // Adds n after the nodes its inputs come from (post-order: topological); false where the chain breaks.
  bool visit(ir::Node* n) {
    if (seen_.count(n)) return true;
    seen_.insert(n);
    if (seen_.size() > kMaxChain) return false;
    const bool dq = is_onnx_op(n, "DequantizeLinear");
    if (dq                                ? !per_tensor_qdq(g_, n, "DequantizeLinear")
        : is_onnx_op(n, "QuantizeLinear") ? !per_tensor_qdq(g_, n, "QuantizeLinear")
                                          : !elementwise_op(n))
      return false;
    if (!dq && !is_onnx_op(n, "QuantizeLinear")) chain_.computes = true;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      ir::Value* v = n->inputs[i];
      if (!v || is_constant(g_, v)) {
        if (v && v->initializer->numel() != 1) return false;  // scalars only: no broadcast of the source
        continue;
      }
      ir::Node* p = v->producer;
      if (dq && i == 0) {
        // through a QuantizeLinear inside the chain (SiLU's quantized sigmoid) where that leads back to the
        // source; else these are the bytes the chain reads
        if (p && per_tensor_qdq(g_, p, "QuantizeLinear")) {
          const Chain saved_chain = chain_;
          const auto saved_seen = seen_;
          if (visit(p)) continue;
          chain_ = saved_chain, seen_ = saved_seen;
        }
        if (!is_q8(v->type.elem) || (chain_.x && chain_.x != v)) return false;
        chain_.x = v;
        continue;
      }
      const bool inner =
          p && (is_onnx_op(p, "QuantizeLinear") || is_onnx_op(p, "DequantizeLinear") || elementwise_op(p));
      if (!inner || !visit(p)) return false;
    }
    chain_.nodes.push_back(n);
    return true;
  }

  const ir::Graph& g_;
  Chain chain_;
  std::unordered_set<const ir::Node*> seen_;
};

// All 256 values of an 8-bit type, by byte: element b is the value whose byte is b.
Tensor all_bytes(DType t) {
  Tensor v(t, {256});
  for (int b = 0; b < 256; ++b) static_cast<uint8_t*>(v.raw_data())[b] = uint8_t(b);
  return v;
}

// The chain's result for every byte of its source, or nothing where a kernel declines.
std::optional<Tensor> evaluate(const Chain& c, ir::Node* q) {
  std::map<const ir::Value*, DataValue> val;
  val[c.x] = DataValue(all_bytes(c.x->type.elem));
  for (ir::Node* n : c.nodes) {
    std::vector<DataValue> in;
    for (ir::Value* v : n->inputs)
      in.push_back(!v ? DataValue() : v->initializer ? DataValue(*v->initializer) : val.at(v));
    auto out = evaluate_node(*n, std::move(in));
    if (!out || !(*out)[0].is_tensor()) return std::nullopt;
    val[n->outputs[0]] = std::move((*out)[0]);
  }
  const DataValue& r = val.at(q->outputs[0]);
  if (!r.is_tensor() || !is_q8(r.tensor.dtype()) || r.tensor.numel() != 256) return std::nullopt;
  return r.tensor.contiguous().reshape({256});
}

ir::Value* table_value(ir::Graph& g, const std::string& base, Tensor t) {
  ir::Value* v = g.add_value(g.unique_name(base + "_table"));
  v->type = ir::TypeInfo::tensor_of(t);
  v->initializer = std::move(t);
  return v;
}

ir::Node* lookup_node(ir::Graph& g, const std::string& name, ir::Value* x, Tensor table) {
  ir::Node* f = g.add_node("QLookup", name);
  f->domain = "tessera";
  f->opset = 1;
  g.connect_input(f, x);
  g.connect_input(f, table_value(g, name, std::move(table)));
  return f;
}

bool identity_table(const Tensor& t) {
  for (int b = 0; b < 256; ++b)
    if (static_cast<const uint8_t*>(t.raw_data())[b] != b) return false;
  return true;
}

// Q(f(DQ(x))) -> QLookup(x, table).
bool fuse_chain(ir::Graph& g, ir::Node* q, ChainFinder& finder) {
  auto c = finder.find(q);
  if (!c || !c->x->type.shape || !q->outputs[0]->type.shape ||
      *c->x->type.shape != *q->outputs[0]->type.shape)
    return false;
  auto table = evaluate(*c, q);
  if (!table || table->dtype() != q->outputs[0]->type.elem ||
      (!c->computes && table->dtype() == c->x->type.elem && identity_table(*table)))
    return false;  // (an identity requantization: left to fuse_qdq's pairs)
  ir::Value* out = q->outputs[0];
  const std::string name = q->name;
  g.remove_node(q);
  ir::Node* f = lookup_node(g, name, c->x, std::move(*table));
  g.connect_output(f, out);
  return true;
}

// Q(Concat(DQ_1(x_1), ..., DQ_k(x_k))) -> Concat(t_1(x_1), ..., t_k(x_k)): each input requantized to the
// output's scale by its table (or as it is where it has that scale already).
bool fuse_concat(ir::Graph& g, ir::Node* n) {
  if (!is_onnx_op(n, "Concat") || n->outputs.size() != 1 || n->inputs.empty()) return false;
  ir::Node* q = sole_consumer(g, n->outputs[0]);
  if (!q || !per_tensor_qdq(g, q, "QuantizeLinear") || q->inputs[0] != n->outputs[0]) return false;
  const DType yt = q->outputs[0]->type.elem;
  if (!is_q8(yt)) return false;
  std::vector<ir::Node*> dqs;
  for (ir::Value* v : n->inputs) {
    ir::Node* p = v ? v->producer : nullptr;
    if (!p || !per_tensor_qdq(g, p, "DequantizeLinear") || !is_q8(p->inputs[0]->type.elem)) return false;
    dqs.push_back(p);
  }
  std::vector<ir::Value*> bytes;
  std::vector<std::pair<ir::Value*, Tensor>> lookups;
  for (ir::Node* dq : dqs) {
    std::vector<DataValue> in{DataValue(all_bytes(dq->inputs[0]->type.elem))};
    for (size_t i = 1; i < dq->inputs.size(); ++i)
      in.push_back(dq->inputs[i] ? DataValue(*dq->inputs[i]->initializer) : DataValue());
    auto f = evaluate_node(*dq, std::move(in));
    if (!f || !(*f)[0].is_tensor()) return false;
    std::vector<DataValue> qin{std::move((*f)[0])};
    for (size_t i = 1; i < q->inputs.size(); ++i)
      qin.push_back(q->inputs[i] ? DataValue(*q->inputs[i]->initializer) : DataValue());
    auto t = evaluate_node(*q, std::move(qin));
    if (!t || !(*t)[0].is_tensor() || (*t)[0].tensor.dtype() != yt) return false;
    lookups.emplace_back(dq->inputs[0], (*t)[0].tensor.contiguous());
  }
  ir::Node* cat = g.add_node("Concat", n->name);
  cat->opset = n->opset;
  cat->attrs = n->attrs;
  for (auto& [x, table] : lookups) {
    if (x->type.elem == yt && identity_table(table)) {
      g.connect_input(cat, x);
      continue;
    }
    ir::Node* f = lookup_node(g, n->name + "_requantize", x, std::move(table));
    ir::Value* y = g.add_value(g.unique_name(x->name + "_requantized"));
    y->type = x->type;
    y->type.elem = yt;
    g.connect_output(f, y);
    g.connect_input(cat, y);
  }
  ir::Value* out = q->outputs[0];
  g.remove_node(q);
  g.remove_node(n);
  g.connect_output(cat, out);
  return true;
}

}  // namespace

void fuse_qlookup(ir::Graph& g) {
  g.topological_sort();
  std::unordered_set<const ir::Node*> gone;
  // Removes what the fusions left unread (pure nodes only), noting it in `gone`.
  const auto prune = [&] {
    for (bool removed = true; removed;) {
      removed = false;
      g.remove_nodes_if([&](const ir::Node* n) {
        const bool pure = elementwise_op(n) || is_onnx_op(n, "QuantizeLinear") ||
                          is_onnx_op(n, "DequantizeLinear") || is_onnx_op(n, "Concat") ||
                          (n->domain == "tessera" && n->op_type == "QLookup");
        if (!pure) return false;
        for (const ir::Value* v : n->outputs)
          if (v && (!v->uses.empty() || is_graph_output(g, v))) return false;
        removed = true;
        gone.insert(n);
        return true;
      });
    }
  };
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  bool any = false;
  // Concats first (their QuantizeLinear is theirs), then the chains from the graph's end, so that each takes
  // the longest chain (SiLU's Mul before the Sigmoid's QuantizeLinear inside it, which then goes unread).
  for (ir::Node* n : nodes)
    if (is_onnx_op(n, "Concat") && fuse_concat(g, n)) any = true;
  if (any) prune();
  ChainFinder finder(g);
  nodes.clear();
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node* n = *it;
    if (gone.count(n) || !is_onnx_op(n, "QuantizeLinear") || !per_tensor_qdq(g, n, "QuantizeLinear"))
      continue;
    if (fuse_chain(g, n, finder)) {
      any = true;
      gone.insert(n);
      prune();
    }
  }
  if (any) g.remove_unused_values();
}

}  // namespace tessera::passes
