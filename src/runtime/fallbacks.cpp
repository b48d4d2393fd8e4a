// Weak stand-ins for functions other layers define, so the runtime links while
// they are being written. A strong definition anywhere in the link wins.
#include "frontend/onnx/onnx_loader.h"
#include "runtime/verifier_decl.h"

namespace tessera {

#if !TESSERA_HAVE_IR_VERIFIER
namespace ir {
__attribute__((weak)) void verify(const Graph& g) { (void)g; }
}  // namespace ir
#endif

namespace frontend::onnx {
__attribute__((weak)) ir::Model load_file(const std::string& path, const LoadOptions& opts) {
  (void)opts;
  throw Error(ErrorCode::unsupported, cat("cannot load '", path, "': the ONNX frontend is not built in"));
}
__attribute__((weak)) ir::Model load_bytes(std::span<const uint8_t> bytes, const LoadOptions& opts) {
  (void)bytes;
  (void)opts;
  throw Error(ErrorCode::unsupported, "cannot load a model: the ONNX frontend is not built in");
}
}  // namespace frontend::onnx

}  // namespace tessera
