// The `tessera npu ...` subcommands: topology, gemm, asm, disasm, run, isa-doc, arch.
#include "tools/npu_commands.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "npu/arch/arch_config.h"
#include "npu/isa/isa.h"
#include "npu/programs/layers.h"
#include "npu/sim/functional.h"
#include "npu/sim/scalesim.h"
#include "npu/sim/timing.h"

namespace tessera::tools {

namespace {

using namespace tessera::npu;

struct SimOptions {
  std::string arch = "tnpu-v1";
  std::string mode = "scalesim";
  std::string dataflow;
  std::string json_out, trace_out, report_out;
  std::string dtype = "int8";
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  check(bool(f), ErrorCode::io, "cannot open '", path, "'");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  check(bool(f), ErrorCode::io, "cannot write '", path, "'");
  f.write(static_cast<const char*>(data), std::streamsize(n));
  check(bool(f), ErrorCode::io, "error writing '", path, "'");
}

void write_text(const std::string& path, const std::string& s) {
  write_bytes(path, s.data(), s.size());
}

void add_sim_options(CLI::App* c, SimOptions& o) {
  c->add_option("--arch", o.arch,
                "preset (tnpu-v1, tpu-v1, gemmini-16x16, scalesim-32x32), .json or SCALE-Sim .cfg");
  c->add_option("--mode", o.mode, "timing mode")->check(CLI::IsMember({"scalesim", "detailed"}));
  c->add_option("--dataflow", o.dataflow, "override the arch's dataflow")
      ->check(CLI::IsMember({"ws", "os", "is"}));
  c->add_option("--json", o.json_out, "write the results as JSON");
  c->add_option("--trace", o.trace_out, "write a Chrome trace (detailed mode)");
  c->add_option("--report", o.report_out, "write SCALE-Sim's COMPUTE_REPORT.csv (scalesim mode)");
}

NDType parse_dtype(const std::string& s) {
  if (s == "int8") return NDType::i8;
  if (s == "bf16" || s == "bfloat16") return NDType::bf16;
  if (s == "fp8" || s == "float8e4m3fn") return NDType::f8e4m3;
  throw Error(ErrorCode::invalid_argument, cat("unknown operand dtype '", s, "' (int8, bf16, fp8)"));
}

void simulate_layers(const std::vector<TopologyLayer>& layers, const SimOptions& o) {
  ArchConfig a = load_arch(o.arch);
  if (!o.dataflow.empty()) a.dataflow = dataflow_from_name(o.dataflow);
  nlohmann::json j;
  j["arch"] = a.name;
  j["mode"] = o.mode;
  j["dataflow"] = dataflow_name(a.dataflow);
  j["layers"] = nlohmann::json::array();
  int64_t total = 0;
  if (o.mode == "scalesim") {
    auto rs = scalesim_topology(layers, a);
    std::printf("%-12s %8s %8s %8s %8s %14s %8s %8s\n", "layer", "M", "N", "K", "folds", "cycles", "util%",
                "map%");
    for (const auto& r : rs) {
      std::printf("%-12s %8lld %8lld %8lld %8lld %14lld %8.2f %8.2f\n", r.name.c_str(), (long long)r.m,
                  (long long)r.n, (long long)r.k, (long long)r.folds, (long long)r.total_cycles,
                  r.overall_util, r.mapping_eff);
      total += r.total_cycles;
      j["layers"].push_back({{"name", r.name},
                             {"cycles", r.total_cycles},
                             {"stall_cycles", r.stall_cycles},
                             {"m", r.m},
                             {"n", r.n},
                             {"k", r.k},
                             {"folds", r.folds},
                             {"cycles_per_fold", r.cycles_per_fold},
                             {"overall_util", r.overall_util},
                             {"mapping_efficiency", r.mapping_eff},
                             {"compute_util", r.compute_util}});
    }
    if (!o.report_out.empty()) {
      std::ostringstream os;
      write_compute_report(os, rs);
      write_text(o.report_out, os.str());
    }
    check_arg(o.trace_out.empty(), "--trace needs --mode detailed");
  } else {
    check(a.dataflow == Dataflow::ws, ErrorCode::unsupported,
          "detailed mode runs generated programs on the weight-stationary array; use --dataflow ws");
    NDType dt = parse_dtype(o.dtype);
    std::vector<TimingResult> results;
    results.reserve(layers.size());
    double gen_s = 0, sim_s = 0;
    std::printf("%-12s %12s %7s %10s %10s %10s %10s %10s %10s %10s %12s %10s\n", "layer", "cycles", "util%",
                "active", "w.stall", "w.shift", "input", "raw", "fill/dr", "non-mat", "hbm_bytes",
                "energy_uJ");
    for (const auto& l : layers) {
      auto t0 = std::chrono::steady_clock::now();
      LayerProgram lp = conv_program(topology_conv_spec(l, dt), a);
      auto t1 = std::chrono::steady_clock::now();
      TimingResult r = simulate_timing(lp.program, a, !o.trace_out.empty());
      auto t2 = std::chrono::steady_clock::now();
      gen_s += std::chrono::duration<double>(t1 - t0).count();
      sim_s += std::chrono::duration<double>(t2 - t1).count();
      std::printf("%-12s %12lld %7.2f %10lld %10lld %10lld %10lld %10lld %10lld %10lld %12lld %10.2f\n",
                  l.name.c_str(), (long long)r.total_cycles, 100 * r.utilization(a),
                  (long long)r.array_active, (long long)r.weight_stall, (long long)r.weight_shift,
                  (long long)r.input_stall, (long long)r.raw_stall, (long long)r.fill_drain,
                  (long long)r.non_matrix, (long long)r.hbm_bytes, r.energy_pj * 1e-6);
      total += r.total_cycles;
      nlohmann::json lj = r.to_json(a);
      lj["name"] = l.name;
      lj["weight_tiles"] = lp.weight_tiles;
      j["layers"].push_back(lj);
      results.push_back(std::move(r));
    }
    double rate = sim_s > 0 ? double(total) / sim_s : 0;
    double rate_all = gen_s + sim_s > 0 ? double(total) / (gen_s + sim_s) : 0;
    std::printf(
        "simulated %lld cycles in %.3f s (%.3g cycles/s; %.3g cycles/s including program generation)\n",
        (long long)total, sim_s, rate, rate_all);
    j["wall_seconds"] = sim_s;
    j["generation_seconds"] = gen_s;
    j["simulated_cycles_per_second"] = rate;
    if (!o.trace_out.empty()) {
      std::vector<std::pair<std::string, const TimingResult*>> parts;
      for (size_t i = 0; i < layers.size(); ++i) parts.push_back({layers[i].name, &results[i]});
      write_text(o.trace_out, chrome_trace(parts, a).dump());
    }
  }
  std::printf("%-12s %lld cycles (%.3f ms at %.3g GHz)\n", "total", (long long)total,
              double(total) / (a.clock_ghz * 1e6), a.clock_ghz);
  j["total_cycles"] = total;
  if (!o.json_out.empty()) write_text(o.json_out, j.dump(2) + "\n");
}

}  // namespace

void add_npu_commands(CLI::App& app) {
  CLI::App* npu = app.add_subcommand("npu", "the NPU simulator: timing, programs, assembler");
  npu->require_subcommand(1);

  {
    auto o = std::make_shared<SimOptions>();
    auto file = std::make_shared<std::string>();
    CLI::App* c = npu->add_subcommand("topology", "simulate a SCALE-Sim topology CSV layer by layer");
    c->add_option("FILE", *file, "topology CSV")->required();
    add_sim_options(c, *o);
    c->add_option("--dtype", o->dtype, "operand type in detailed mode (int8, bf16, fp8)");
    c->callback([o, file] { simulate_layers(read_topology_csv(*file), *o); });
  }
  {
    auto o = std::make_shared<SimOptions>();
    auto mnk = std::make_shared<std::vector<int64_t>>();
    CLI::App* c = npu->add_subcommand("gemm", "simulate one GEMM M x N x K");
    c->add_option("M N K", *mnk, "the GEMM's dimensions")->required()->expected(3);
    add_sim_options(c, *o);
    c->add_option("--dtype", o->dtype, "operand type in detailed mode (int8, bf16, fp8)");
    c->callback([o, mnk] {
      auto& v = *mnk;
      simulate_layers({gemm_layer("gemm", v[0], v[1], v[2])}, *o);
    });
  }
  {
    auto in = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    CLI::App* c = npu->add_subcommand("asm", "assemble a text program into a TNPU binary");
    c->add_option("FILE", *in, "assembly text")->required();
    c->add_option("-o,--output", *out, "output binary (default FILE.bin)");
    c->callback([in, out] {
      auto text = read_bytes(*in);
      Program p = assemble(std::string(text.begin(), text.end()));
      auto bin = encode_file(p);
      std::string path = out->empty() ? *in + ".bin" : *out;
      write_bytes(path, bin.data(), bin.size());
      std::printf("%zu instructions, %zu bytes -> %s\n", p.size(), bin.size(), path.c_str());
    });
  }
  {
    auto in = std::make_shared<std::string>();
    CLI::App* c = npu->add_subcommand("disasm", "print a TNPU binary as text");
    c->add_option("FILE", *in, "program binary")->required();
    c->callback([in] { std::fputs(disassemble(decode_file(read_bytes(*in))).c_str(), stdout); });
  }
  {
    auto prog = std::make_shared<std::string>();
    auto arch = std::make_shared<std::string>("tnpu-v1");
    auto mem = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto hbm = std::make_shared<int64_t>(0);
    auto trace = std::make_shared<std::string>();
    CLI::App* c =
        npu->add_subcommand("run", "run a program on a memory image (functional + detailed timing)");
    c->add_option("PROGRAM", *prog, "TNPU binary or assembly text")->required();
    c->add_option("--arch", *arch, "preset or file");
    c->add_option("--mem", *mem, "HBM image (raw bytes loaded at address 0)");
    c->add_option("--hbm-size", *hbm, "bytes of HBM to model (default: the image's size, at least 1 MiB)");
    c->add_option("-o,--output", *out, "write the final HBM image here");
    c->add_option("--trace", *trace, "write a Chrome trace");
    c->callback([=] {
      ArchConfig a = load_arch(*arch);
      auto bytes = read_bytes(*prog);
      Program p = bytes.size() >= 4 && std::string(bytes.begin(), bytes.begin() + 4) == "TNPU"
                      ? decode_file(bytes)
                      : assemble(std::string(bytes.begin(), bytes.end()));
      std::vector<uint8_t> image;
      if (!mem->empty()) image = read_bytes(*mem);
      size_t size = *hbm > 0 ? size_t(*hbm) : std::max<size_t>(image.size(), 1 << 20);
      check_arg(image.size() <= size, "the memory image (", image.size(),
                " bytes) is larger than --hbm-size");
      Machine m(a, size);
      std::copy(image.begin(), image.end(), m.hbm().begin());
      auto st = m.run(p);
      TimingResult t = simulate_timing(p, a, !trace->empty());
      std::printf("%lld instructions, %lld MACs\n", (long long)st.instructions, (long long)st.macs);
      std::printf("%s\n", t.to_json(a).dump(2).c_str());
      if (!out->empty()) write_bytes(*out, m.hbm().data(), m.hbm().size());
      if (!trace->empty()) write_text(*trace, chrome_trace({{"program", &t}}, a).dump());
    });
  }
  {
    CLI::App* c = npu->add_subcommand("isa-doc", "print docs/npu-isa.md (generated from the ISA table)");
    c->callback([] { std::fputs(isa_markdown().c_str(), stdout); });
  }
  {
    auto name = std::make_shared<std::string>();
    CLI::App* c = npu->add_subcommand("arch", "print an arch config as JSON");
    c->add_option("ARCH", *name, "preset or file")->required();
    c->callback([name] { std::printf("%s\n", to_json(load_arch(*name)).dump(2).c_str()); });
  }
}

}  // namespace tessera::tools
