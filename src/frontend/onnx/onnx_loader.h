// ONNX protobuf -> IR. The only place in Tessera where ONNX names, type codes
// and opset versions appear: the loader canonicalizes every node to its
// newest-opset form (attributes that later became inputs become constant
// inputs) and records the imported opset on each node.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace tessera::frontend::onnx {

// What to do with a *skeleton* initializer: one that holds no data and whose
// doc_string starts with "skeleton:" (see /work/shared/models/README.md; the
// rest of the doc_string is JSON {"mean": m, "std": s}).
enum class SkeletonPolicy : uint8_t {
  refuse,  // default: an Error (invalid_model) naming the initializer
  zeros,   // fill with zeros in the declared dtype and dims
  fill,    // call LoadOptions::skeleton_fill
};

struct LoadOptions {
  // Folder that external-data paths are resolved against (and confined to).
  // Defaults to the model file's folder; loading from bytes without it refuses
  // external data.
  std::string external_data_dir;

  SkeletonPolicy skeletons = SkeletonPolicy::refuse;
  // For SkeletonPolicy::fill: returns the tensor for initializer `name`; it must
  // have the given dtype and shape. `doc` is the text after "skeleton:".
  std::function<Tensor(const std::string& name, DType dtype, const Shape& shape, std::string_view doc)>
      skeleton_fill;

  // Rewrite every node to its newest-opset form (see onnx_canonicalize.cpp).
  // Only tests turn this off.
  bool canonicalize = true;

  // A sparse initializer densifies into at most this many bytes.
  int64_t max_sparse_dense_bytes = int64_t(4) << 30;
};

// Throws tessera::Error (invalid_model, unsupported, io) with a clear message.
ir::Model load_file(const std::string& path, const LoadOptions& opts = {});
ir::Model load_bytes(std::span<const uint8_t> bytes, const LoadOptions& opts = {});

// For the node-test runner: the input_*.pb / output_*.pb files of ONNX's node
// tests. A serialized TensorProto (no external data).
Tensor load_tensor(std::span<const uint8_t> tensorproto_bytes);

// Which message a serialized value is.
enum class ValueKind : uint8_t {
  tensor,    // TensorProto
  sequence,  // SequenceProto (of tensors)
  optional,  // OptionalProto (of a tensor or a sequence of tensors)
};
// A present optional comes back as its content (tensor or sequence); an empty
// one as DataValue::Kind::optional_none.
DataValue load_value(std::span<const uint8_t> bytes, ValueKind kind);

// Maps an ONNX TensorProto.DataType code to a DType (undefined if unknown) and back (0 if none).
DType dtype_from_onnx(int32_t onnx_type);
int32_t dtype_to_onnx(DType t);

}  // namespace tessera::frontend::onnx
