// Elementwise programs: what tessera.FusedElementwise runs. A chain (or small
// DAG) of f32 elementwise ops collapsed by passes/fuse_elementwise into one
// node; its kernels evaluate the program block by block so intermediates stay
// in L1 instead of each op streaming the whole tensor through memory.
//
// Encoding (node attribute `program`, ints): 4 per instruction
//   [op code, dst, a, b]   (b = -1 for unary ops)
// Operand k < number of node inputs names input k (broadcast to the output
// shape, numpy rules); k >= that names register k - inputs. The last
// instruction's result is the output. Ops: core/ew_program.def.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace tessera {

enum class EwOp : uint8_t {
#define EW_OP(name, arity, onnx) name,
#include "core/ew_program.def"
#undef EW_OP
};

struct EwInstr {
  EwOp op;
  int32_t dst, a, b;
};

constexpr int ew_arity(EwOp op) {
  switch (op) {
#define EW_OP(name, arity, onnx) \
  case EwOp::name:               \
    return arity;
#include "core/ew_program.def"
#undef EW_OP
  }
  return 0;
}

constexpr const char* ew_onnx_op(EwOp op) {
  switch (op) {
#define EW_OP(name, arity, onnx) \
  case EwOp::name:               \
    return onnx;
#include "core/ew_program.def"
#undef EW_OP
  }
  return "";
}

inline std::optional<EwOp> ew_from_onnx(std::string_view op_type) {
  if (op_type.empty()) return std::nullopt;
#define EW_OP(name, arity, onnx) \
  if (op_type == onnx) return EwOp::name;
#include "core/ew_program.def"
#undef EW_OP
  return std::nullopt;
}

// The scalar meaning of each instruction, in float as the unfused ops compute.
inline float ew_apply(EwOp op, float a, float b) {
  switch (op) {
    case EwOp::add:
      return a + b;
    case EwOp::sub:
      return a - b;
    case EwOp::mul:
      return a * b;
    case EwOp::div:
      return a / b;
    case EwOp::exp:
      return std::exp(a);
    case EwOp::erf:
      return std::erf(a);
    case EwOp::tanh:
      return std::tanh(a);
    case EwOp::sigmoid:
      return 1.0f / (1.0f + std::exp(-a));
    case EwOp::relu:
      return a > 0 ? a : (a == a ? 0.0f : a);
    case EwOp::neg:
      return -a;
    case EwOp::sqrt:
      return std::sqrt(a);
    case EwOp::abs:
      return std::fabs(a);
    case EwOp::hardswish:
      return a * std::max(0.0f, std::min(1.0f, a / 6.0f + 0.5f));
    case EwOp::silu: {  // x * sigmoid(x), the sigmoid as the unfused op computes it
      const float s = 1.0f / (1.0f + std::exp(-a));
      return a * s;
    }
    case EwOp::max:
      return a != a || b != b ? std::numeric_limits<float>::quiet_NaN() : a < b ? b : a;
    case EwOp::min:
      return a != a || b != b ? std::numeric_limits<float>::quiet_NaN() : b < a ? b : a;
    case EwOp::floor:
      return std::floor(a);
    case EwOp::ceil:
      return std::ceil(a);
    case EwOp::round:
      return std::nearbyint(a);
    case EwOp::reciprocal:
      return 1.0f / a;
    case EwOp::log:  // (in double, as the reference kernels: correctly rounded in practice)
      return float(std::log(double(a)));
    case EwOp::sin:
      return float(std::sin(double(a)));
    case EwOp::cos:
      return float(std::cos(double(a)));
    case EwOp::softplus: {  // log(1 + e^a) without overflow, as the reference's
      const double x = a;
      return float(x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)));
    }
    case EwOp::pow:
      return std::pow(a, b);
    case EwOp::threshold:
      return a > b ? a : 0.0f;
    case EwOp::hard_sigmoid_half: {
      const float v = std::fma(a, b, 0.5f);
      return v > 1.0f ? 1.0f : v < 0.0f ? 0.0f : v;
    }
  }
  return 0;
}

// Decodes and validates a program for `num_inputs` inputs and `num_registers`
// registers; nullopt if malformed (bad op code, operand out of range, a
// register read before it is written, writes to an input).
std::optional<std::vector<EwInstr>> ew_decode(const std::vector<int64_t>& program, int64_t num_inputs,
                                              int64_t num_registers);

}  // namespace tessera
