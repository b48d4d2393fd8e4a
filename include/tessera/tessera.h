// Tessera's public C++ API: load an ONNX model into a Session and run it.
//
//   tessera::Session s("model.onnx", {.threads = 2});
//   auto outs = s.run({{"input", tensor}});          // all outputs, in graph order
//
// Tensors are tessera::Tensor (src/core/tensor.h); errors are tessera::Error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace tessera {

struct SessionOptions {
  int threads = 0;              // 0: one per core
  int optimization_level = 99;  // 0: run the graph as imported; >0: run the graph passes
  bool enable_profiling = false;
  std::string profile_path;  // Chrome trace written when the session ends (if profiling)
  std::string backend = "cpu";
  // Runs flush denormals to zero (x86 FTZ + DAZ, core/float_mode.h): a denormal costs Intel cores a
  // microcode assist per instruction; values under 1.2e-38 read and are written as zero. The environment's
  // TESSERA_FLUSH_DENORMALS=0 turns it off for every session.
  bool flush_denormals = true;
};

// Static description of a graph input or output.
struct ValueInfo {
  std::string name;
  std::string type;  // ONNX-style: "tensor(float)", "seq(tensor(float))"
  DType dtype = DType::undefined;
  std::vector<int64_t> shape;          // -1 for unknown dims
  std::vector<std::string> dim_names;  // symbol per dim ("" when fixed or anonymous)
  bool has_shape = false;              // false: rank unknown
};

class SessionImpl;

class Session {
 public:
  Session(const std::string& model_path, const SessionOptions& opts = {});
  Session(std::span<const uint8_t> model_bytes, const SessionOptions& opts = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  // Wraps an implementation built by the runtime (runtime::make_session).
  explicit Session(std::unique_ptr<SessionImpl> impl);

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;

  // Runs the model. `output_names` empty: all outputs. Safe to call from many
  // threads at once.
  std::vector<DataValue> run(const std::map<std::string, DataValue>& feeds,
                             const std::vector<std::string>& output_names = {}) const;

  // Bytes of intermediate buffers at the peak of the last planned run.
  size_t peak_memory_bytes() const;
  // The graph as text after import (and after the optimization passes).
  std::string graph_text() const;
  // With SessionOptions::enable_profiling: writes the Chrome trace of the runs so far to profile_path
  // (default tessera_profile.json), stops profiling and returns the path, as onnxruntime's does; ""
  // otherwise.
  std::string end_profiling();

  // The runtime's side (src/runtime/session_impl.h), for tests and tools.
  const SessionImpl& impl() const { return *impl_; }

 private:
  std::unique_ptr<SessionImpl> impl_;
};

std::string version();
// The instruction sets the CPU kernels are chosen for on this machine, e.g. "avx2 fma f16c" (TESSERA_ISA=avx2
// or portable narrows it), with "fma512-full" where 512-bit FMAs run at full width (TESSERA_FMA512 forces
// it).
std::string kernel_isa();

}  // namespace tessera
