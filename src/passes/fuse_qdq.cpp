// fuse_qdq: the QDQ format's quantized Conv and MatMul run in 8-bit integers. onnxruntime's quantizer writes
// a quantized conv as DequantizeLinear on its input, weights and bias, the float Conv, and QuantizeLinear on
// its output; run as written that is a float conv with the conversions around it (2.2x onnxruntime's time on
// a QDQ ResNet-18, which onnxruntime runs in int8). Here
//   Q(Conv(DQ(x), DQ(w), DQ(bias)))  ->  QLinearConv(x, w, bias)
//   Q(MatMul(DQ(a), DQ(b)))          ->  QLinearMatMul(a, b)
//   Q(Add(DQ(a), DQ(b)))             ->  tessera.QLinearAdd(a, b)
//   Q(MaxPool(DQ(x)))                ->  MaxPool(x)   (the same scale and zero point; and so every op that
//                                                      only moves values: Reshape, Split, Concat ...)
// as onnxruntime's QDQ selectors do, on the int8 kernels (kernels/x86/qgemm.h). The sums become exact
// integers instead of f32 sums of products, the requantization rounds once: what onnxruntime computes for the
// same model. Conditions: scales and zero points constant, per tensor (the conv's weights also per output
// channel, axis 0); weights (and bias) constant; the float result read only by the QuantizeLinear; the bias
// an int32 DequantizeLinear with zero point 0 and scale exactly x_scale * w_scale, which is what
// QLinearConv's bias means. Runs before fold_constants, which would fold the weights' DequantizeLinear.
#include <string>
#include <unordered_set>

#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

bool is_q8(DType t) {
  return t == DType::u8 || t == DType::i8;
}

// A DequantizeLinear / QuantizeLinear whose scale and zero point are constants the QLinear ops take: one
// value each, or (per_axis) a 1-D scale along axis 0 of a rank >= 2 input.
struct QParams {
  ir::Node* node = nullptr;
  ir::Value* data = nullptr;  // DQ: the quantized input; Q: the float input
  ir::Value* scale = nullptr;
  ir::Value* zero = nullptr;  // may be null (zero of the default type)
  bool per_axis = false;
};

std::optional<QParams> match_q(const ir::Graph& g, ir::Node* n, const char* op, bool allow_per_axis) {
  if (!is_onnx_op(n, op) || n->inputs.size() < 2 || !n->inputs[0] || !n->inputs[1] ||
      n->outputs.size() != 1 || int_attr(n, "block_size", 0) != 0 || int_attr(n, "output_dtype", 0) != 0 ||
      n->attr("precision"))
    return std::nullopt;
  QParams q{n, n->inputs[0], n->inputs[1], n->inputs.size() > 2 ? n->inputs[2] : nullptr, false};
  if (!is_constant(g, q.scale) || q.scale->initializer->dtype() != DType::f32) return std::nullopt;
  if (q.zero && (!is_constant(g, q.zero) || !is_q8(q.zero->initializer->dtype()))) return std::nullopt;
  const Tensor& s = *q.scale->initializer;
  if (s.numel() != 1) {
    if (!allow_per_axis || s.rank() != 1 || int_attr(n, "axis", 1) != 0) return std::nullopt;
    if (q.zero && q.zero->initializer->shape() != s.shape()) return std::nullopt;
    q.per_axis = true;
  } else if (q.zero && q.zero->initializer->numel() != 1) {
    return std::nullopt;
  }
  return q;
}

// The DequantizeLinear producing v, when it is one the fusion takes.
std::optional<QParams> dq_of(const ir::Graph& g, const ir::Value* v, bool per_axis) {
  if (!v || !v->producer) return std::nullopt;
  auto q = match_q(g, v->producer, "DequantizeLinear", per_axis);
  if (!q || !is_q8(q->data->type.elem)) return std::nullopt;
  if (q->zero && q->zero->initializer->dtype() != q->data->type.elem) return std::nullopt;
  return q;
}

// A zero point value for the QLinear op: the DQ / Q's own, or a new zero of type t.
ir::Value* zero_point(ir::Graph& g, const QParams& q, DType t, const std::string& name) {
  if (q.zero) return q.zero;
  ir::Value* z = g.add_value(g.unique_name(name + "_zero_point"));
  Tensor zt(t, {});
  z->initializer = zt;
  z->type = ir::TypeInfo::tensor_of(zt);
  return z;
}

// bias_scale[m] == float(x_scale * w_scale[m]) for every output channel.
bool bias_scale_matches(const Tensor& bs, float xs, const Tensor& ws) {
  const int64_t m = std::max(bs.numel(), ws.numel());
  if ((bs.numel() != 1 && bs.numel() != m) || (ws.numel() != 1 && ws.numel() != m)) return false;
  const float* b = bs.data<float>();
  const float* w = ws.data<float>();
  for (int64_t i = 0; i < m; ++i)
    if (b[bs.numel() == 1 ? 0 : i] != xs * w[ws.numel() == 1 ? 0 : i]) return false;
  return true;
}

