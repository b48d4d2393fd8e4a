// tessera_node_tests: runs ONNX's backend node tests (model.onnx + test_data_set_*/{input,output}_*.pb)
// through tessera::Session and compares like onnx's own harness does: same shape, same dtype,
// |out - ref| <= atol + rtol * |ref| (NaN equals NaN), strings equal. Per-test rtol/atol come from
// the test's data.json when present.
//
//   tessera_node_tests [--data DIR] [--filter REGEX] [--xfail FILE] [--verbose]
//
// The pytest suite (tests/python/test_onnx_node.py) runs the same tests through onnx's
// harness and tessera.backend; this binary is the fast developer loop.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_loader.h"
#include "tessera/tessera.h"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

frontend::onnx::ValueKind kind_of(const ValueInfo& vi) {
  if (vi.type.rfind("seq", 0) == 0) return frontend::onnx::ValueKind::sequence;
  if (vi.type.rfind("optional", 0) == 0) return frontend::onnx::ValueKind::optional;
  return frontend::onnx::ValueKind::tensor;
}

// Returns "" when equal, else the reason.
std::string compare_tensor(const Tensor& out, const Tensor& ref, double rtol, double atol) {
  if (out.shape() != ref.shape())
    return cat("shape ", shape_str(out.shape()), " != expected ", shape_str(ref.shape()));
  if (out.dtype() != ref.dtype())
    return cat("dtype ", dtype_name(out.dtype()), " != expected ", dtype_name(ref.dtype()));
  const Tensor o = out.contiguous(), r = ref.contiguous();
  if (ref.dtype() == DType::string) {
    for (int64_t i = 0; i < r.numel(); ++i)
      if (o.data<std::string>()[i] != r.data<std::string>()[i])
        return cat("string mismatch at ", i, ": '", o.data<std::string>()[i], "' vs '", r.data<std::string>()[i], "'");
    return "";
  }
  const bool cplx = is_complex(ref.dtype());
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < r.numel(); ++i) {
    auto check_one = [&](double a, double b) {
      if (std::isnan(a) && std::isnan(b)) return true;
      if (std::isinf(a) || std::isinf(b)) return a == b;
      const double d = std::fabs(a - b);
      worst = std::max(worst, d);
      return d <= atol + rtol * std::fabs(b);
    };
    bool ok;
    if (cplx) {
      ok = dispatch_dtype(ref.dtype(), [&]<typename T>() -> bool {
        if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) {
          const T a = o.data<T>()[i], b = r.data<T>()[i];
          return check_one(a.real(), b.real()) && check_one(a.imag(), b.imag());
        } else {
          return false;
        }
      });
    } else {
      ok = check_one(o.at_double(i), r.at_double(i));
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad)
    return cat(bad, "/", r.numel(), " elements differ (first at ", first, ": ", o.at_double(first), " vs ",
               r.at_double(first), ", max abs diff ", worst, ")");
  return "";
}

std::string compare_value(const DataValue& out, const DataValue& ref, double rtol, double atol) {
  if (ref.kind == DataValue::Kind::sequence) {
    if (out.kind != DataValue::Kind::sequence) return "expected a sequence";
    if (out.sequence.size() != ref.sequence.size())
      return cat("sequence length ", out.sequence.size(), " != ", ref.sequence.size());
    for (size_t i = 0; i < ref.sequence.size(); ++i) {
      std::string e = compare_tensor(out.sequence[i], ref.sequence[i], rtol, atol);
      if (!e.empty()) return cat("sequence[", i, "]: ", e);
    }
    return "";
  }
  if (ref.kind == DataValue::Kind::optional_none)
    return out.kind == DataValue::Kind::optional_none ? "" : "expected an empty optional";
  if (out.kind != DataValue::Kind::tensor) return "expected a tensor";
  return compare_tensor(out.tensor, ref.tensor, rtol, atol);
}

std::pair<double, double> tolerances(const fs::path& dir) {
  double rtol = 1e-3, atol = 1e-7;
  std::ifstream f(dir / "data.json");
  if (!f) return {rtol, atol};
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  auto grab = [&](const char* key, double& v) {
    std::smatch m;
    if (std::regex_search(s, m, std::regex(std::string("\"") + key + "\"\\s*:\\s*([0-9eE.+-]+)")))
      v = std::stod(m[1]);
  };
  grab("rtol", rtol);
  grab("atol", atol);
  return {rtol, atol};
}

