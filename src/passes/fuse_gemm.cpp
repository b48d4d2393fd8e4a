// fuse_gemm: MatMul / Gemm by a constant f32 matrix becomes tessera.FusedGemm,
// with the weights packed once here (session creation) into the micro-kernel's
// panel layout, and a following bias Add, residual Add and activation folded
// into its epilogue.
//   MatMul(A, W) [-> Add(., b)] [-> Add(., R)] [-> Relu | Clip | Gelu]
//     A: [..., K], W: [K, N] constant, b: [N] constant, R: the output's shape (a transformer's
//     residual stream)
//   Gemm(A, B, C; transA=0, transB, alpha, beta) [-> Add(., R)] [-> act]   C constant [N] / [1, N] / scalar
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemm_amx.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

struct Match {
  ir::Node* root = nullptr;
  std::vector<ir::Node*> absorbed;
  ir::Value* a = nullptr;
  ir::Value* out = nullptr;
  Tensor weights;  // K x N row-major (N x K when trans_b), alpha applied
  bool trans_b = false;
  int64_t k = 0, n = 0;
  std::optional<Tensor> bias;
  ir::Value* residual = nullptr;
  std::optional<FusedActivation> act;
  bool a_rank2 = false;  // from Gemm: A must be 2-D at run time
};

Tensor bias_vector(const Tensor& c, int64_t n, float beta) {
  Tensor b(DType::f32, {n});
  for (int64_t j = 0; j < n; ++j) b.data<float>()[j] = beta * c.data<float>()[c.numel() == 1 ? 0 : j];
  return b;
}

bool match_root(const ir::Graph& g, ir::Node* n, Match& m) {
  if (n->inputs.size() < 2 || !is_f32(n->inputs[0]) || !n->inputs[1] || !is_constant(g, n->inputs[1]))
    return false;
  const Tensor& w = *n->inputs[1]->initializer;
  if (w.dtype() != DType::f32 || w.rank() != 2) return false;
  // A of unknown rank is fine for MatMul: FusedGemm keeps A's leading dims
  // (a 1-D A gives [N], as MatMul does).
  const auto& ashape = n->inputs[0]->type.shape;
  if (ashape && ashape->empty()) return false;
  if (is_onnx_op(n, "MatMul")) {
    m.weights = w.contiguous();
    m.k = w.dim(0), m.n = w.dim(1);
  } else if (is_onnx_op(n, "Gemm")) {
    const Attribute* ta = n->attr("transA");
    if (ta && ta->i != 0) return false;
    if (ashape && ashape->size() != 2) return false;  // unknown rank: FusedGemm checks rank 2 (a_rank)
    m.a_rank2 = true;
    const Attribute* tb = n->attr("transB");
    const Attribute* al = n->attr("alpha");
    const Attribute* be = n->attr("beta");
    const bool trans_b = tb && tb->i != 0;
    const float alpha = al ? al->f : 1.0f, beta = be ? be->f : 1.0f;
    const int64_t k = trans_b ? w.dim(1) : w.dim(0), nn = trans_b ? w.dim(0) : w.dim(1);
    m.k = k, m.n = nn;
    if (alpha == 1.0f) {
      m.weights = w.contiguous();  // packed straight from its own layout
      m.trans_b = trans_b;
    } else {
      const Tensor wc = w.contiguous();
      Tensor kn(DType::f32, {k, nn});
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < nn; ++j)
          kn.data<float>()[p * nn + j] = alpha * wc.data<float>()[trans_b ? j * k + p : p * nn + j];
      m.weights = kn;
    }
    if (n->inputs.size() > 2 && n->inputs[2]) {
      const ir::Value* c = n->inputs[2];
      if (!is_constant(g, c) || c->initializer->dtype() != DType::f32) return false;
      const Tensor& ct = *c->initializer;
      const bool row = ct.numel() == nn && (ct.rank() == 1 || (ct.rank() == 2 && ct.dim(0) == 1));
      if (!row && ct.numel() != 1) return false;
      m.bias = bias_vector(ct.contiguous(), nn, beta);
    }
  } else {
    return false;
  }
  m.root = n;
  m.a = n->inputs[0];
  m.out = n->outputs[0];
  return m.out != nullptr;
}

