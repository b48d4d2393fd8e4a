// The NPU architecture: every number of the hardware model is a field here.
// Configs are JSON (nlohmann-json); SCALE-Sim .cfg files are read as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::npu {

enum class Dataflow { ws, os, is };
const char* dataflow_name(Dataflow d);
Dataflow dataflow_from_name(const std::string& s);  // "ws"|"os"|"is" (also SCALE-Sim spellings)

struct ArchConfig {
  std::string name = "tnpu-v1";
  // matrix unit
  int rows = 128;  // systolic array rows (K for weight-stationary)
  int cols = 128;  // systolic array columns (N for weight-stationary)
  Dataflow dataflow = Dataflow::ws;
  std::vector<std::string> operand_types{"int8", "bfloat16", "float8e4m3fn", "float8e5m2"};
  std::string int_accumulator = "int32";
  std::string float_accumulator = "float32";
  // vector unit
  int vector_lanes = 128;
  int vpu_alu_latency = 2;             // add mul max min relu cast
  int vpu_transcendental_latency = 8;  // exp tanh erf rsqrt recip
  int vpu_reduce_latency = 8;          // plus log2(lanes) tree
  // on-chip memory
  int64_t ub_bytes = 24ll << 20;       // unified buffer (activations)
  int ub_banks = 32;
  int ub_bank_bytes = 16;              // bytes per bank per cycle
  int64_t acc_bytes = 4ll << 20;       // accumulators (32-bit words)
  int acc_banks = 8;
  int weight_slots = 2;                // weight buffer tiles (2 = double buffer, tpu-v1: 4-deep FIFO)
  // off-chip memory
  int64_t hbm_bytes = 1ll << 32;       // addressable size of the simulated HBM image
  double hbm_gbps = 819.0;             // GB/s (1e9 bytes per second)
  double hbm_latency_ns = 500.0;
  int dma_engines = 2;
  // clock
  double clock_ghz = 1.5;
  // energy (pJ)
  double pj_mac_int8 = 0.2;
  double pj_mac_bf16 = 0.6;
  double pj_mac_fp8 = 0.3;
  double pj_sram_byte = 1.0;
  double pj_hbm_byte = 20.0;
  double pj_vpu_op = 0.5;

  // derived
  double hbm_bytes_per_cycle() const { return hbm_gbps / clock_ghz; }
  int64_t hbm_latency_cycles() const { return int64_t(hbm_latency_ns * clock_ghz + 0.5); }
  int64_t acc_rows() const { return acc_bytes / (int64_t(cols) * 4); }
  double peak_ops_per_s() const { return 2.0 * rows * cols * clock_ghz * 1e9; }

  void validate() const;  // throws tessera::Error on nonsense values
};

nlohmann::json to_json(const ArchConfig& a);
// Fields not present keep the defaults of `base` (so a file may override a preset: {"preset": "tpu-v1", ...}).
ArchConfig arch_from_json(const nlohmann::json& j, const ArchConfig& base = ArchConfig{});

std::vector<std::string> arch_preset_names();
ArchConfig arch_preset(const std::string& name);  // throws for an unknown name

// A SCALE-Sim .cfg (INI: ArrayHeight, ArrayWidth, *SramSzkB, Dataflow, Bandwidth, ...).
ArchConfig arch_from_scalesim_cfg(const std::string& text);

// PRESET name, a .json file or a .cfg file.
ArchConfig load_arch(const std::string& preset_or_path);

}  // namespace tessera::npu
