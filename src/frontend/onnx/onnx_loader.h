// ONNX protobuf -> IR. The only place in Tessera where ONNX names, type codes
// and opset versions appear: the loader canonicalizes every node to its
// newest-opset form (attributes that later became inputs become constant
// inputs) and records the imported opset on each node.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ir/graph.h"

namespace tessera::frontend::onnx {

struct LoadOptions {
  // Folder that external-data paths are resolved against (and confined to).
  // Defaults to the model file's folder; loading from bytes without it refuses
  // external data.
  std::string external_data_dir;
};

// Throws tessera::Error (invalid_model, unsupported, io) with a clear message.
ir::Model load_file(const std::string& path, const LoadOptions& opts = {});
ir::Model load_bytes(std::span<const uint8_t> bytes, const LoadOptions& opts = {});

}  // namespace tessera::frontend::onnx