// The bias may be folded only when broadcasting it does not add dims to the output.
bool rank_at_least(const ir::Value* a, int64_t r) {
  return r <= 1 || (a->type.shape && int64_t(a->type.shape->size()) >= r);
}

// A residual is fused unless its shape provably differs from the product's (ranks known and different,
// or two known dims that differ): FusedGemm still broadcasts it, but only equal shapes take the epilogue.
bool residual_fits(const ir::Value* r, const ir::Value* out) {
  if (!r->type.shape || !out->type.shape) return true;
  if (r->type.shape->size() != out->type.shape->size()) return false;
  for (size_t i = 0; i < r->type.shape->size(); ++i) {
    const auto &x = (*r->type.shape)[i], &y = (*out->type.shape)[i];
    if (x.known() && y.known() && x.value != y.value) return false;
  }
  return true;
}

void absorb_epilogue(const ir::Graph& g, Match& m) {
  const int64_t n = m.n;
  ir::Node* c = sole_consumer(g, m.out);
  if (!m.bias && is_onnx_op(c, "Add")) {
    ir::Value* other = c->inputs[0] == m.out ? c->inputs[1] : c->inputs[0];
    if (other && is_constant(g, other) && other->initializer->dtype() == DType::f32 &&
        other->initializer->numel() == n && other->initializer->dim(-1) == n &&
        rank_at_least(m.a, other->initializer->rank())) {
      m.bias = other->initializer->contiguous().reshape({n});
      m.absorbed.push_back(c);
      m.out = c->outputs[0];
      c = sole_consumer(g, m.out);
    }
  }
  if (is_onnx_op(c, "Add") && c->inputs.size() == 2 && c->outputs.size() == 1) {
    ir::Value* other = c->inputs[0] == m.out ? c->inputs[1] : c->inputs[0];
    if (other && other != m.out && is_f32(other) && !is_constant(g, other) && residual_fits(other, m.out)) {
      m.residual = other;
      m.absorbed.push_back(c);
      m.out = c->outputs[0];
      c = sole_consumer(g, m.out);
    }
  }
  if (auto act = match_activation(c, m.out, /*gelu=*/true)) {
    m.act = *act;
    m.absorbed.push_back(c);
    m.out = c->outputs[0];
  } else if (auto [sig, mul] = match_silu(g, m.out); mul) {
    m.act = FusedActivation{"Silu"};
    m.absorbed.insert(m.absorbed.end(), {sig, mul});
    m.out = mul->outputs[0];
  }
}

// The fewest rows A (all dims but the last) can have: the product of its known dims, a symbolic one counted
// as 1 (ViT's [batch, 197, 768]: 197); 0 when its rank is unknown.
int64_t least_rows(const ir::Value* a) {
  if (!a->type.shape || a->type.shape->empty()) return 0;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < a->type.shape->size(); ++i)
    rows *= std::max<int64_t>((*a->type.shape)[i].value, 1);
  return rows;
}

// One level of Strassen-Winograd (kernels/x86/gemm.h, StrassenB) where A has rows enough for it to gain
// whatever its symbolic dims: 12.5% fewer FLOPs for 7/4 of the weights' memory.
bool use_strassen(const Match& m) {
  return strassen_enabled() && kernels::x86::StrassenB::worthwhile(least_rows(m.a), m.k, m.n);
}

