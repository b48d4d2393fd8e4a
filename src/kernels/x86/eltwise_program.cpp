#include "kernels/x86/eltwise_program.h"

#include <algorithm>
#include <cmath>

#include "core/memory.h"

namespace tessera::kernels::x86 {

namespace {

constexpr int64_t kBlock = 512;

bool as_binary(EwOp op, BinaryOp& b) {
  switch (op) {
    case EwOp::add:
      b = BinaryOp::add;
      return true;
    case EwOp::sub:
      b = BinaryOp::sub;
      return true;
    case EwOp::mul:
      b = BinaryOp::mul;
      return true;
    case EwOp::div:
      b = BinaryOp::div;
      return true;
    default:
      return false;
  }
}

bool as_unary(EwOp op, UnaryOp& u) {
  switch (op) {
    case EwOp::exp:
      u = UnaryOp::exp;
      return true;
    case EwOp::erf:
      u = UnaryOp::erf;
      return true;
    case EwOp::tanh:
      u = UnaryOp::tanh;
      return true;
    case EwOp::sigmoid:
      u = UnaryOp::sigmoid;
      return true;
    case EwOp::relu:
      u = UnaryOp::relu;
      return true;
    default:
      return false;
  }
}

}  // namespace

void ew_program_f32(const std::vector<EwInstr>& program, int64_t num_registers,
                    const std::vector<EwOperand>& inputs, float* y, int64_t outer, int64_t inner,
                    ThreadPool* pool) {
  if (outer <= 0 || inner <= 0) return;
  const EltwiseKernels& K = eltwise_kernels(eltwise_isa());
  const int64_t n_in = int64_t(inputs.size());
  const int64_t per_row = (inner + kBlock - 1) / kBlock;
  const int64_t blocks = outer * per_row;
  // ~16K floats per task: below that, threading costs more than it saves.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::min(inner, kBlock));
  parallel_for(pool, blocks, grain, [&](int64_t lo, int64_t hi) {
    thread_local AlignedScratch regs;
    float* const reg0 = regs.get(size_t(num_registers + 1) * size_t(kBlock));
    float* tmp = reg0 + size_t(num_registers) * size_t(kBlock);  // broadcast scratch
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t o = blk / per_row, i0 = (blk % per_row) * kBlock, n = std::min(kBlock, inner - i0);
      auto operand = [&](int32_t k, int64_t& stride) -> const float* {
        if (k >= n_in) {
          stride = 1;
          return reg0 + size_t(k - n_in) * size_t(kBlock);
        }
        const EwOperand& in = inputs[size_t(k)];
        switch (in.kind) {
          case Bcast::full:
            stride = 1;
            return in.data + o * inner + i0;
          case Bcast::row:
            stride = 1;
            return in.data + i0;
          case Bcast::col:
            stride = 0;
            return in.data + o;
          case Bcast::scalar:
            stride = 0;
            return in.data;
        }
        return nullptr;
      };
      for (const EwInstr& ins : program) {
        float* dst = ins.dst < 0 ? y + o * inner + i0 : reg0 + size_t(ins.dst - n_in) * size_t(kBlock);
        int64_t sa = 1, sb = 1;
        const float* a = operand(ins.a, sa);
        BinaryOp bop;
        UnaryOp uop;
        if (as_binary(ins.op, bop)) {
          const float* b = operand(ins.b, sb);
          K.binary(bop, a, sa, b, sb, dst, n);
          continue;
        }
        if (sa == 0) {
          std::fill(tmp, tmp + n, *a);
          a = tmp;
        }
        if (as_unary(ins.op, uop)) {
          K.unary(uop, a, dst, n);
        } else {
          for (int64_t i = 0; i < n; ++i) dst[i] = ew_apply(ins.op, a[i], 0.0f);
        }
      }
    }
  });
}

}  // namespace tessera::kernels::x86
