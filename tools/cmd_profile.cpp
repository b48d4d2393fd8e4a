// `tessera profile MODEL [--threads N] [--runs N] [--trace out.json] ...`:
// runs a model with per-node timing and prints where the time goes — per op
// type and per node: time (median over runs), share, GFLOP/s, GB/s, arithmetic
// intensity and the share of the roofline bound min(peak, AI x bandwidth),
// with the peak and bandwidth measured on this machine first
// (kernels/x86/roofline.h). --trace writes the runs as a Chrome trace
// (chrome://tracing or ui.perfetto.dev), each node's shapes, FLOPs and bytes in
// its args.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "core/memory.h"
#include "kernels/x86/roofline.h"
#include "runtime/session_impl.h"
#include "tessera/tessera.h"
#include "tools/commands.h"
#include "tools/feeds.h"

namespace tessera::tools {

namespace {

struct ProfileOptions {
  std::string model, trace;
  std::vector<std::string> inputs, dims;
  int threads = 0, runs = 10, warmup = 2, top = 20, optimization_level = 99;
  double peak_gflops = 0, bandwidth_gbs = 0;
  uint64_t seed = 0;
};

struct Row {
  std::string name, op, shapes;
  std::vector<double> us;  // per run
  double flops = 0, bytes = 0;
  int count = 0;  // nodes (per op type) or 1
};

struct Rates {
  double ms, share, gflops, gbs, ai, roof;
};

Rates rates(double us, double flops, double bytes, double total_us, const kernels::x86::Ceilings& c) {
  Rates r{};
  r.ms = us * 1e-3;
  r.share = total_us > 0 ? 100 * us / total_us : 0;
  r.gflops = us > 0 ? flops / us * 1e-3 : 0;
  r.gbs = us > 0 ? bytes / us * 1e-3 : 0;
  r.ai = bytes > 0 ? flops / bytes : 0;
  const double bound = std::min(c.peak_gflops, r.ai * c.bandwidth_gbs);  // GFLOP/s attainable
  r.roof = bound > 0 ? 100 * r.gflops / bound : 0;
  return r;
}

void profile_model(const ProfileOptions& o) {
  check_arg(o.runs >= 1, "--runs must be at least 1");
  check_arg(o.warmup >= 0 && o.threads >= 0 && o.top >= 0,
            "--warmup, --threads and --top must be non-negative");
  SessionOptions so;
  so.threads = o.threads;
  so.optimization_level = o.optimization_level;
  so.enable_profiling = true;
  so.profile_path = o.trace;
  const auto t0 = std::chrono::steady_clock::now();
  Session session(o.model, so);
  const double create_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  wait_for_huge_page_collapse();  // time the steady state: the weights on huge pages (core/memory.h)
  const SessionImpl& impl = session.impl();
  const auto feeds = make_feeds(session, o.inputs, o.dims, o.seed);

  kernels::x86::Ceilings ceil;
  if (o.peak_gflops <= 0 || o.bandwidth_gbs <= 0) ceil = kernels::x86::measure_ceilings(impl.pool());
  if (o.peak_gflops > 0) ceil.peak_gflops = o.peak_gflops, ceil.isa = "given";
  if (o.bandwidth_gbs > 0) ceil.bandwidth_gbs = o.bandwidth_gbs;

  for (int i = 0; i < o.warmup; ++i) session.run(feeds);
  impl.clear_profile();
  std::vector<double> run_ms;
  for (int i = 0; i < o.runs; ++i) {
    const auto t1 = std::chrono::steady_clock::now();
    session.run(feeds);
    run_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
  }
  const std::vector<runtime::ProfileEvent> events = impl.profile_events();
  if (o.trace.empty()) impl.clear_profile();  // nothing to write when the session ends

  // Per node: events arrive in execution order, one run after another.
  std::vector<Row> nodes;
  std::map<std::string, size_t> node_index;
  std::map<std::string, int> seen_in_run;
  for (const runtime::ProfileEvent& e : events) {
    const std::string key = e.op + "\x1f" + e.name;
    auto [it, fresh] = node_index.try_emplace(key, nodes.size());
    if (fresh) nodes.push_back({e.name, e.op, e.shapes, {}, e.flops, e.bytes, 1});
    nodes[it->second].us.push_back(e.dur_us);
  }
  double total_us = 0;
  std::map<std::string, Row> ops;
  for (Row& r : nodes) {
    // A node inside a loop body runs several times per run: count its time per run.
    const double execs = double(r.us.size()) / double(o.runs);
    const double per_run = percentile(r.us, 0.5) * execs;
    r.us = {per_run};
    r.flops *= execs;
    r.bytes *= execs;
    total_us += per_run;
    Row& op = ops[r.op];
    op.op = r.op;
    if (op.us.empty()) op.us = {0};
    op.us[0] += per_run;
    op.flops += r.flops;
    op.bytes += r.bytes;
    op.count += 1;
  }
  std::sort(nodes.begin(), nodes.end(), [](const Row& a, const Row& b) { return a.us[0] > b.us[0]; });
  std::vector<Row> op_rows;
  for (auto& [k, r] : ops) op_rows.push_back(r);
  std::sort(op_rows.begin(), op_rows.end(), [](const Row& a, const Row& b) { return a.us[0] > b.us[0]; });

  double flops_total = 0;
  for (const Row& r : op_rows) flops_total += r.flops;
  std::printf("model %s  threads %d  runs %d (after %d warm-up)\n", o.model.c_str(),
              impl.pool()->num_threads(), o.runs, o.warmup);
  std::printf(
      "session creation %.1f ms; run median %.3f ms, p90 %.3f ms; sum of node medians %.3f ms; %.3f GFLOP "
      "per run = %.1f GFLOP/s\n",
      create_ms, percentile(run_ms, 0.5), percentile(run_ms, 0.9), total_us * 1e-3, flops_total * 1e-9,
      flops_total / (percentile(run_ms, 0.5) * 1e6));
  std::printf(
      "roofline: peak %.1f GFLOP/s (%s FMA, measured), bandwidth %.1f GB/s (triad, measured), ridge %.2f "
      "FLOP/byte\n\n",
      ceil.peak_gflops, ceil.isa.c_str(), ceil.bandwidth_gbs,
      ceil.bandwidth_gbs > 0 ? ceil.peak_gflops / ceil.bandwidth_gbs : 0.0);

  std::printf("%-24s %6s %10s %7s %9s %8s %8s %7s\n", "op", "nodes", "ms", "share", "GFLOP/s", "GB/s",
              "FLOP/B", "%roof");
  for (const Row& r : op_rows) {
    const Rates x = rates(r.us[0], r.flops, r.bytes, total_us, ceil);
    std::printf("%-24s %6d %10.3f %6.1f%% %9.1f %8.1f %8.2f %6.0f%%\n", r.op.c_str(), r.count, x.ms, x.share,
                x.gflops, x.gbs, x.ai, x.roof);
  }
  std::printf("\n%-10s %7s %9s %8s %8s %7s  %-18s %s\n", "ms", "share", "GFLOP/s", "GB/s", "FLOP/B", "%roof",
              "op", "node  [shapes]");
  for (size_t i = 0; i < nodes.size() && int(i) < o.top; ++i) {
    const Row& r = nodes[i];
    const Rates x = rates(r.us[0], r.flops, r.bytes, total_us, ceil);
    std::printf("%-10.3f %6.1f%% %9.1f %8.1f %8.2f %6.0f%%  %-18s %s  [%s]\n", x.ms, x.share, x.gflops, x.gbs,
                x.ai, x.roof, r.op.c_str(), r.name.c_str(), r.shapes.c_str());
  }
  if (!o.trace.empty()) {
    impl.write_profile();
    std::printf("\ntrace: %s (%zu events; open in ui.perfetto.dev)\n", o.trace.c_str(), events.size());
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto opts = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand("profile", "Per-op time, GFLOP/s, GB/s and roofline share; Chrome trace");
  cmd->add_option("model", opts->model, "the .onnx file")->required();
  cmd->add_option("--trace", opts->trace, "write a Chrome trace of the timed runs here");
  cmd->add_option("--threads,-t", opts->threads, "worker threads (0: one per core)");
  cmd->add_option("--runs,-r", opts->runs, "timed runs (node times are medians over them)");
  cmd->add_option("--warmup", opts->warmup, "untimed runs first");
  cmd->add_option("--top", opts->top, "how many nodes to list");
  cmd->add_option("--input,-i", opts->inputs, "NAME=FILE.npy (repeatable); others get random data");
  cmd->add_option("--dim", opts->dims, "NAME=VALUE for a symbolic input dim (repeatable; others become 1)");
  cmd->add_option("--peak-gflops", opts->peak_gflops, "compute ceiling instead of measuring it");
  cmd->add_option("--bandwidth-gbs", opts->bandwidth_gbs, "memory ceiling instead of measuring it");
  cmd->add_option("--opt-level", opts->optimization_level, "0: run the graph as imported");
  cmd->add_option("--seed", opts->seed, "seed for the random inputs");
  cmd->callback([opts] { profile_model(*opts); });
}

}  // namespace tessera::tools
