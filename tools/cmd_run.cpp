// `tessera run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR]
//  [--threads N] [--repeat N]`: runs a model once or N times on given or
// random inputs and prints each output's shape, dtype and a few statistics.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>

#include "tessera/tessera.h"
#include "tools/commands.h"
#include "tools/feeds.h"
#include "tools/npy.h"

namespace tessera::tools {

namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  std::string output_dir;
  int threads = 0;
  int repeat = 1;
  int optimization_level = 99;
  uint64_t seed = 0;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string describe_shape(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += cat(i ? "," : "", s[i]);
  return r + "]";
}

void print_tensor_stats(const std::string& label, const Tensor& t) {
  std::cout << label << ": " << dtype_name(t.dtype()) << describe_shape(t.shape());
  if (t.dtype() == DType::string || t.numel() == 0) {
    std::cout << "\n";
    return;
  }
  const Tensor c = t.contiguous();
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < c.numel(); ++i) {
    const double v = c.at_double(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  const int64_t n = c.numel() - nans;
  char buf[160];
  if (n > 0)
    std::snprintf(buf, sizeof buf, "  min %.6g  max %.6g  mean %.6g", mn, mx, sum / double(n));
  else
    std::snprintf(buf, sizeof buf, "  (all NaN)");
  std::cout << buf;
  if (nans) std::cout << "  NaN " << nans;
  std::cout << "\n";
}

std::string file_safe(const std::string& name) {
  std::string r = name.empty() ? "output" : name;
  for (char& c : r)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (r == "." || r == "..") r = "_" + r;
  return r;
}

void run_model(const RunOptions& o) {
  check_arg(o.repeat >= 1, "--repeat must be at least 1");
  check_arg(o.threads >= 0, "--threads must be non-negative");
  SessionOptions so;
  so.threads = o.threads;
  so.optimization_level = o.optimization_level;

  auto t0 = Clock::now();
  Session session(o.model, so);
  const double load_ms = ms_since(t0);

  const std::map<std::string, DataValue> feeds = make_feeds(session, o.inputs, o.dims, o.seed);

  std::vector<double> times;
  std::vector<DataValue> outs;
  for (int i = 0; i < o.repeat; ++i) {
    auto t1 = Clock::now();
    outs = session.run(feeds);
    times.push_back(ms_since(t1));
  }
  const double median = percentile(times, 0.5);
  const auto [lo, hi] = std::minmax_element(times.begin(), times.end());

  for (const auto& [name, v] : feeds)
    if (v.is_tensor()) print_tensor_stats("input " + name, v.tensor);
  if (!o.output_dir.empty()) std::filesystem::create_directories(o.output_dir);
  const auto& out_info = session.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string name = i < out_info.size() ? out_info[i].name : cat("output", i);
    const DataValue& v = outs[i];
    if (v.is_tensor()) {
      print_tensor_stats("output " + name, v.tensor);
      if (!o.output_dir.empty() && v.tensor.dtype() != DType::string)
        write_npy((std::filesystem::path(o.output_dir) / (file_safe(name) + ".npy")).string(), v.tensor);
    } else if (v.is_sequence()) {
      std::cout << "output " << name << ": sequence of " << v.sequence.size() << " tensors\n";
      for (size_t j = 0; j < v.sequence.size(); ++j) print_tensor_stats(cat("  [", j, "]"), v.sequence[j]);
    } else {
      std::cout << "output " << name << ": none\n";
    }
  }
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "session: %.3f ms  run: median %.3f ms over %d run%s (min %.3f ms, max %.3f ms)\n", load_ms,
                median, o.repeat, o.repeat == 1 ? "" : "s", *lo, *hi);
  std::cout << buf;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model on given or random inputs");
  cmd->add_option("model", opts->model, "the .onnx file")->required();
  cmd->add_option("--input,-i", opts->inputs, "NAME=FILE.npy (repeatable); others get random data");
  cmd->add_option("--dim", opts->dims, "NAME=VALUE for a symbolic input dim (repeatable; others become 1)");
  cmd->add_option("--output-dir,-o", opts->output_dir, "write each output as NAME.npy here");
  cmd->add_option("--threads,-t", opts->threads, "worker threads (0: one per core)");
  cmd->add_option("--repeat,-r", opts->repeat, "run N times and report the median time");
  cmd->add_option("--opt-level", opts->optimization_level, "0: run the graph as imported");
  cmd->add_option("--seed", opts->seed, "seed for the random inputs");
  cmd->callback([opts] { run_model(*opts); });
}

}  // namespace tessera::tools