// A of one row per batch item (all its dims but the last 1, at most one of them a named symbol: a decoder's
// step [batch, 1, K], a classifier's [batch, K]): at batch 1 a GEMV, which reads every weight from memory
// once. An unknown dim without a name is not taken for the batch: it may be anything (ViT-B/16's attention
// output reshaped to [197 * batch, 768] infers as [?, 768], and its coded weights were decoded on every
// run: those 12 GEMMs 7-10% slower than packed ones).
bool one_row_per_item(const ir::Value* a) {
  if (!a->type.shape || a->type.shape->empty()) return false;
  int symbols = 0;
  for (size_t i = 0; i + 1 < a->type.shape->size(); ++i) {
    const auto& d = (*a->type.shape)[i];
    if (!d.known() && d.symbol.empty()) return false;
    if (d.known() ? d.value != 1 : ++symbols > 1) return false;
  }
  return true;
}

// Coded weights (kernels/x86/gemm.h, CodedB) for those GEMVs, where the weights come from memory and code
// well: 12.5% fewer bytes to read. From memory: a run reads all of the model's weights, more than the
// last-level cache holds (MobileNetV2's 14 MB stay in a 32 MiB L3 from run to run, and there the decoding
// makes its classifier 12% slower; ResNet-18's 47 MB and GPT-2's do not). TESSERA_CODED=0 turns it off, =1
// codes whatever the model's size.
std::optional<kernels::x86::CodedB::Plan> coded_plan(const Match& m, size_t model_weight_bytes) {
  using kernels::x86::CodedB;
  const char* e = std::getenv("TESSERA_CODED");  // read per session: tests set it
  const std::string_view mode = e ? e : "";
  if (mode == "0" || !CodedB::available() || !one_row_per_item(m.a) || m.k * m.n < (int64_t(1) << 16) ||
      (mode != "1" && model_weight_bytes <= size_t(cpu_features().l3_bytes)))
    return std::nullopt;
  const CodedB::Plan plan = CodedB::plan(m.weights.data<float>(), m.trans_b ? m.k : m.n, m.trans_b, m.k, m.n);
  if (!CodedB::worthwhile(plan, m.k, m.n)) return std::nullopt;
  return plan;
}

// Whether A may have kSplitMinRows rows or more: every dim but the last known and multiplying to that many,
// or one of them unknown (a sequence length); not for a rank it cannot tell.
bool may_have_rows(const ir::Value* a, int64_t rows) {
  if (!a->type.shape || a->type.shape->empty()) return false;
  int64_t known = 1;
  for (size_t i = 0; i + 1 < a->type.shape->size(); ++i) {
    const auto& d = (*a->type.shape)[i];
    if (!d.known()) return true;
    known *= d.value;
  }
  return known >= rows;
}

// B also split for AMX's bf16 tiles (kernels/x86/gemm_amx.h: f32 accuracy, 1.2-1.4x the f32 kernel's speed
// from 16 rows on a Xeon with AMX), beside its f32 packing for fewer rows (a decoder's GEMVs): where the CPU
// has AMX, A may have rows enough, and B is finite. TESSERA_AMX=0 turns it off.
bool use_split(const Match& m) {
  return kernels::x86::amx_gemm_available() && m.k >= 32 && m.n >= kernels::x86::kSplitMinCols &&
         !one_row_per_item(m.a) && may_have_rows(m.a, kernels::x86::kSplitMinRows) &&
         kernels::x86::split_b_finite(m.weights.data<float>(), m.trans_b ? m.k : m.n, m.trans_b, m.k, m.n);
}

