// libFuzzer target: arbitrary bytes through the ONNX loader (and the verifier
// on whatever loads). Any tessera::Error is an accepted outcome; a crash, a
// sanitizer report, a hang or an allocation past the limit is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "frontend/onnx/onnx_loader.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ox = tessera::frontend::onnx;
  const std::span<const uint8_t> bytes(data, size);
  ox::LoadOptions opts;
  opts.max_sparse_dense_bytes = int64_t(64) << 20;  // stay far below libFuzzer's RSS limit
  try {
    tessera::ir::Model m = ox::load_bytes(bytes, opts);
    tessera::ir::verify(*m.graph);
  } catch (const tessera::Error&) {
  }
  try {
    (void)ox::load_tensor(bytes);
  } catch (const tessera::Error&) {
  }
  return 0;
}
