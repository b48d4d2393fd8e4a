// The NPU's architecture configs and its `scalesim` timing mode against SCALE-Sim v2's numbers.
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"
#include "npu/arch/arch_config.h"
#include "npu/sim/scalesim.h"

using namespace tessera::npu;

namespace {
std::string data(const char* f) { return std::string(TESSERA_SOURCE_DIR) + "/tests/data/npu/" + f; }
}  // namespace

TEST(NpuArch, PresetsAndJsonRoundTrip) {
  for (auto& n : arch_preset_names()) {
    ArchConfig a = arch_preset(n);
    EXPECT_EQ(a.name, n);
    ArchConfig b = arch_from_json(to_json(a));
    EXPECT_EQ(to_json(a), to_json(b)) << n;
  }
  ArchConfig t = arch_preset("tnpu-v1");
  EXPECT_EQ(t.rows, 128);
  EXPECT_EQ(t.ub_bytes, 24ll << 20);
  EXPECT_EQ(t.weight_slots, 2);
  ArchConfig tpu = arch_preset("tpu-v1");
  EXPECT_EQ(tpu.rows, 256);
  EXPECT_EQ(tpu.weight_slots, 4);
  EXPECT_NEAR(tpu.peak_ops_per_s() / 1e12, 92.0, 0.5);  // the paper's 92 TOPS
  EXPECT_THROW(arch_preset("nope"), tessera::Error);
  EXPECT_THROW(arch_from_json(nlohmann::json::parse(R"({"matrix_unit": {"rows": 0}})")), tessera::Error);
  EXPECT_THROW(arch_from_json(nlohmann::json::parse(R"({"matrix_unit": {"rows": "x"}})")), tessera::Error);
  ArchConfig o = arch_from_json(nlohmann::json::parse(R"({"preset": "tpu-v1", "memory": {"hbm_gbps": 68}})"));
  EXPECT_EQ(o.rows, 256);
  EXPECT_EQ(o.hbm_gbps, 68);
}

TEST(NpuArch, ReadsScaleSimCfg) {
  const char* cfg =
      "[general]\nrun_name = scale_example_run_32x32_os\n\n[architecture_presets]\nArrayHeight:    16\n"
      "ArrayWidth:     8\nIfmapSramSzkB:   64\nFilterSramSzkB:  64\nOfmapSramSzkB:   64\nIfmapOffset:    0\n"
      "FilterOffset:   10000000\nOfmapOffset:    20000000\nBandwidth : 10\nDataflow : os\nMemoryBanks: 1\n\n"
      "[run_presets]\nInterfaceBandwidth: CALC\n";
  ArchConfig a = arch_from_scalesim_cfg(cfg);
  EXPECT_EQ(a.rows, 16);
  EXPECT_EQ(a.cols, 8);
  EXPECT_EQ(a.dataflow, Dataflow::os);
  EXPECT_EQ(a.name, "scale_example_run_32x32_os");
  EXPECT_EQ(a.ub_bytes, 128 << 10);
  EXPECT_THROW(arch_from_scalesim_cfg("ArrayHeight: abc\n"), tessera::Error);
}

TEST(NpuScaleSim, TopologyCsvReader) {
  auto layers = read_topology_csv(data("alexnet_part.csv"));  // no final newline
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].name, "Conv1");
  EXPECT_EQ(layers[0].ofmap_h(), 55);
  EXPECT_EQ(layers[0].gemm_k(), 363);
  auto r50 = read_topology_csv(data("Resnet50.csv"));  // blank line after the header
  EXPECT_EQ(r50.size(), 54u);
  EXPECT_EQ(read_topology_csv(data("yolo_tiny.csv")).size(), 9u);  // trailing space after a comma
  EXPECT_THROW(parse_topology_csv("h\nL1, 10, 10, 3, 3\n"), tessera::Error);
  EXPECT_THROW(parse_topology_csv("h\nL1, 10, 10, 3, x, 1, 1, 1,\n"), tessera::Error);
  EXPECT_THROW(parse_topology_csv("h\nL1, 2, 2, 3, 3, 1, 1, 1,\n"), tessera::Error);
  EXPECT_THROW(read_topology_csv("/nonexistent.csv"), tessera::Error);
}

TEST(NpuScaleSim, PublishedNumbers) {
  // GEMM 256x128x256 on 32x32 weight-stationary: 32 folds x 350 cycles - 1.
  EXPECT_EQ(scalesim_gemm("g", 256, 128, 256, 32, 32, Dataflow::ws).total_cycles, 11199);
  // SCALE-Sim's golden report for alexnet_part on 32x32 ws.
  ArchConfig a = arch_preset("scalesim-32x32");
  auto r = scalesim_topology(read_topology_csv(data("alexnet_part.csv")), a);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].total_cycles, 112283);
  EXPECT_EQ(r[0].stall_cycles, 0);
}

TEST(NpuScaleSim, HandComputedOsIs) {
  ArchConfig a = arch_preset("scalesim-32x32");
  auto l = read_topology_csv(data("alexnet_part.csv"))[0];  // M=3025 N=96 K=363
  a.dataflow = Dataflow::os;  // ceil(3025/32)*ceil(96/32) = 285 folds of 32+32+363-2 = 425
  EXPECT_EQ(scalesim_layer(l, a).total_cycles, 285 * 425 - 1);
  a.dataflow = Dataflow::is;  // ceil(363/32)*ceil(3025/32) = 1140 folds of 64+32+96-2 = 190
  EXPECT_EQ(scalesim_layer(l, a).total_cycles, 1140 * 190 - 1);
  // a non-square array: 8 rows x 16 cols, GEMM 10x20x30
  EXPECT_EQ(scalesim_gemm("g", 10, 20, 30, 8, 16, Dataflow::ws).total_cycles, 4 * 2 * (16 + 16 + 10 - 2) - 1);
  EXPECT_EQ(scalesim_gemm("g", 10, 20, 30, 8, 16, Dataflow::os).total_cycles, 2 * 2 * (8 + 16 + 30 - 2) - 1);
  EXPECT_EQ(scalesim_gemm("g", 10, 20, 30, 8, 16, Dataflow::is).total_cycles, 4 * 1 * (16 + 16 + 20 - 2) - 1);
  // utilization of a perfectly mapped fold
  auto u = scalesim_gemm("g", 32, 32, 32, 32, 32, Dataflow::ws);
  EXPECT_DOUBLE_EQ(u.mapping_eff, 100.0);
  EXPECT_NEAR(u.overall_util, 100.0 * 32 * 32 * 32 / (32.0 * 32 * 125), 1e-9);
}

TEST(NpuScaleSim, ComputeReport) {
  ArchConfig a = arch_preset("scalesim-32x32");
  std::ostringstream os;
  write_compute_report(os, scalesim_topology(read_topology_csv(data("alexnet_part.csv")), a));
  std::string s = os.str();
  EXPECT_EQ(s.rfind("LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n", 0),
            0u);
  EXPECT_NE(s.find("\n0, 112283, 0, "), std::string::npos);
}
