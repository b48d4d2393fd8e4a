// fuse_attention: scaled-dot-product attention as exporters write it,
//   MatMul(Q, Kt) [-> Div(., c) | Mul(., c)] [-> Where(Cond, ., fill) | Where(Cond, fill, .)]
//     [-> Add(., Mask)] -> Softmax(axis -1) -> MatMul(., V)
// (c a constant scalar; Kt is K already transposed, as PyTorch exports it),
// becomes one tessera.FusedAttention(Q, Kt, V, Mask?, Cond?) {scale, k_transposed = 1, keep_where, fill}:
// the scores are formed, masked, softmaxed and applied to V a block of queries
// at a time without materializing the Lq x Lk matrix. A constant scale applied
// to Q or Kt before the MatMul (ViT; PyTorch 2's SDPA export, both) joins the scale; Transposes feeding Q,
// Kt, V (the heads split off [B, L, H, D]) and one taking the result (merging them back) fold into q_perm /
// k_perm / v_perm / out_perm: the kernel reads and writes those layouts in place, no copies. The intermediate
// values must be used only along the chain; Q, Kt and V must have the same known rank (the kernel falls back
// to the reference composition for anything it cannot index, e.g. broadcast leading dims).
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

std::optional<size_t> rank_of(const ir::Value* v) {
  if (!v || !v->type.shape) return std::nullopt;
  return v->type.shape->size();
}

// Softmax over the last axis. Before opset 13 Softmax flattens the dims from `axis` (default 1) into one —
// the same thing where axis is the last (BERT exported at opsets 11-12: axis -1).
bool softmax_last_axis(const ir::Node* sm) {
  if (!is_onnx_op(sm, "Softmax")) return false;
  const Attribute* a = sm->attr("axis");
  const int64_t axis = a ? a->i : sm->opset < 13 ? 1 : -1;
  if (axis == -1) return true;
  const auto r = rank_of(sm->inputs[0]);
  return r && axis == int64_t(*r) - 1;
}

struct Match {
  ir::Node *m1 = nullptr, *m2 = nullptr;
  std::vector<ir::Node*> chain;  // scale / mask / softmax nodes between them
  ir::Value* mask = nullptr;
  ir::Value* cond = nullptr;  // Where(cond, S, fill) (keep_where) or Where(cond, fill, S)
  bool keep_where = false;
  float fill = 0.0f;
  float scale = 1.0f;
};

// The node producing v if v is used only by `user`.
ir::Node* chain_producer(const ir::Graph& g, const ir::Value* v, const ir::Node* user) {
  if (!v || !v->producer || sole_consumer(g, v) != user) return nullptr;
  return v->producer;
}

bool match(const ir::Graph& g, ir::Node* sm, Match& m) {
  if (!softmax_last_axis(sm) || !is_f32(sm->inputs[0])) return false;
  m.m2 = sole_consumer(g, sm->outputs[0]);
  if (!is_onnx_op(m.m2, "MatMul") || m.m2->inputs[0] != sm->outputs[0]) return false;
  m.chain = {sm};
  ir::Node* p = chain_producer(g, sm->inputs[0], sm);
  if (is_onnx_op(p, "Add")) {
    // The mask is the operand that does not continue the chain.
    for (int side = 0; side < 2; ++side) {
      ir::Node* q = chain_producer(g, p->inputs[size_t(side)], p);
      if (is_onnx_op(q, "MatMul") || is_onnx_op(q, "Div") || is_onnx_op(q, "Mul")) {
        m.mask = p->inputs[size_t(1 - side)];
        m.chain.push_back(p);
        p = q;
        break;
      }
    }
    if (!m.mask || !is_f32(m.mask)) return false;
  }
  if (is_onnx_op(p, "Where") && p->inputs.size() == 3) {
    // masked_fill as exported: one branch a constant scalar, the other the scores.
    for (int side = 1; side <= 2; ++side) {
      const auto fill = constant_scalar(p->inputs[size_t(3 - side)]);
      ir::Node* q = chain_producer(g, p->inputs[size_t(side)], p);
      if (fill && (is_onnx_op(q, "MatMul") || is_onnx_op(q, "Div") || is_onnx_op(q, "Mul"))) {
        m.cond = p->inputs[0];
        m.keep_where = side == 1;
        m.fill = *fill;
        m.chain.push_back(p);
        p = q;
        break;
      }
    }
    if (!m.cond || m.cond->type.elem != DType::boolean) return false;
  }
  if (is_onnx_op(p, "Div") || is_onnx_op(p, "Mul")) {
    const bool div = is_onnx_op(p, "Div");
    const auto c1 = constant_scalar(p->inputs[1]);
    const auto c0 = div ? std::nullopt : constant_scalar(p->inputs[0]);
    if (c1 && *c1 != 0.0f) {
      m.scale = div ? 1.0f / *c1 : *c1;
      m.chain.push_back(p);
      p = chain_producer(g, p->inputs[0], p);
    } else if (c0) {
      m.scale = *c0;
      m.chain.push_back(p);
      p = chain_producer(g, p->inputs[1], p);
    } else {
      return false;
    }
  }
  if (!is_onnx_op(p, "MatMul")) return false;
  m.m1 = p;
  const auto rq = rank_of(m.m1->inputs[0]), rk = rank_of(m.m1->inputs[1]), rv = rank_of(m.m2->inputs[1]);
  if (!rq || *rq < 2 || rk != rq || rv != rq) return false;
  for (const ir::Value* v : {m.m1->inputs[0], m.m1->inputs[1], m.m2->inputs[1]})
    if (!is_f32(v)) return false;
  for (const ir::Value* extra : {m.mask, m.cond}) {
    if (!extra) continue;
    const auto re = rank_of(extra);
    if (!re || *re > *rq) return false;  // one that adds dims would change the result's shape
  }
  return true;
}

}  // namespace