void rewrite(ir::Graph& g, Match& m, size_t model_weight_bytes, PackQueue& packs) {
  using kernels::x86::CodedB;
  using kernels::x86::PackedB;
  using kernels::x86::StrassenB;
  const int64_t k = m.k, n = m.n;
  const std::optional<CodedB::Plan> coded = coded_plan(m, model_weight_bytes);
  const bool split = !coded && use_split(m);
  const bool strassen = !coded && !split && use_strassen(m);
  const int64_t kc = coded ? coded->kc : strassen ? StrassenB::kc_for(k, n) : PackedB::kc_for(k, n);
  const size_t floats = strassen ? StrassenB::packed_floats(k, n, kc, PackedB::native_nr())
                                 : PackedB::packed_floats(k, n, kc, PackedB::native_nr()) +
                                       (split ? kernels::x86::split_b_floats(k, n) : 0);
  Tensor pt;
  {
    const HugePagesScope huge;  // a decoder's GEMMs stream the weights (core/memory.h)
    // packed in place: no second copy
    pt = coded ? Tensor::uninitialized(DType::u8, {int64_t(coded->bytes)})
               : Tensor::uninitialized(DType::f32, {int64_t(floats)});
  }
  packs.add(
      m.weights.nbytes(), [pt, coded, strassen, split, w = m.weights, trans_b = m.trans_b, k, n]() mutable {
        const float* b = w.data<float>();
        const int64_t ldb = trans_b ? k : n;
        if (coded)
          CodedB::pack_into(pt.data<uint8_t>(), *coded, b, ldb, trans_b, k, n);
        else if (strassen)
          StrassenB::pack_into(pt.data<float>(), b, ldb, trans_b, k, n);
        else
          PackedB::pack_into(pt.data<float>(), b, ldb, trans_b, k, n);
        if (split)
          kernels::x86::split_b_into(
              pt.data<float>() + PackedB::packed_floats(k, n, PackedB::kc_for(k, n), PackedB::native_nr()), b,
              ldb, trans_b, k, n);
        advise_huge_pages(pt.raw_data(), pt.nbytes());
      });
  ir::Value* pv = g.add_value(g.unique_name(m.root->inputs[1]->name + "_packed"));
  pv->initializer = pt;
  pv->type = ir::TypeInfo::tensor_of(pt);
  ir::Value* bv = nullptr;
  if (m.bias) {
    bv = g.add_value(g.unique_name(m.root->name + "_bias"));
    bv->initializer = *m.bias;
    bv->type = ir::TypeInfo::tensor_of(*m.bias);
  }
  ir::Value* a = m.a;
  ir::Value* out = m.out;
  const std::string name = m.root->name;
  for (ir::Node* x : m.absorbed) g.remove_node(x);
  g.remove_node(m.root);
  ir::Node* f = add_fused_gemm(g, name, k, n, kc, PackedB::native_nr(), strassen, coded.has_value(), split);
  if (m.a_rank2) set_attr_int(f, "a_rank", 2);
  if (m.act) set_activation_attrs(f, *m.act);
  g.connect_input(f, a);
  g.connect_input(f, pv);
  if (bv || m.residual) g.connect_input(f, bv);  // an absent bias is an empty input
  if (m.residual) g.connect_input(f, m.residual);
  g.connect_output(f, out);
}

}  // namespace

void fuse_gemm(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::vector<Match> matches;
  std::vector<const ir::Node*> taken;
  for (ir::Node* n : nodes) {
    if (std::find(taken.begin(), taken.end(), n) != taken.end()) continue;
    Match m;
    if (!match_root(g, n, m)) continue;
    absorb_epilogue(g, m);
    taken.insert(taken.end(), m.absorbed.begin(), m.absorbed.end());
    matches.push_back(std::move(m));
  }
  // the model's constant data (before any is packed): a run reads most of it (an embedding table, one row)
  size_t weight_bytes = 0;
  for (const auto& v : g.values())
    if (v->initializer) weight_bytes += v->initializer->nbytes();
  PackQueue packs;
  for (Match& m : matches) {
    ir::Value* w = m.root->inputs[1];
    rewrite(g, m, weight_bytes, packs);
    // Let go of each original weight here: its packing job holds it until it has run (peak memory: a batch
    // of the queue's, not all).
    m.weights = Tensor();
    if (w->uses.empty() && w->initializer && !is_graph_output(g, w)) w->initializer.reset();
  }
  packs.flush();
  g.remove_unused_values();
}

}  // namespace tessera::passes
