// Evaluates tessera.FusedElementwise programs (core/ew_program.h) with the
// vectorized row kernels of eltwise.h: the output, viewed as [outer, inner], is
// cut into blocks of up to 512 floats; each block runs the whole program with
// its intermediates in per-thread registers (2 KiB each, L1-resident), so a
// chain of k ops reads its inputs and writes its output once instead of k times.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ew_program.h"
#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

struct EwOperand {
  const float* data;
  Bcast kind;  // how it is indexed over [outer, inner] (eltwise.h)
};

void ew_program_f32(const std::vector<EwInstr>& program, int64_t num_registers,
                    const std::vector<EwOperand>& inputs, float* y, int64_t outer, int64_t inner,
                    ThreadPool* pool);

}  // namespace tessera::kernels::x86
