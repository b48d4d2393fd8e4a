// fuse_elementwise: connected f32 elementwise ops (core/ew_program.def: Add,
// Sub, Mul, Div, Exp, Erf, Tanh, Sigmoid, Relu, Neg, Sqrt, Abs, Log, Sin, Cos, Softplus, Pow, ...) whose
// intermediate results are used only inside the group become one
// tessera.FusedElementwise node running a small program, so the chain
// streams its tensors through memory once. This is how the exporters' GELU
// (x * 0.5 * (1 + erf(x / sqrt 2)), or the tanh form), scaled residuals and
// bias chains end up as a single pass — without matching any one pattern.
//   Div(x, c) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5)   ==>   FusedElementwise(x, c, 1, 0.5)
// A group has exactly one result used outside it; its inputs may broadcast. Within a group, Mul(x,
// Sigmoid(x)) (SiLU as the exporters write it) is one silu instruction: one vectorized pass instead of a
// sigmoid into a register and a multiply. A Pow of an f32 by a constant 2 or 0.5 (RMSNorm's and a
// variance's square, as the exporters write them) becomes Mul(x, x) or Sqrt(x) first, so that it joins too
// (Pow itself runs std::pow per element: LLaMA's RMSNorms took 10% of the model); by 3, Mul(Mul(x, x), x); by
// 1, Mul(x, 1). Other f32 Pows are the programs' pow. LeakyRelu, PRelu (of a constant slope), Mish and
// HardSigmoid become programs' ops to join as well, ThresholdedRelu a threshold instruction (alone too).
#include <algorithm>
#include <map>
#include <set>

#include "core/ew_program.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

constexpr size_t kMaxGroup = 24;

// ThresholdedRelu(x): the program's threshold(x, alpha), alpha a scalar input of the group.
bool thresholded_relu(const ir::Node* n) {
  return is_onnx_op(n, "ThresholdedRelu") && n->inputs.size() == 1;
}

// The two-input HardSigmoid(t, alpha) this pass makes of HardSigmoid(x) (t = x, or x + (beta - 1/2) / alpha):
// the program's hard_sigmoid_half(t, alpha). It never leaves the pass (always a program, alone too).
bool scaled_hard_sigmoid(const ir::Node* n) {
  return is_onnx_op(n, "HardSigmoid") && n->inputs.size() == 2;
}

bool candidate(const ir::Graph& g, const ir::Node* n) {
  if (!n || n->owner != &g || !n->domain.empty() || !n->subgraphs().empty() || n->outputs.size() != 1)
    return false;
  const auto op = ew_from_onnx(n->op_type);
  if (!thresholded_relu(n) && !scaled_hard_sigmoid(n) && (!op || int(n->inputs.size()) != ew_arity(*op)))
    return false;
  if (!is_f32(n->outputs[0])) return false;
  for (const ir::Value* v : n->inputs)
    if (!is_f32(v)) return false;
  return true;
}

// Whether a producer's result is broadcast by its consumer (fewer elements, both shapes known): in a group it
// would be recomputed for every element it spreads to (a squeeze-and-excitation's Sigmoid over C channels,
// scaling an H x W x C map: the sigmoid ran H x W times over), so it stays outside.
bool broadcast_into(const ir::Value* produced, const ir::Value* consumed) {
  const auto a = produced->type.static_shape(), b = consumed->type.static_shape();
  if (!a || !b) return false;
  int64_t na = 1, nb = 1;
  for (int64_t d : *a) na *= d;
  for (int64_t d : *b) nb *= d;
  return na < nb;
}

// Every use of v is a node of `group` (and v is not a graph output).
bool used_only_in(const ir::Graph& g, const ir::Value* v, const std::set<ir::Node*>& group) {
  if (is_graph_output(g, v) || v->uses.empty()) return false;
  for (const auto& [user, idx] : v->uses)
    if (!group.count(user)) return false;
  return true;
}

}  // namespace

