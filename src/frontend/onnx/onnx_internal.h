// Pieces of the ONNX frontend shared between its files (and its unit tests).
// Not part of the public API.
#pragma once

#include <string>

#include "frontend/onnx/onnx_loader.h"
#include "tessera_onnx.pb.h"

namespace tessera::frontend::onnx::detail {

// Where tensor bytes may come from.
struct TensorSource {
  // Folder external data is confined to; empty: external data is refused.
  std::string external_dir;
  const LoadOptions* opts = nullptr;  // may be null (defaults)
  // The caller owns the proto and decodes each tensor once: large raw_data is
  // moved out of it and the Tensor shares that buffer (no copy, no fresh pages).
  bool adopt_raw_data = false;
};

// TensorProto -> Tensor (dense, contiguous, unpacked). `what` names the tensor in errors.
Tensor decode_tensor(const tessera_onnx::TensorProto& tp, const TensorSource& src);
// SparseTensorProto -> dense Tensor.
Tensor decode_sparse(const tessera_onnx::SparseTensorProto& sp, const TensorSource& src);
// TypeProto -> TypeInfo (map / sparse types are refused as unsupported).
ir::TypeInfo decode_type(const tessera_onnx::TypeProto& tp, const std::string& what);
// True if the initializer is a skeleton (no data, doc_string "skeleton:...").
bool is_skeleton(const tessera_onnx::TensorProto& tp);

// Rewrites every node of g (and its subgraphs) to its newest-opset form.
// Node::opset must already be set.
void canonicalize(ir::Graph& g);

// Expands onnxruntime's quantized contrib ops (com.microsoft QLinearAdd, QLinearSigmoid, QGemm ...) into
// the ONNX QDQ nodes that define them (onnx_contrib_quant.cpp).
void expand_contrib_quant(ir::Graph& g);

}  // namespace tessera::frontend::onnx::detail
