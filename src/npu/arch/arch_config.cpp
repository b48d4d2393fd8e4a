#include "npu/arch/arch_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace tessera::npu {

const char* dataflow_name(Dataflow d) {
  switch (d) {
    case Dataflow::ws: return "ws";
    case Dataflow::os: return "os";
    case Dataflow::is: return "is";
  }
  return "?";
}

Dataflow dataflow_from_name(const std::string& s0) {
  std::string s;
  for (char c : s0)
    if (!std::isspace(static_cast<unsigned char>(c))) s += char(std::tolower(static_cast<unsigned char>(c)));
  if (s == "ws" || s == "weight_stationary" || s == "weight-stationary") return Dataflow::ws;
  if (s == "os" || s == "output_stationary" || s == "output-stationary") return Dataflow::os;
  if (s == "is" || s == "input_stationary" || s == "input-stationary") return Dataflow::is;
  throw Error(ErrorCode::invalid_argument, cat("unknown dataflow '", s0, "' (expected ws, os or is)"));
}

void ArchConfig::validate() const {
  auto pos = [&](bool ok, const char* what) {
    check_arg(ok, "arch '", name, "': ", what, " must be positive");
  };
  pos(rows > 0 && rows <= 65536, "rows");
  pos(cols > 0 && cols <= 65536, "cols");
  pos(vector_lanes > 0, "vector_lanes");
  pos(ub_bytes > 0, "ub_bytes");
  pos(ub_banks > 0, "ub_banks");
  pos(ub_bank_bytes > 0, "ub_bank_bytes");
  pos(acc_bytes >= int64_t(cols) * 4, "acc_bytes (at least one row)");
  pos(acc_banks > 0, "acc_banks");
  pos(weight_slots > 0, "weight_slots");
  pos(hbm_bytes > 0, "hbm_bytes");
  pos(hbm_gbps > 0, "hbm_gbps");
  pos(hbm_latency_ns >= 0, "hbm_latency_ns");
  pos(dma_engines > 0, "dma_engines");
  pos(clock_ghz > 0, "clock_ghz");
  pos(vpu_alu_latency >= 0 && vpu_transcendental_latency >= 0 && vpu_reduce_latency >= 0, "vpu latencies");
}

nlohmann::json to_json(const ArchConfig& a) {
  nlohmann::json j;
  j["name"] = a.name;
  j["matrix_unit"] = {{"rows", a.rows},
                      {"cols", a.cols},
                      {"dataflow", dataflow_name(a.dataflow)},
                      {"operand_types", a.operand_types},
                      {"int_accumulator", a.int_accumulator},
                      {"float_accumulator", a.float_accumulator}};
  j["vector_unit"] = {{"lanes", a.vector_lanes},
                      {"alu_latency", a.vpu_alu_latency},
                      {"transcendental_latency", a.vpu_transcendental_latency},
                      {"reduce_latency", a.vpu_reduce_latency}};
  j["memory"] = {{"ub_bytes", a.ub_bytes},       {"ub_banks", a.ub_banks},
                 {"ub_bank_bytes", a.ub_bank_bytes}, {"acc_bytes", a.acc_bytes},
                 {"acc_banks", a.acc_banks},     {"weight_slots", a.weight_slots},
                 {"hbm_bytes", a.hbm_bytes},     {"hbm_gbps", a.hbm_gbps},
                 {"hbm_latency_ns", a.hbm_latency_ns}, {"dma_engines", a.dma_engines}};
  j["clock_ghz"] = a.clock_ghz;
  j["energy_pj"] = {{"mac_int8", a.pj_mac_int8}, {"mac_bf16", a.pj_mac_bf16}, {"mac_fp8", a.pj_mac_fp8},
                    {"sram_byte", a.pj_sram_byte}, {"hbm_byte", a.pj_hbm_byte}, {"vpu_op", a.pj_vpu_op}};
  return j;
}

namespace {
template <typename T>
void get(const nlohmann::json& j, const char* key, T& out) {
  if (!j.is_object()) return;
  auto it = j.find(key);
  if (it == j.end()) return;
  try {
    out = it->get<T>();
  } catch (const std::exception& e) {
    throw Error(ErrorCode::invalid_argument, cat("arch config: field '", key, "': ", e.what()));
  }
}
}  // namespace

