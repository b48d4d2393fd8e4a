// pack_recurrent: an LSTM or GRU whose W and R are constants becomes tessera.PackedRecurrent, the two packed
// once here as GEMM panels (kernels/x86/gemm.h, PackedB) per direction: W_d^T for the input products of all
// steps, R_d^T for each step's GEMV. Read in place, W was packed again on every run by the GEMM (a strided
// transpose of 8 MB a direction for a 512-wide layer: the tagger's input GEMMs 70 against 103 GFLOP/s) and
// R per run by the kernel. Inputs, outputs and the other attributes stay the ONNX op's, so the reference
// kernel (weights read back) and the tuned one (kernels/x86/rnn.h) take whatever the ONNX op takes.
#include "kernels/x86/gemm.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

// Per direction, op(w_d) (k x n: w_d is n x k, transposed) packed: dirs blocks of PackedB's floats.
ir::Value* packed_value(ir::Graph& g, const ir::Value* w, int64_t dirs, int64_t n, int64_t k, int64_t kc,
                        PackQueue& packs) {
  using kernels::x86::PackedB;
  const size_t per = PackedB::packed_floats(k, n, kc, PackedB::native_nr());
  // (on ordinary pages: huge pages made a tagger's session creation 26 ms slower and its runs no faster)
  Tensor pt = Tensor::uninitialized(DType::f32, {int64_t(per) * dirs});
  const Tensor src = w->initializer->contiguous();
  packs.add(src.nbytes(), [pt, src, dirs, per, n, k]() mutable {
    for (int64_t d = 0; d < dirs; ++d)
      PackedB::pack_into(pt.data<float>() + size_t(d) * per, src.data<float>() + d * n * k, k, true, k, n);
  });
  ir::Value* v = g.add_value(g.unique_name(w->name + "_packed"));
  v->initializer = pt;
  v->type = ir::TypeInfo::tensor_of(pt);
  return v;
}

}  // namespace

void pack_recurrent(ir::Graph& g) {
  using kernels::x86::PackedB;
  bool any = false;
  PackQueue packs;  // (passes/pack_queue.h)
  for (const auto& up : g.nodes()) {
    ir::Node* n = up.get();
    const bool lstm = is_onnx_op(n, "LSTM");
    if (!(lstm || is_onnx_op(n, "GRU")) || n->inputs.size() < 3) continue;
    ir::Value* w = n->inputs[1];
    ir::Value* r = n->inputs[2];
    if (!is_constant(g, w) || !is_constant(g, r) || !is_f32(w) || !is_f32(r)) continue;
    const Shape& ws = w->initializer->shape();
    const Shape& rs = r->initializer->shape();
    const int64_t gates = lstm ? 4 : 3;
    const int64_t dirs = string_attr(n, "direction", "forward") == "bidirectional" ? 2 : 1;
    if (ws.size() != 3 || rs.size() != 3 || ws[0] != dirs || ws[1] % gates != 0 || ws[1] == 0 || ws[2] == 0)
      continue;
    const int64_t gh = ws[1], hidden = gh / gates, input = ws[2];
    if (rs != Shape{dirs, gh, hidden} || int_attr(n, "hidden_size", hidden) != hidden) continue;
    const int64_t kc_w = PackedB::kc_for(input, gh), kc_r = PackedB::kc_for(hidden, gh);
    g.set_input(n, 1, packed_value(g, w, dirs, gh, input, kc_w, packs));
    g.set_input(n, 2, packed_value(g, r, dirs, gh, hidden, kc_r, packs));
    n->attrs["cell"] = Attribute::of_string(lstm ? "LSTM" : "GRU");
    set_attr_int(n, "hidden_size", hidden);
    set_attr_int(n, "input_size", input);
    set_attr_int(n, "kc_w", kc_w);
    set_attr_int(n, "kc_r", kc_r);
    set_attr_int(n, "nr", PackedB::native_nr());
    n->op_type = "PackedRecurrent";
    n->domain = "tessera";
    n->opset = 1;
    any = true;
  }
  packs.flush();
  if (any) g.remove_unused_values();
}

}  // namespace tessera::passes