// f takes the place of n and the QuantizeLinear qn after it (qn's output becomes f's).
void replace_pair(ir::Graph& g, ir::Node* n, ir::Node* qn, ir::Node* f,
                  std::unordered_set<const ir::Node*>& gone) {
  ir::Value* out = qn->outputs[0];
  gone.insert(qn);
  g.remove_node(qn);
  g.remove_node(n);
  g.connect_output(f, out);
}

// Q(Add(DQ(a), DQ(b))) -> tessera.QLinearAdd(a, b): one pass over the bytes instead of four over floats
// (a residual connection between quantized convs), computing what the three nodes compute.
bool fuse_add(ir::Graph& g, ir::Node* n, std::unordered_set<const ir::Node*>& gone) {
  if (!is_onnx_op(n, "Add") || n->inputs.size() != 2 || n->outputs.size() != 1) return false;
  const auto qa = dq_of(g, n->inputs[0], false), qb = dq_of(g, n->inputs[1], false);
  if (!qa || !qb) return false;
  ir::Node* qn = sole_consumer(g, n->outputs[0]);
  const auto qc = match_q(g, qn, "QuantizeLinear", false);
  if (!qc || qc->data != n->outputs[0]) return false;
  const DType ct = qc->zero ? qc->zero->initializer->dtype() : DType::u8;
  const std::string name = n->name;
  ir::Node* f = g.add_node("QLinearAdd", name);
  f->domain = "tessera";
  f->opset = 1;
  for (ir::Value* v :
       {qa->data, qa->scale, zero_point(g, *qa, qa->data->type.elem, name + "_a"), qb->data, qb->scale,
        zero_point(g, *qb, qb->data->type.elem, name + "_b"), qc->scale, zero_point(g, *qc, ct, name + "_c")})
    g.connect_input(f, v);
  replace_pair(g, n, qn, f, gone);
  return true;
}

// The same quantization: one positive scale, equal, and the same zero point and type.
bool same_params(const QParams& a, const QParams& b) {
  const float s = a.scale->initializer->contiguous().data<float>()[0];
  const auto zero = [](const QParams& q) { return q.zero ? q.zero->initializer->at_double(0) : 0.0; };
  const auto type = [](const QParams& q) { return q.zero ? q.zero->initializer->dtype() : DType::u8; };
  return s > 0 && b.scale->initializer->contiguous().data<float>()[0] == s && zero(a) == zero(b) &&
         type(a) == type(b);
}

// Ops that move values without arithmetic on them (MaxPool: selects them, which commutes with a
// non-decreasing dequantization); data input 0, or every input for Concat.
bool moves_values(const ir::Node* n) {
  static const std::unordered_set<std::string> kOps = {
      "MaxPool", "Reshape", "Transpose",    "Flatten",      "Squeeze",  "Unsqueeze", "Slice", "Gather",
      "Split",   "Concat",  "DepthToSpace", "SpaceToDepth", "Identity", "Expand",    "Tile"};
  return n->domain.empty() && kOps.count(n->op_type) && n->subgraphs().empty();
}

// Q(Op(DQ(x))) for an op that only moves values (moves_values), with the same scale and zero point on both
// sides -> Op(x) on the bytes: Q(DQ(m)) is m. onnxruntime drops these pairs the same way; run as written
// they cost a conversion each way per op (a QDQ ShuffleNet's splits, concats and channel shuffles: a fifth of
// its time, and every one of them broke its NHWC int8 region). A Split's every output must go to such a
// QuantizeLinear, a Concat's every input come from such a DequantizeLinear. MaxPool's padding, -inf before,
// is the type's least value after: the same bytes.
bool fuse_movement(ir::Graph& g, ir::Node* n, std::unordered_set<const ir::Node*>& gone) {
  if (!moves_values(n) || n->inputs.empty() || n->outputs.empty()) return false;
  if (n->op_type == "MaxPool" && n->outputs.size() > 1 && n->outputs[1]) return false;  // indices
  const bool concat = n->op_type == "Concat";
  const auto qx = dq_of(g, n->inputs[0], false);
  if (!qx) return false;
  for (size_t i = 1; i < (concat ? n->inputs.size() : 0); ++i) {
    const auto qi = dq_of(g, n->inputs[i], false);
    if (!qi || !same_params(*qx, *qi) || qi->data->type.elem != qx->data->type.elem) return false;
  }
  std::vector<ir::Node*> qs;
  for (ir::Value* y : n->outputs) {
    if (!y) continue;
    ir::Node* qn = sole_consumer(g, y);
    const auto qy = match_q(g, qn, "QuantizeLinear", false);
    if (!qy || qy->data != y || !same_params(*qx, *qy) ||
        (qy->zero ? qy->zero->initializer->dtype() : DType::u8) != qx->data->type.elem)
      return false;
    qs.push_back(qn);
  }
  if (qs.empty()) return false;
  ir::Node* f = g.add_node(n->op_type, n->name);
  f->opset = n->op_type == "MaxPool" ? std::max(n->opset, 12) : n->opset;  // (8-bit MaxPool from opset 12)
  f->attrs = n->attrs;
  for (size_t i = 0; i < n->inputs.size(); ++i)
    g.connect_input(f,
                    i == 0 || (concat && n->inputs[i]) ? dq_of(g, n->inputs[i], false)->data : n->inputs[i]);
  std::vector<ir::Value*> outs;
  for (ir::Node* qn : qs) outs.push_back(qn->outputs[0]);
  std::vector<bool> present;
  for (ir::Value* y : n->outputs) present.push_back(y != nullptr);
  for (ir::Node* qn : qs) {
    gone.insert(qn);
    g.remove_node(qn);
  }
  g.remove_node(n);
  for (size_t i = 0, k = 0; i < present.size(); ++i) g.connect_output(f, present[i] ? outs[k++] : nullptr);
  return true;
}

