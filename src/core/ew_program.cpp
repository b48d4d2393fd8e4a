#include "core/ew_program.h"

namespace tessera {

std::optional<std::vector<EwInstr>> ew_decode(const std::vector<int64_t>& program, int64_t num_inputs,
                                              int64_t num_registers) {
  constexpr int64_t kNumOps = 0
#define EW_OP(name, arity, onnx) +1
#include "core/ew_program.def"
#undef EW_OP
      ;
  if (program.empty() || program.size() % 4 != 0 || num_inputs < 0 || num_registers < 0 ||
      num_registers > 4096)
    return std::nullopt;
  std::vector<bool> written(size_t(num_registers), false);
  std::vector<EwInstr> out;
  const int64_t total = num_inputs + num_registers;
  auto readable = [&](int64_t k) {
    return k >= 0 && k < total && (k < num_inputs || written[size_t(k - num_inputs)]);
  };
  for (size_t i = 0; i < program.size(); i += 4) {
    const int64_t op = program[i], dst = program[i + 1], a = program[i + 2], b = program[i + 3];
    if (op < 0 || op >= kNumOps) return std::nullopt;
    const EwOp e = EwOp(op);
    const bool last = i + 4 == program.size();
    // The last instruction writes the output (dst -1); others write a register.
    if (last ? dst != -1 : (dst < num_inputs || dst >= total)) return std::nullopt;
    if (!readable(a) || (ew_arity(e) == 2 ? !readable(b) : b != -1)) return std::nullopt;
    if (!last) written[size_t(dst - num_inputs)] = true;
    out.push_back({e, int32_t(dst), int32_t(a), int32_t(b)});
  }
  return out;
}

}  // namespace tessera