ArchConfig arch_from_json(const nlohmann::json& j, const ArchConfig& base0) {
  check_arg(j.is_object(), "arch config: expected a JSON object");
  ArchConfig a = base0;
  if (j.contains("preset")) a = arch_preset(j.at("preset").get<std::string>());
  get(j, "name", a.name);
  const nlohmann::json empty = nlohmann::json::object();
  const auto& mu = j.contains("matrix_unit") ? j["matrix_unit"] : empty;
  get(mu, "rows", a.rows);
  get(mu, "cols", a.cols);
  if (mu.contains("dataflow")) a.dataflow = dataflow_from_name(mu["dataflow"].get<std::string>());
  get(mu, "operand_types", a.operand_types);
  get(mu, "int_accumulator", a.int_accumulator);
  get(mu, "float_accumulator", a.float_accumulator);
  const auto& vu = j.contains("vector_unit") ? j["vector_unit"] : empty;
  get(vu, "lanes", a.vector_lanes);
  get(vu, "alu_latency", a.vpu_alu_latency);
  get(vu, "transcendental_latency", a.vpu_transcendental_latency);
  get(vu, "reduce_latency", a.vpu_reduce_latency);
  const auto& m = j.contains("memory") ? j["memory"] : empty;
  get(m, "ub_bytes", a.ub_bytes);
  get(m, "ub_banks", a.ub_banks);
  get(m, "ub_bank_bytes", a.ub_bank_bytes);
  get(m, "acc_bytes", a.acc_bytes);
  get(m, "acc_banks", a.acc_banks);
  get(m, "weight_slots", a.weight_slots);
  get(m, "hbm_bytes", a.hbm_bytes);
  get(m, "hbm_gbps", a.hbm_gbps);
  get(m, "hbm_latency_ns", a.hbm_latency_ns);
  get(m, "dma_engines", a.dma_engines);
  get(j, "clock_ghz", a.clock_ghz);
  const auto& e = j.contains("energy_pj") ? j["energy_pj"] : empty;
  get(e, "mac_int8", a.pj_mac_int8);
  get(e, "mac_bf16", a.pj_mac_bf16);
  get(e, "mac_fp8", a.pj_mac_fp8);
  get(e, "sram_byte", a.pj_sram_byte);
  get(e, "hbm_byte", a.pj_hbm_byte);
  get(e, "vpu_op", a.pj_vpu_op);
  a.validate();
  return a;
}

std::vector<std::string> arch_preset_names() { return {"tnpu-v1", "tpu-v1", "gemmini-16x16", "scalesim-32x32"}; }

ArchConfig arch_preset(const std::string& name) {
  ArchConfig a;  // tnpu-v1 (DESIGN.md)
  if (name == "tnpu-v1") return a;
  if (name == "tpu-v1") {
    // Jouppi et al., ISCA 2017: 256x256 int8 MACs at 700 MHz, 24 MiB unified buffer,
    // 4 MiB accumulators, 4-deep weight FIFO, 34 GB/s DDR3.
    a.name = "tpu-v1";
    a.rows = a.cols = 256;
    a.operand_types = {"int8"};
    a.vector_lanes = 256;
    a.ub_bytes = 24ll << 20;
    a.ub_banks = 32;
    a.ub_bank_bytes = 32;
    a.acc_bytes = 4ll << 20;
    a.weight_slots = 4;
    a.hbm_bytes = 8ll << 30;
    a.hbm_gbps = 34.0;
    a.hbm_latency_ns = 100.0;
    a.dma_engines = 1;
    a.clock_ghz = 0.7;
    a.pj_hbm_byte = 70.0;
    return a;
  }
  if (name == "gemmini-16x16") {
    // Gemmini's default configuration: 16x16 int8 array, 256 KiB scratchpad, 64 KiB accumulator.
    a.name = "gemmini-16x16";
    a.rows = a.cols = 16;
    a.operand_types = {"int8"};
    a.vector_lanes = 16;
    a.ub_bytes = 256 << 10;
    a.ub_banks = 4;
    a.ub_bank_bytes = 16;
    a.acc_bytes = 64 << 10;
    a.acc_banks = 2;
    a.weight_slots = 2;
    a.hbm_bytes = 1ll << 30;
    a.hbm_gbps = 16.0;  // 128-bit bus at 1 GHz
    a.hbm_latency_ns = 100.0;
    a.dma_engines = 1;
    a.clock_ghz = 1.0;
    return a;
  }
  if (name == "scalesim-32x32") {
    // SCALE-Sim's example: 32x32, 64 KiB ifmap/filter/ofmap SRAMs, 10 words/cycle.
    a.name = "scalesim-32x32";
    a.rows = a.cols = 32;
    a.dataflow = Dataflow::ws;
    a.operand_types = {"int8"};
    a.vector_lanes = 32;
    a.ub_bytes = 128 << 10;  // ifmap + ofmap SRAM
    a.ub_banks = 1;
    a.ub_bank_bytes = 64;
    a.acc_bytes = 64 << 10;
    a.acc_banks = 1;
    a.weight_slots = 2;
    a.hbm_bytes = 1ll << 30;
    a.hbm_gbps = 10.0;  // 10 bytes/cycle at 1 GHz
    a.hbm_latency_ns = 0.0;
    a.dma_engines = 1;
    a.clock_ghz = 1.0;
    return a;
  }
  std::string names;
  for (auto& n : arch_preset_names()) names += " " + n;
  throw Error(ErrorCode::invalid_argument, cat("unknown NPU arch preset '", name, "' (presets:", names, ")"));
}