// Runs one test directory; returns "" on success, else the reason.
std::string run_test(const fs::path& dir) {
  const auto [rtol, atol] = tolerances(dir);
  Session s((dir / "model.onnx").string(), SessionOptions{.threads = 1});
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  for (const fs::path& set : sets) {
    std::map<std::string, DataValue> feeds;
    for (size_t i = 0;; ++i) {
      const fs::path p = set / cat("input_", i, ".pb");
      if (!fs::exists(p)) break;
      if (i >= s.inputs().size()) return "more input files than model inputs";
      const auto bytes = read_file(p);
      feeds[s.inputs()[i].name] = frontend::onnx::load_value(bytes, kind_of(s.inputs()[i]));
    }
    std::vector<DataValue> outs = s.run(feeds);
    for (size_t i = 0;; ++i) {
      const fs::path p = set / cat("output_", i, ".pb");
      if (!fs::exists(p)) break;
      if (i >= outs.size()) return "fewer outputs than expected";
      const auto bytes = read_file(p);
      const DataValue ref = frontend::onnx::load_value(bytes, kind_of(s.outputs()[i]));
      std::string e = compare_value(outs[i], ref, rtol, atol);
      if (!e.empty()) return cat(set.filename().string(), " output ", i, " (", s.outputs()[i].name, "): ", e);
    }
  }
  return "";
}

std::string default_data_dir() {
  FILE* p = popen("python3 -c \"import onnx,os;print(os.path.dirname(onnx.__file__))\" 2>/dev/null", "r");
  if (!p) return {};
  char buf[4096] = {0};
  std::string s = fgets(buf, sizeof buf, p) ? buf : "";
  pclose(p);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.empty() ? s : s + "/backend/test/data/node";
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir, filter = ".*", xfail_path;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data_dir = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--xfail" && i + 1 < argc) xfail_path = argv[++i];
    else if (a == "--verbose" || a == "-v") verbose = true;
    else {
      std::cerr << "usage: tessera_node_tests [--data DIR] [--filter REGEX] [--xfail FILE] [--verbose]\n";
      return 2;
    }
  }
  if (data_dir.empty()) data_dir = default_data_dir();
  if (data_dir.empty() || !fs::is_directory(data_dir)) {
    std::cerr << "tessera_node_tests: no node test data (pass --data DIR)\n";
    return 2;
  }
  std::set<std::string> xfail;
  if (!xfail_path.empty()) {
    std::ifstream f(xfail_path);
    for (std::string line; std::getline(f, line);) {
      line = line.substr(0, line.find('#'));
      line.erase(0, line.find_first_not_of(" \t"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty()) xfail.insert(line);
    }
  }
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(data_dir))
    if (e.is_directory()) tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  const std::regex re(filter);
  int passed = 0, failed = 0, xfailed = 0, xpassed = 0;
  std::map<std::string, int> fail_by_kind;
  for (const fs::path& t : tests) {
    const std::string name = t.filename().string();
    if (!std::regex_search(name, re)) continue;
    std::string err;
    try {
      err = run_test(t);
    } catch (const std::exception& e) {
      err = e.what();
    }
    const bool expected_fail = xfail.count(name) > 0;
    if (err.empty()) {
      ++passed;
      if (expected_fail) {
        ++xpassed;
        std::cout << "XPASS " << name << "\n";
      } else if (verbose) {
        std::cout << "PASS  " << name << "\n";
      }
    } else if (expected_fail) {
      ++xfailed;
      if (verbose) std::cout << "XFAIL " << name << ": " << err << "\n";
    } else {
      ++failed;
      std::cout << "FAIL  " << name << ": " << err << "\n";
    }
  }
  const int total = passed + failed + xfailed;
  std::printf("node tests: %d passed, %d failed, %d expected failures (%d unexpectedly passed); pass rate %.1f%%\n",
              passed, failed, xfailed, xpassed, total ? 100.0 * passed / total : 0.0);
  return failed ? 1 : 0;
}
