// The functional simulator: runs an NPU program on memory images, bit-exactly (docs/npu-isa.md,
// "Numerics"). Queues are interleaved in program order wherever semaphores allow, which for a
// correctly synchronized program gives the same result as any other legal interleaving.
#pragma once

#include <cstdint>
#include <vector>

#include "npu/arch/arch_config.h"
#include "npu/isa/isa.h"

namespace tessera::npu {

inline constexpr int kNumSemaphores = 32;

struct WeightSlot {
  std::vector<uint8_t> data;  // R x C elements, row-major, of dtype
  uint32_t rows = 0, cols = 0;
  NDType dtype = NDType::i8;
  bool loaded = false;
};

class Machine {
 public:
  // hbm_size: bytes of HBM to model (the arch's hbm_bytes at most).
  Machine(const ArchConfig& arch, size_t hbm_size);

  std::vector<uint8_t>& hbm() { return hbm_; }
  std::vector<uint8_t>& ub() { return ub_; }
  std::vector<uint32_t>& acc() { return acc_; }
  const ArchConfig& arch() const { return arch_; }

  struct RunStats {
    int64_t instructions = 0;
    int64_t macs = 0;
  };
  // Throws tessera::Error naming the instruction ("#index MNEMONIC") on any fault or deadlock.
  RunStats run(const Program& p);

 private:
  void exec(const Program& p, size_t idx);
  ArchConfig arch_;
  std::vector<uint8_t> hbm_, ub_;
  std::vector<uint32_t> acc_;
  std::vector<WeightSlot> slots_;
  int sem_[kNumSemaphores] = {};
  RunStats stats_;
};

// Element conversions used by the simulator (documented in docs/npu-isa.md).
double load_elem(const uint8_t* p, NDType t);
void store_elem(uint8_t* p, NDType t, double v);

}  // namespace tessera::npu
