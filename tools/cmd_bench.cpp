// `tessera bench MODEL [--threads N ...] [--runs N] [--compare onnxruntime]`:
// model latency — warm-up, then timed runs; median, p90, min and session
// creation time. With --compare onnxruntime the comparison runs in Python
// (python -m tessera.bench), where onnxruntime's own API is available: both
// sessions in one process, alternating runs, medians and the ratio.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "tessera/tessera.h"
#include "tools/commands.h"
#include "tools/feeds.h"

namespace tessera::tools {

namespace {

struct BenchOptions {
  std::string model, compare;
  std::vector<int> threads{0};
  std::vector<std::string> inputs, dims;
  int runs = 20, warmup = 2;
  uint64_t seed = 0;
  bool cold_cache = false;
};

// Evicts the caches between timed runs (untimed), as another program running in between would: the weights
// then come from memory in every run, as they do in an application that does other work between inferences
// (and in compare_ort.py, where onnxruntime's run comes between two of ours). Writes and reads a buffer of
// twice the last-level cache, at least 64 MiB.
class CacheEvictor {
 public:
  CacheEvictor()
      : buf_(size_t(std::max<long>(2 * cpu_features().l3_bytes, 64L << 20)) / sizeof(float), 0.0f) {}
  void evict() {
    float sum = 0.0f;
    for (float& v : buf_) sum += (v += 1.0f);
    sink_ = sum;
  }

 private:
  std::vector<float> buf_;
  volatile float sink_ = 0.0f;
};

[[noreturn]] void hand_over_to_python(const BenchOptions& o) {
  check_arg(o.compare == "onnxruntime", "--compare: only 'onnxruntime' is supported, got '", o.compare, "'");
  check_arg(!o.cold_cache,
            "--cold-cache is not supported with --compare onnxruntime (there the two runtimes' "
            "runs already evict each other's weights)");
  check_arg(o.inputs.empty(),
            "--compare onnxruntime makes its own random inputs; --input is not supported with it");
  const char* py = std::getenv("TESSERA_PYTHON");
  std::vector<std::string> args = {py && *py ? py : "python3",
                                   "-m",
                                   "tessera.bench",
                                   o.model,
                                   "--runs",
                                   std::to_string(o.runs),
                                   "--warmup",
                                   std::to_string(o.warmup),
                                   "--seed",
                                   std::to_string(o.seed),
                                   "--threads"};
  for (int t : o.threads) args.push_back(std::to_string(t));
  for (const std::string& d : o.dims) args.insert(args.end(), {"--dim", d});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  throw Error(ErrorCode::io,
              cat("--compare onnxruntime runs '", args[0], " -m tessera.bench' (the Python package ",
                  "'tessera' and onnxruntime): could not start it: ", std::strerror(errno)));
}

void bench_model(const BenchOptions& o) {
  check_arg(o.runs >= 1 && o.warmup >= 0, "--runs must be at least 1 and --warmup non-negative");
  for (int t : o.threads) check_arg(t >= 0, "--threads must be non-negative");
  if (!o.compare.empty()) hand_over_to_python(o);
  // "huge ms": how long after creation the packed weights took to reach huge pages (core/memory.h); the
  // runs are timed after that, in the steady state.
  std::printf("%7s %11s %9s %9s %9s %9s %10s\n", "threads", "median ms", "p90 ms", "min ms", "create ms",
              "huge ms", "arena MiB");
  const std::unique_ptr<CacheEvictor> evictor = o.cold_cache ? std::make_unique<CacheEvictor>() : nullptr;
  for (int t : o.threads) {
    SessionOptions so;
    so.threads = t;
    const auto t0 = std::chrono::steady_clock::now();
    Session session(o.model, so);
    const auto t1 = std::chrono::steady_clock::now();
    const double create_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    wait_for_huge_page_collapse();
    const double huge_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    const auto feeds = make_feeds(session, o.inputs, o.dims, o.seed);
    for (int i = 0; i < o.warmup; ++i) session.run(feeds);
    std::vector<double> ms;
    for (int i = 0; i < o.runs; ++i) {
      if (evictor) evictor->evict();
      const auto r0 = std::chrono::steady_clock::now();
      session.run(feeds);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count());
    }
    std::printf("%7d %11.3f %9.3f %9.3f %9.1f %9.1f %10.1f\n", t, percentile(ms, 0.5), percentile(ms, 0.9),
                percentile(ms, 0.0), create_ms, huge_ms, double(session.peak_memory_bytes()) / (1 << 20));
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "Model latency: median, p90; --compare onnxruntime side by side");
  cmd->add_option("model", opts->model, "the .onnx file")->required();
  cmd->add_option("--threads,-t", opts->threads, "thread counts to measure (0: one per core)");
  cmd->add_option("--runs,-r", opts->runs, "timed runs");
  cmd->add_option("--warmup", opts->warmup, "untimed runs first");
  cmd->add_option("--compare", opts->compare, "onnxruntime: run it alternately with Tessera in one process");
  cmd->add_option("--input,-i", opts->inputs, "NAME=FILE.npy (repeatable); others get random data");
  cmd->add_option("--dim", opts->dims, "NAME=VALUE for a symbolic input dim (repeatable; others become 1)");
  cmd->add_option("--seed", opts->seed, "seed for the random inputs");
  cmd->add_flag("--cold-cache", opts->cold_cache,
                "evict the caches before each timed run (untimed): weights come from memory every run");
  cmd->callback([opts] { bench_model(*opts); });
}

}  // namespace tessera::tools
