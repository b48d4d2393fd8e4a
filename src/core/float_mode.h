// The floating-point mode kernels run in: denormals flushed (x86 MXCSR FTZ + DAZ) or kept.
//
// A denormal operand or result costs a microcode assist on Intel cores (~100+ cycles an instruction where
// AMD's take it in stride): an EfficientNetV2 whose squeeze-excitation gates reach 1e-39 ran 2.3x slower on
// the Xeon VM (208 -> 89 ms with them flushed). Sessions flush by default (SessionOptions::flush_denormals,
// as onnxruntime's session.set_denormal_as_zero and OpenVINO's denormals optimization can); values below
// 1.2e-38 in magnitude read and are written as zero, nothing else changes.
#pragma once

#include <cstdint>

namespace tessera {

// The calling thread's floating-point control word (MXCSR on x86; 0 elsewhere) and setting it.
uint32_t float_mode();
void set_float_mode(uint32_t mode);

// Flushes denormals on this thread while it lives (when `on`), then restores the mode it found.
class FlushDenormalsScope {
 public:
  explicit FlushDenormalsScope(bool on);
  ~FlushDenormalsScope();
  FlushDenormalsScope(const FlushDenormalsScope&) = delete;
  FlushDenormalsScope& operator=(const FlushDenormalsScope&) = delete;

 private:
  uint32_t saved_;
  bool on_;
};

}  // namespace tessera
