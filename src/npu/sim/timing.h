// `detailed` timing mode: event-driven timing of a real NPU program at instruction granularity.
// Per-unit in-order queues ordered by semaphores; DMA engines sharing one HBM channel (bandwidth,
// latency, contention); the on-chip side limited by SRAM banks; weight slots shifted into the array
// while the previous tile computes (double buffering); systolic fill/drain; vector-unit throughput.
// Every cycle of the matrix unit is accounted as active or as a named stall (TPU-v1 paper categories).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "npu/arch/arch_config.h"
#include "npu/isa/isa.h"

namespace tessera::npu {

struct TimingResult {
  int64_t total_cycles = 0;
  // matrix unit: these sum to total_cycles
  int64_t array_active = 0;
  int64_t weight_stall = 0;  // waiting for a weight load (DMA.LOADW) to arrive
  int64_t weight_shift = 0;  // shifting a weight tile into the array, not hidden behind compute
  int64_t input_stall = 0;   // waiting for an activation load (DMA.LOAD)
  int64_t raw_stall = 0;     // waiting on a result of another unit (VPU, stores): read-after-write
  int64_t fill_drain = 0;    // systolic pipeline filling/draining with no new rows entering
  int64_t non_matrix = 0;    // nothing for the matrix unit to do
  // DMA engines and vector unit
  int64_t dma_busy = 0;       // summed over engines
  int64_t dma_wait = 0;       // DMA queue blocked on semaphores
  int64_t vpu_busy = 0;
  int64_t vpu_wait = 0;
  int64_t vpu_bank_conflict = 0;  // extra VPU cycles from operands in the same SRAM bank
  // traffic and work
  int64_t instructions = 0;
  int64_t macs = 0;
  int64_t hbm_bytes = 0;
  int64_t sram_bytes = 0;
  int64_t vpu_elems = 0;
  double energy_pj = 0;
  nlohmann::json trace;  // Chrome trace events (when requested)

  double seconds(const ArchConfig& a) const { return double(total_cycles) / (a.clock_ghz * 1e9); }
  double utilization(const ArchConfig& a) const {
    return total_cycles ? double(macs) / (double(a.rows) * a.cols * double(total_cycles)) : 0.0;
  }
  nlohmann::json to_json(const ArchConfig& a) const;  // without the trace
};

// Throws tessera::Error naming the instruction on a deadlock or an invalid operand.
TimingResult simulate_timing(const Program& p, const ArchConfig& a, bool want_trace = false);

// A Chrome trace file ({"traceEvents": [...]}) from one or more results laid end to end.
nlohmann::json chrome_trace(const std::vector<std::pair<std::string, const TimingResult*>>& parts,
                            const ArchConfig& a);

}  // namespace tessera::npu