void fuse_elementwise(ir::Graph& g) {
  for (ir::Node* n : [&] {
         std::vector<ir::Node*> v;
         for (const auto& p : g.nodes()) v.push_back(p.get());
         return v;
       }()) {
    if (!is_onnx_op(n, "Pow") || n->inputs.size() != 2 || n->outputs.size() != 1 || !is_f32(n->inputs[0]) ||
        !is_f32(n->outputs[0]) || !is_constant(g, n->inputs[1]))
      continue;
    const auto e = constant_scalar(n->inputs[1]);
    if (!e || (*e != 2.0f && *e != 0.5f && *e != 1.0f && *e != 3.0f)) continue;
    ir::Value* x = n->inputs[0];
    ir::Value* y = n->outputs[0];
    const std::string name = n->name;
    g.remove_node(n);
    auto node = [&](const char* op, ir::Value* a, ir::Value* b, ir::Value* out) {
      ir::Node* r = g.add_node(op, g.unique_name(name + "_" + op));
      r->opset = 13;
      g.connect_input(r, a);
      if (b) g.connect_input(r, b);
      if (!out) {
        out = g.add_value(g.unique_name(name + "_" + op));
        out->type = y->type;
      }
      g.connect_output(r, out);
      return out;
    };
    if (*e == 2.0f) {
      node("Mul", x, x, y);
    } else if (*e == 0.5f) {
      node("Sqrt", x, nullptr, y);
    } else if (*e == 3.0f) {
      node("Mul", node("Mul", x, x, nullptr), x, y);
    } else {  // x * 1: x exactly (NaN, -0 and inf included), and it can join a group
      ir::Value* one = g.add_value(g.unique_name(name + "_one"));
      Tensor t(DType::f32, {});
      t.data<float>()[0] = 1.0f;
      one->type = ir::TypeInfo::tensor_of(t);
      one->initializer = t;
      node("Mul", x, one, y);
    }
  }
  // Activations with no program op of their own, rewritten into the programs' ops so that they join a group
  // (or make one) and stream once, vectorized — alone they ran on the reference kernels, element by element
  // in double:
  // - LeakyRelu(x, a) and PRelu(x, constant slope a) as x + (1 - a) * Relu(-x) (Darknet's and GANs'
  // activation
  //   after every conv);
  // - Mish(x) = x tanh(softplus(x)), the op (opset 18) or Mul(x, Tanh(Softplus(x))) as YOLOv4 exports it, as
  //   x (1 - 2 / (e (e + 2) + 2)), e = exp(x): tanh(log(1 + e)) = ((1 + e)^2 - 1) / ((1 + e)^2 + 1), in a
  //   form that stays finite where e overflows (the quotient goes to 0, y to x);
  // - Elu, Selu and Celu as Relu(x) - a Relu(1 - e^x) (ELU-family networks; 4-9x ORT's time alone).
  std::set<const ir::Node*> removed;  // Mish chains' Softplus and Tanh (freed: never dereferenced)
  for (ir::Node* n : [&] {
         std::vector<ir::Node*> v;
         for (const auto& p : g.nodes()) v.push_back(p.get());
         return v;
       }()) {
    if (removed.count(n) || n->outputs.size() != 1 || !n->outputs[0] || n->inputs.empty() ||
        !is_f32(n->inputs[0]) || !is_f32(n->outputs[0]))
      continue;
    const bool leaky = is_onnx_op(n, "LeakyRelu") && n->inputs.size() == 1;
    const bool prelu = is_onnx_op(n, "PRelu") && n->inputs.size() == 2 && is_constant(g, n->inputs[1]) &&
                       n->inputs[1]->initializer->dtype() == DType::f32;
    ir::Value* x = n->inputs[0];
    // Mul(x, Tanh(Softplus(x))): its Tanh and Softplus read only along the chain
    std::vector<ir::Node*> mish_chain;
    if (is_onnx_op(n, "Mul") && n->inputs.size() == 2) {
      for (int side = 0; side < 2 && mish_chain.empty(); ++side) {
        ir::Node* t = n->inputs[size_t(side)]->producer;
        ir::Node* sp = is_onnx_op(t, "Tanh") ? t->inputs[0]->producer : nullptr;
        if (is_onnx_op(sp, "Softplus") && sp->inputs[0] == n->inputs[size_t(1 - side)] &&
            sole_consumer(g, t->outputs[0]) == n && sole_consumer(g, sp->outputs[0]) == t) {
          mish_chain = {sp, t};
          x = sp->inputs[0];
        }
      }
    }
    const bool mish = (is_onnx_op(n, "Mish") && n->inputs.size() == 1) || !mish_chain.empty();
    const bool elu_like =
        (is_onnx_op(n, "Elu") || is_onnx_op(n, "Selu") || is_onnx_op(n, "Celu")) && n->inputs.size() == 1;
    const bool hard_sigmoid = is_onnx_op(n, "HardSigmoid") && n->inputs.size() == 1;
    if (!leaky && !prelu && !mish && !elu_like && !hard_sigmoid) continue;
    ir::Value* y = n->outputs[0];
    const std::string name = n->name;
    auto scalar = [&](const char* tag, const Tensor& t) {
      ir::Value* v = g.add_value(g.unique_name(name + tag));
      v->type = ir::TypeInfo::tensor_of(t);
      v->initializer = t;
      return v;
    };
    auto value = [](float f) {
      Tensor t(DType::f32, {});
      t.data<float>()[0] = f;
      return t;
    };
    auto step = [&](const char* op, std::vector<ir::Value*> ins, ir::Value* out = nullptr) {
      ir::Node* m = g.add_node(op, g.unique_name(name + "_" + op));
      m->opset = 14;
      for (ir::Value* v : ins) g.connect_input(m, v);
      if (!out) {
        out = g.add_value(g.unique_name(name + "_" + op));
        out->type = y->type;
      }
      g.connect_output(m, out);
      return out;
    };
    if (mish) {
      for (ir::Node* c : mish_chain) removed.insert(c), g.remove_node(c);
      g.remove_node(n);
      ir::Value *two = scalar("_two", value(2.0f)), *one = scalar("_one", value(1.0f));
      ir::Value* e = step("Exp", {x});
      ir::Value* q = step("Div", {two, step("Add", {step("Mul", {e, step("Add", {e, two})}), two})});
      step("Mul", {x, step("Sub", {one, q})}, y);
      continue;
    }
    if (elu_like) {
      // Elu(x) = Relu(x) - a Relu(1 - e^x); Selu = gamma Elu with its alpha; Celu(x) = Relu(x) - a Relu(1 -
      // e^(x / a)): for x <= 0, e^x <= 1 and the second term is a (e^x - 1); for x > 0 it is 0
      const bool selu = is_onnx_op(n, "Selu"), celu = is_onnx_op(n, "Celu");
      const float a = float_attr(n, "alpha", selu ? 1.67326319217681884765625f : 1.0f);
      const float gamma = selu ? float_attr(n, "gamma", 1.05070102214813232421875f) : 1.0f;
      if (celu && a == 0.0f) continue;  // (Celu's alpha may not be 0: the reference reports it)
      g.remove_node(n);
      ir::Value* one = scalar("_one", value(1.0f));
      ir::Value* e = step("Exp", {celu ? step("Mul", {x, scalar("_inv_alpha", value(1.0f / a))}) : x});
      ir::Value* neg =
          step("Mul", {step("Relu", {step("Sub", {one, e})}), scalar("_alpha", value(gamma * a))});
      ir::Value* pos = step("Relu", {x});
      if (selu) pos = step("Mul", {pos, scalar("_gamma", value(gamma))});
      step("Sub", {pos, neg}, y);
      continue;
    }
    if (hard_sigmoid) {  // max(0, min(1, a x + b)), NaN kept
      const float a = float_attr(n, "alpha", 0.2f), b = float_attr(n, "beta", 0.5f);
      g.remove_node(n);
      // hard_sigmoid_half(x, a), one pass; another beta: of x + (b - 1/2) / a (four passes as Mul, Add, Relu,
      // Min took 1.4x onnxruntime's time)
      if (a != 0.0f && std::isfinite((b - 0.5f) / a)) {
        ir::Node* m = g.add_node("HardSigmoid", g.unique_name(name + "_half"));
        m->opset = 6;
        g.connect_input(m, b == 0.5f ? x : step("Add", {x, scalar("_shift", value((b - 0.5f) / a))}));
        g.connect_input(m, scalar("_alpha", value(a)));
        g.connect_output(m, y);
        continue;
      }
      ir::Value* t = step("Add", {step("Mul", {x, scalar("_alpha", value(a))}), scalar("_beta", value(b))});
      step("Min", {step("Relu", {t}), scalar("_one", value(1.0f))}, y);
      continue;
    }
    Tensor c;
    if (leaky) {
      c = value(1.0f - float_attr(n, "alpha", 0.01f));
    } else {
      c = n->inputs[1]->initializer->contiguous().clone();
      for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = 1.0f - c.data<float>()[i];
    }
    g.remove_node(n);
    ir::Value* cv = scalar("_one_minus_slope", c);
    step("Add", {x, step("Mul", {step("Relu", {step("Neg", {x})}), cv})}, y);
  }
  g.topological_sort();
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  std::map<const ir::Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::set<ir::Node*> taken;
  struct Group {
    ir::Node* root;
    std::vector<ir::Node*> nodes;  // topological
  };
  std::vector<Group> groups;
  // From the last node back: a group grows from its result towards its inputs.
  for (size_t r = order.size(); r-- > 0;) {
    ir::Node* root = order[r];
    if (taken.count(root) || !candidate(g, root)) continue;
    std::set<ir::Node*> group = {root};
    for (bool grew = true; grew && group.size() < kMaxGroup;) {
      grew = false;
      for (ir::Node* n : std::vector<ir::Node*>(group.begin(), group.end()))
        for (ir::Value* v : n->inputs) {
          ir::Node* p = v->producer;
          if (group.size() >= kMaxGroup || !p || group.count(p) || taken.count(p) || !candidate(g, p))
            continue;
          if (!used_only_in(g, p->outputs[0], group) || broadcast_into(p->outputs[0], n->outputs[0]))
            continue;
          group.insert(p);
          grew = true;
        }
    }
    // Alone, a program op with no tuned kernel of its own (Sqrt, Abs, Neg, Max / Min of two, Floor, Ceil,
    // Round, Reciprocal: the reference's element-by-element loop in double, Sqrt 21x onnxruntime's time, Max
    // 7x, Round 5x) is a program of one instruction.
    const bool lone = scaled_hard_sigmoid(root) || [&] {
      for (const char* op :
           {"Sqrt", "Abs", "Neg", "Max", "Min", "Floor", "Ceil", "Round", "Reciprocal", "ThresholdedRelu"})
        if (is_onnx_op(root, op)) return true;
      return false;
    }();
    if (group.size() < 2 && !lone) continue;
    Group gr{root, {group.begin(), group.end()}};
    std::sort(gr.nodes.begin(), gr.nodes.end(),
              [&](const ir::Node* a, const ir::Node* b) { return position[a] < position[b]; });
    taken.insert(group.begin(), group.end());
    groups.push_back(std::move(gr));
  }

  for (Group& gr : groups) {
    std::set<ir::Node*> members(gr.nodes.begin(), gr.nodes.end());
    std::vector<ir::Value*> inputs;
    std::map<const ir::Value*, int64_t> operand;  // value -> input index (registers filled below)
    for (ir::Node* n : gr.nodes)
      for (ir::Value* v : n->inputs)
        if (!(v->producer && members.count(v->producer)) && !operand.count(v)) {
          operand[v] = int64_t(inputs.size());
          inputs.push_back(v);
        }
    std::map<const ir::Node*, int64_t> alpha_of;  // ThresholdedRelu -> its alpha's input
    for (ir::Node* n : gr.nodes)
      if (thresholded_relu(n)) {
        ir::Value* v = g.add_value(g.unique_name(n->name + "_alpha"));
        Tensor t(DType::f32, {});
        t.data<float>()[0] = float_attr(n, "alpha", 1.0f);
        v->type = ir::TypeInfo::tensor_of(t);
        v->initializer = t;
        alpha_of[n] = int64_t(inputs.size());
        inputs.push_back(v);
      }
    const int64_t n_in = int64_t(inputs.size());
    // Mul(x, Sigmoid(x)) whose Sigmoid feeds only it: the Mul becomes silu(x), the Sigmoid goes
    std::set<const ir::Node*> folded;
    std::map<const ir::Node*, ir::Value*> silu_of;
    for (ir::Node* n : gr.nodes) {
      if (!is_onnx_op(n, "Mul")) continue;
      for (int i = 0; i < 2; ++i) {
        ir::Value* s = n->inputs[size_t(i)];
        ir::Value* x = n->inputs[size_t(1 - i)];
        if (s->producer && members.count(s->producer) && is_onnx_op(s->producer, "Sigmoid") &&
            s->producer->inputs[0] == x && s->uses.size() == 1 && !folded.count(s->producer)) {
          folded.insert(s->producer);
          silu_of[n] = x;
          break;
        }
      }
    }
    std::vector<int64_t> program;
    int64_t regs = 0;
    for (ir::Node* n : gr.nodes) {
      if (folded.count(n)) continue;
      if (silu_of.count(n)) {
        const int64_t dst = n == gr.root ? -1 : n_in + regs++;
        program.insert(program.end(), {int64_t(EwOp::silu), dst, operand.at(silu_of[n]), -1});
        if (n != gr.root) operand[n->outputs[0]] = dst;
        continue;
      }
      const bool thr = thresholded_relu(n);
      const EwOp op = thr                      ? EwOp::threshold
                      : scaled_hard_sigmoid(n) ? EwOp::hard_sigmoid_half
                                               : *ew_from_onnx(n->op_type);
      const bool last = n == gr.root;
      const int64_t dst = last ? -1 : n_in + regs++;
      program.insert(program.end(), {int64_t(op), dst, operand.at(n->inputs[0]),
                                     thr                 ? alpha_of.at(n)
                                     : ew_arity(op) == 2 ? operand.at(n->inputs[1])
                                                         : -1});
      if (!last) operand[n->outputs[0]] = dst;
    }
    ir::Value* out = gr.root->outputs[0];
    const std::string name = gr.root->name;
    for (ir::Node* n : gr.nodes) g.remove_node(n);
    ir::Node* f = g.add_node("FusedElementwise", name);
    f->domain = "tessera";
    f->opset = 1;
    set_attr_ints(f, "program", std::move(program));
    set_attr_int(f, "num_registers", regs);
    for (ir::Value* v : inputs) g.connect_input(f, v);
    g.connect_output(f, out);
  }
}

}  // namespace tessera::passes
