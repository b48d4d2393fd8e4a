// pack_qmatmul: MatMulInteger and QLinearMatMul by a constant 2-D B (a dynamically or statically quantized
// transformer's weights; fuse_qdq's QLinearMatMul) become tessera.MatMulIntegerPacked /
// QLinearMatMulPacked, B packed here once into the int8 kernels' panels (kernels/x86/qgemm.h: QConvPackedW
// over B's columns) with its column sums. Unpacked, every run packed B again: a decoder's one-row GEMMs
// spent 3-4x onnxruntime's time doing it. It takes weights whose zero point is 0 once flipped to s8 (s8 with
// zero point 0, u8 with 128: what the quantizers write for weights); others keep packing per run.
#include "core/dtype_attr.h"
#include "kernels/x86/qgemm.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "passes/qlinear_util.h"

namespace tessera::passes {

namespace {

void pack_one(ir::Graph& g, ir::Node* n, PackQueue& packs) {
  const bool qlinear = is_onnx_op(n, "QLinearMatMul");
  if (!(qlinear || is_onnx_op(n, "MatMulInteger")) || n->outputs.size() != 1) return;
  const size_t bi = qlinear ? 3 : 1, zi = qlinear ? 5 : 3;
  if (n->inputs.size() <= bi || !is_constant(g, n->inputs[bi])) return;
  ir::Value* bv = n->inputs[bi];
  const Tensor& b = *bv->initializer;
  if (b.rank() != 2 || (b.dtype() != DType::u8 && b.dtype() != DType::i8) || b.dim(0) < 1 || b.dim(1) < 1)
    return;
  if (!zero_after_flip(g, n->inputs.size() > zi ? n->inputs[zi] : nullptr, b.dtype())) return;
  const int64_t k = b.dim(0), nn = b.dim(1);
  using kernels::x86::QConvPackedW;
  const Tensor bc = b.contiguous();
  // (pack_matmul writes every byte: zeroing first cost as much again in page faults and stores)
  Tensor pt = Tensor::uninitialized(DType::u8, {int64_t(QConvPackedW::bytes(nn, k, 1, 1))});
  packs.add(bc.nbytes(), [bc, pt, k, nn]() mutable {
    QConvPackedW::pack_matmul(bc.raw_data(), bc.dtype() == DType::i8, k, nn, pt.data<uint8_t>());
  });
  ir::Node* f = replace_with_packed(g, n, qlinear ? "QLinearMatMulPacked" : "MatMulIntegerPacked", bi, pt);
  set_attr_int(f, "K", k);
  set_attr_int(f, "N", nn);
  set_attr_int(f, "w_type", b.dtype() == DType::u8 ? 2 : 3);  // ONNX's type codes
}

}  // namespace

void pack_qmatmul(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  PackQueue packs;  // (passes/pack_queue.h)
  for (ir::Node* n : nodes) pack_one(g, n, packs);
  packs.flush();
  g.remove_unused_values();
}

}  // namespace tessera::passes
