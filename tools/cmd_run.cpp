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
#include "tools/npy.h"

namespace tessera::tools {

namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
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

bool contains_ci(std::string s, const std::string& needle) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s.find(needle) != std::string::npos;
}

// A random tensor of the input's type and shape (unknown dims become 1):
// floats uniform in [-1, 1), integers small and non-negative (token ids,
// indices), anything named like a mask all ones.
Tensor random_tensor(const ValueInfo& vi, std::mt19937_64& rng) {
  check(vi.dtype != DType::undefined, ErrorCode::unsupported, "input '", vi.name, "' has type ", vi.type,
        "; pass it with --input ", vi.name, "=FILE.npy");
  Shape shape;
  for (int64_t d : vi.shape) shape.push_back(d < 0 ? 1 : d);
  Tensor t(vi.dtype, shape);
  const bool mask = contains_ci(vi.name, "mask");
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  dispatch_dtype(vi.dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, std::string>) {
        p[i] = "tessera";
      } else if constexpr (std::is_same_v<T, bool>) {
        p[i] = mask ? true : (small(rng) & 1);
      } else if (mask) {
        p[i] = from_double<T>(1.0);
      } else if (is_float(vi.dtype) || is_complex(vi.dtype)) {
        p[i] = from_double<T>(uni(rng));
      } else {
        p[i] = from_double<T>(double(small(rng)));
      }
    }
  });
  return t;
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

  std::map<std::string, DataValue> feeds;
  std::map<std::string, const ValueInfo*> by_name;
  for (const ValueInfo& vi : session.inputs()) by_name[vi.name] = &vi;
  for (const std::string& spec : o.inputs) {
    const size_t eq = spec.find('=');
    check_arg(eq != std::string::npos && eq > 0, "--input expects NAME=FILE.npy, got '", spec, "'");
    const std::string name = spec.substr(0, eq);
    check_arg(by_name.count(name), "--input: the model has no input named '", name, "'");
    feeds[name] = read_npy(spec.substr(eq + 1));
  }
  std::mt19937_64 rng(o.seed);
  for (const ValueInfo& vi : session.inputs()) {
    if (feeds.count(vi.name)) continue;
    if (vi.type.rfind("seq(", 0) == 0)
      feeds[vi.name] = DataValue::make_sequence({random_tensor(vi, rng)}, vi.dtype);
    else
      feeds[vi.name] = random_tensor(vi, rng);
  }

  std::vector<double> times;
  std::vector<DataValue> outs;
  for (int i = 0; i < o.repeat; ++i) {
    auto t1 = Clock::now();
    outs = session.run(feeds);
    times.push_back(ms_since(t1));
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);

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
  std::snprintf(buf, sizeof buf, "session: %.3f ms  run: median %.3f ms over %d run%s (min %.3f ms, max %.3f ms)\n",
                load_ms, median, o.repeat, o.repeat == 1 ? "" : "s", sorted.front(), sorted.back());
  std::cout << buf;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model on given or random inputs");
  cmd->add_option("model", opts->model, "the .onnx file")->required();
  cmd->add_option("--input,-i", opts->inputs, "NAME=FILE.npy (repeatable); others get random data");
  cmd->add_option("--output-dir,-o", opts->output_dir, "write each output as NAME.npy here");
  cmd->add_option("--threads,-t", opts->threads, "worker threads (0: one per core)");
  cmd->add_option("--repeat,-r", opts->repeat, "run N times and report the median time");
  cmd->add_option("--opt-level", opts->optimization_level, "0: run the graph as imported");
  cmd->add_option("--seed", opts->seed, "seed for the random inputs");
  cmd->callback([opts] { run_model(*opts); });
}

}  // namespace tessera::tools