ArchConfig arch_from_scalesim_cfg(const std::string& text) {
  ArchConfig a = arch_preset("scalesim-32x32");
  std::istringstream in(text);
  std::string line;
  int64_t ifmap_kb = -1, filter_kb = -1, ofmap_kb = -1;
  std::string run_name;
  while (std::getline(in, line)) {
    auto hash = line.find_first_of("#;");
    if (hash != std::string::npos) line.resize(hash);
    auto sep = line.find_first_of(":=");
    if (sep == std::string::npos) continue;  // [section] or blank
    auto trim = [](std::string s) {
      size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    std::string key = trim(line.substr(0, sep)), val = trim(line.substr(sep + 1));
    std::string k;
    for (char c : key) k += char(std::tolower(static_cast<unsigned char>(c)));
    auto num = [&]() -> double {
      try {
        size_t used = 0;
        double v = std::stod(val, &used);
        return v;
      } catch (...) {
        throw Error(ErrorCode::invalid_argument, cat("SCALE-Sim cfg: '", key, "' expects a number, got '", val, "'"));
      }
    };
    if (k == "run_name") run_name = val;
    else if (k == "arrayheight") a.rows = int(num());
    else if (k == "arraywidth") a.cols = int(num());
    else if (k == "ifmapsramszkb") ifmap_kb = int64_t(num());
    else if (k == "filtersramszkb") filter_kb = int64_t(num());
    else if (k == "ofmapsramszkb") ofmap_kb = int64_t(num());
    else if (k == "dataflow") a.dataflow = dataflow_from_name(val);
    else if (k == "bandwidth") a.hbm_gbps = num() * a.clock_ghz;  // words (bytes) per cycle
    else if (k == "memorybanks" || k == "onchipmemorybanks") a.ub_banks = std::max(1, int(num()));
    // other keys (offsets, layouts, sparsity, InterfaceBandwidth) do not change compute cycles
  }
  a.name = run_name.empty() ? "scalesim-cfg" : run_name;
  if (ifmap_kb >= 0 || ofmap_kb >= 0) a.ub_bytes = (std::max<int64_t>(ifmap_kb, 0) + std::max<int64_t>(ofmap_kb, 0)) << 10;
  if (ofmap_kb > 0) a.acc_bytes = std::max<int64_t>(ofmap_kb << 10, int64_t(a.cols) * 4);
  (void)filter_kb;
  a.vector_lanes = a.cols;
  a.validate();
  return a;
}

ArchConfig load_arch(const std::string& s) {
  for (auto& n : arch_preset_names())
    if (n == s) return arch_preset(s);
  std::ifstream f(s);
  check(bool(f), ErrorCode::io, "cannot open NPU arch '", s, "' (not a preset and not a readable file)");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  bool is_cfg = s.size() >= 4 && s.substr(s.size() - 4) == ".cfg";
  if (is_cfg) return arch_from_scalesim_cfg(text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::invalid_argument, cat("NPU arch file '", s, "': ", e.what()));
  }
  return arch_from_json(j);
}

}  // namespace tessera::npu
