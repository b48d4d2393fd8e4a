// pack_qconv: a 2-D, group-1 QLinearConv (a QOperator model's, or fuse_qdq's) with constant weights becomes
// tessera.QLinearConvPacked, its weights packed here once (session creation) into the int8 kernels' panels
// (kernels/x86/qgemm.h, QConvPackedW) with their sums. Its kernel runs the conv as a transposed GEMM,
// output pixels by output channels, reading every tap of a pixel in place from a padded copy of the image:
// no im2col per run. It takes weights whose zero point is 0 once flipped to s8 (s8 weights with zero point
// 0, u8 with 128: what the quantizers write); others stay on the im2col kernel, which also stays better
// for stride-1 pointwise convs over large images (the input streamed as it lies) and for convs over at
// most 4 channels (the packed K pads the channels to 4: a 3-channel stem does a third more products).
#include "core/dtype_attr.h"
#include "kernels/x86/qgemm.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "passes/qlinear_util.h"

namespace tessera::passes {

namespace {

bool worth_packing(const ir::Node* n, const Tensor& w) {
  const int64_t c = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  if (c <= 4) return false;
  const auto st = ints_attr(n, "strides", {1, 1});
  if (kh * kw > 1 || st.size() != 2 || st[0] != 1 || st[1] != 1) return true;
  // pointwise, stride 1: pack small images (their rows fill the im2col GEMM's 64-wide columns badly) and
  // deep inputs; a shallow one over a large image streams it as it lies (no layout copy, no transposed
  // stores: those cost more than a 64-deep sum)
  const ir::Value* x = n->inputs[0];
  if (c >= 128 || !x->type.shape || x->type.shape->size() != 4) return true;
  const ir::Dim h = (*x->type.shape)[2], wd = (*x->type.shape)[3];
  return h.known() && wd.known() && h.value * wd.value < 256;
}

void pack_one(ir::Graph& g, ir::Node* n, PackQueue& packs) {
  if (!is_onnx_op(n, "QLinearConv") || n->inputs.size() < 8 || n->outputs.size() != 1 || !n->inputs[3])
    return;
  ir::Value* wv = n->inputs[3];
  if (!is_constant(g, wv)) return;
  const Tensor& w = *wv->initializer;
  if (w.rank() != 4 || (w.dtype() != DType::u8 && w.dtype() != DType::i8) || int_attr(n, "group", 1) != 1)
    return;
  const std::string auto_pad = string_attr(n, "auto_pad", "NOTSET");
  if (!auto_pad.empty() && auto_pad != "NOTSET") return;
  const auto ks = ints_attr(n, "kernel_shape", {w.dim(2), w.dim(3)});
  if (ks.size() != 2 || ks[0] != w.dim(2) || ks[1] != w.dim(3) || !worth_packing(n, w)) return;
  if (!zero_after_flip(g, n->inputs[5], w.dtype())) return;
  using kernels::x86::QConvPackedW;
  const Tensor wc = w.contiguous();
  Tensor pt(DType::u8, {int64_t(QConvPackedW::bytes(w.dim(0), w.dim(1), w.dim(2), w.dim(3)))});
  packs.add(wc.nbytes(), [wc, pt]() mutable {
    QConvPackedW::pack(wc.raw_data(), wc.dtype() == DType::i8, wc.dim(0), wc.dim(1), wc.dim(2), wc.dim(3),
                       pt.data<uint8_t>());
  });
  const AttrMap attrs = n->attrs;  // (n goes away below)
  ir::Node* f = replace_with_packed(g, n, "QLinearConvPacked", 3, pt);
  for (const char* a : {"strides", "dilations", "pads"})
    if (auto it = attrs.find(a); it != attrs.end()) f->attrs[a] = it->second;
  set_attr_ints(f, "kernel_shape", {w.dim(2), w.dim(3)});
  set_attr_int(f, "group", 1);
  set_attr_ints(f, "weight_shape", {w.dim(0), w.dim(1), w.dim(2), w.dim(3)});
  set_attr_int(f, "w_type", w.dtype() == DType::u8 ? 2 : 3);  // ONNX's type codes
}

}  // namespace

void pack_qconv(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  PackQueue packs;  // (passes/pack_queue.h)
  for (ir::Node* n : nodes) pack_one(g, n, packs);
  packs.flush();
  g.remove_unused_values();
}

}  // namespace tessera::passes
