// What the int8 packing passes (pack_qconv, pack_qmatmul) share.
#pragma once

#include <string>

#include "passes/rewrite_util.h"

namespace tessera::passes {

// A weights' zero point the packed kernels take: constant, and 0 once the weights are flipped to s8 (s8
// weights with zero point 0, u8 with 128: what the quantizers write). Absent means 0 of the weights' type.
inline bool zero_after_flip(const ir::Graph& g, const ir::Value* zv, DType w_type) {
  const int32_t want = w_type == DType::u8 ? 128 : 0;
  if (!zv) return want == 0;
  if (!is_constant(g, zv) || zv->initializer->dtype() != w_type) return false;
  const Tensor z = zv->initializer->contiguous();
  for (int64_t i = 0; i < z.numel(); ++i) {
    const int32_t v = w_type == DType::u8 ? int32_t(z.data<uint8_t>()[i]) : int32_t(z.data<int8_t>()[i]);
    if (v != want) return false;
  }
  return true;
}

// Replaces n by tessera.<op> with n's inputs and output, input `wi` the packed weights (a new initializer);
// returns the new node for its attributes.
inline ir::Node* replace_with_packed(ir::Graph& g, ir::Node* n, const char* op, size_t wi,
                                     const Tensor& packed) {
  ir::Value* pv = g.add_value(g.unique_name(n->inputs[wi]->name + "_packed"));
  pv->initializer = packed;
  pv->type = ir::TypeInfo::tensor_of(packed);
  ir::Node* f = g.add_node(op, n->name);
  f->domain = "tessera";
  f->opset = 1;
  for (size_t i = 0; i < n->inputs.size(); ++i) g.connect_input(f, i == wi ? pv : n->inputs[i]);
  ir::Value* out = n->outputs[0];
  g.remove_node(n);
  g.connect_output(f, out);
  return f;
}

}  // namespace tessera::passes