void fuse_attention(ir::Graph& g) {
  std::vector<ir::Node*> softmaxes;
  for (const auto& n : g.nodes())
    if (is_onnx_op(n.get(), "Softmax")) softmaxes.push_back(n.get());
  for (ir::Node* sm : softmaxes) {
    Match m;
    if (!match(g, sm, m)) continue;
    ir::Value *q = m.m1->inputs[0], *kt = m.m1->inputs[1], *v = m.m2->inputs[1], *out = m.m2->outputs[0];
    const std::string name = m.m2->name;
    // Around the core: a constant scaling of Q (ViT) or of Kt (PyTorch 2's scaled_dot_product_attention
    // export scales both by sqrt(scale)) joins the scale; the Transposes that split the heads and merge them
    // back become views the kernel reads and writes in place.
    std::vector<ir::Node*> around;
    const ir::Node *q_user = m.m1, *k_user = m.m1;
    auto absorb_scale = [&](ir::Value*& x, const ir::Node*& user) {
      ir::Node* p = chain_producer(g, x, m.m1);
      if (!is_onnx_op(p, "Div") && !is_onnx_op(p, "Mul")) return;
      const auto rx = rank_of(p->inputs[0]);
      const bool div = is_onnx_op(p, "Div");
      const auto c = constant_scalar(p->inputs[1]);
      if (c && is_constant(g, p->inputs[1]) && *c != 0.0f && rx && rank_of(p->inputs[1]) <= rx &&
          is_f32(p->inputs[0])) {
        m.scale *= div ? 1.0f / *c : *c;
        x = p->inputs[0];
        user = p;
        around.push_back(p);
      }
    };
    absorb_scale(q, q_user);
    absorb_scale(kt, k_user);
    const auto rq = rank_of(q);
    ir::Value* ins[3] = {q, kt, v};
    const ir::Node* users[3] = {q_user, k_user, m.m2};
    std::vector<int64_t> perms[3], out_perm;
    for (int i = 0; i < 3; ++i) {
      ir::Node* t = chain_producer(g, ins[i], users[i]);
      const auto perm = is_onnx_op(t, "Transpose") ? ints_attr(t, "perm", {}) : std::vector<int64_t>{};
      if (!perm.empty() && rq && perm.size() == *rq) {
        perms[i] = perm;
        ins[i] = t->inputs[0];
        around.push_back(t);
      }
    }
    if (ir::Node* t = sole_consumer(g, out); is_onnx_op(t, "Transpose")) {
      const auto perm = ints_attr(t, "perm", {});
      if (!perm.empty() && rq && perm.size() == *rq) {
        out_perm = perm;
        out = t->outputs[0];
        around.push_back(t);
      }
    }
    q = ins[0], kt = ins[1], v = ins[2];
    for (ir::Node* n : m.chain) g.remove_node(n);
    for (ir::Node* n : around) g.remove_node(n);
    g.remove_node(m.m1);
    g.remove_node(m.m2);
    ir::Node* f = g.add_node("FusedAttention", name);
    f->domain = "tessera";
    f->opset = 1;
    set_attr_float(f, "scale", m.scale);
    set_attr_int(f, "k_transposed", 1);
    const char* keys[3] = {"q_perm", "k_perm", "v_perm"};
    for (int i = 0; i < 3; ++i)
      if (!perms[i].empty()) set_attr_ints(f, keys[i], perms[i]);
    if (!out_perm.empty()) set_attr_ints(f, "out_perm", out_perm);
    for (ir::Value* x : {q, kt, v}) g.connect_input(f, x);
    if (m.mask || m.cond) g.connect_input(f, m.mask);  // may be omitted (nullptr) when only cond is there
    if (m.cond) {
      g.connect_input(f, m.cond);
      set_attr_int(f, "keep_where", m.keep_where ? 1 : 0);
      set_attr_float(f, "fill", m.fill);
    }
    g.connect_output(f, out);
  }
  g.remove_unused_values();
}

}  // namespace tessera::passes