// Fuses n when it matches; `gone` gets the nodes removed.
bool fuse_one(ir::Graph& g, ir::Node* n, std::unordered_set<const ir::Node*>& gone) {
  if (is_onnx_op(n, "Add")) return fuse_add(g, n, gone);
  if (moves_values(n)) return fuse_movement(g, n, gone);
  const bool conv = is_onnx_op(n, "Conv");
  if (!(conv || is_onnx_op(n, "MatMul")) || n->outputs.size() != 1 || n->inputs.size() < 2) return false;
  const auto qx = dq_of(g, n->inputs[0], false);
  const auto qw = dq_of(g, n->inputs[1], conv);
  if (!qx || !qw || !is_constant(g, qw->data)) return false;
  if (qw->per_axis && qw->scale->initializer->numel() != qw->data->initializer->dim(0)) return false;
  if (!conv && qw->data->initializer->rank() != 2) return false;
  ir::Node* qn = sole_consumer(g, n->outputs[0]);
  const auto qy = match_q(g, qn, "QuantizeLinear", false);
  if (!qy || qy->data != n->outputs[0]) return false;
  const DType yt = qy->zero ? qy->zero->initializer->dtype() : DType::u8;
  ir::Value* bias = nullptr;
  if (conv && n->inputs.size() > 2 && n->inputs[2]) {
    const auto qb = dq_of(g, n->inputs[2], false);
    // (an int32 bias: dq_of takes 8-bit only, so match the node directly)
    ir::Node* bn = n->inputs[2]->producer;
    if (qb || !is_onnx_op(bn, "DequantizeLinear") || bn->inputs.size() < 2) return false;
    ir::Value* bq = bn->inputs[0];
    ir::Value* bs = bn->inputs[1];
    ir::Value* bz = bn->inputs.size() > 2 ? bn->inputs[2] : nullptr;
    if (!is_constant(g, bq) || bq->initializer->dtype() != DType::i32 || bq->initializer->rank() != 1 ||
        !is_constant(g, bs) || bs->initializer->dtype() != DType::f32)
      return false;
    if (bz) {
      if (!is_constant(g, bz) || bz->initializer->dtype() != DType::i32) return false;
      const Tensor z = bz->initializer->contiguous();
      for (int64_t i = 0; i < z.numel(); ++i)
        if (z.data<int32_t>()[i] != 0) return false;
    }
    if (!bias_scale_matches(bs->initializer->contiguous(),
                            qx->scale->initializer->contiguous().data<float>()[0],
                            qw->scale->initializer->contiguous()))
      return false;
    bias = bq;
  }
  const std::string name = n->name;
  ir::Node* f = g.add_node(conv ? "QLinearConv" : "QLinearMatMul", name);
  f->opset = 10;
  if (conv) f->attrs = n->attrs;
  for (ir::Value* v :
       {qx->data, qx->scale, zero_point(g, *qx, qx->data->type.elem, name + "_x"), qw->data, qw->scale,
        zero_point(g, *qw, qw->data->type.elem, name + "_w"), qy->scale, zero_point(g, *qy, yt, name + "_y")})
    g.connect_input(f, v);
  if (bias) g.connect_input(f, bias);
  replace_pair(g, n, qn, f, gone);
  return true;
}

}  // namespace

void fuse_qdq(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::unordered_set<const ir::Node*> gone;
  bool any = false;
  for (ir::Node* n : nodes)
    if (!gone.count(n)) any = fuse_one(g, n, gone) || any;
  if (!any) return;
  // the DequantizeLinears nothing reads any more
  g.remove_nodes_if([&](const ir::Node* n) {
    return is_onnx_op(n, "DequantizeLinear") && n->outputs.size() == 1 && n->outputs[0] &&
           n->outputs[0]->uses.empty() && !is_graph_output(g, n->outputs[0]);
  });
  g.remove_unused_values();
}

}  // namespace tessera::passes
