#include "tools/feeds.h"

#include <algorithm>
#include <cctype>
#include <random>

#include "tools/npy.h"

namespace tessera::tools {

namespace {

bool contains_ci(std::string s, const std::string& needle) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s.find(needle) != std::string::npos;
}

// A random tensor of the input's type and shape (symbolic dims from --dim, others 1):
// floats uniform in [-1, 1), integers small and non-negative (token ids,
// indices; 0/1 for anything named like a token type), anything named like a
// mask all ones.
Tensor random_tensor(const ValueInfo& vi, const std::map<std::string, int64_t>& dims, std::mt19937_64& rng) {
  check(vi.dtype != DType::undefined, ErrorCode::unsupported, "input '", vi.name, "' has type ", vi.type,
        "; pass it with --input ", vi.name, "=FILE.npy");
  Shape shape;
  for (size_t i = 0; i < vi.shape.size(); ++i) {
    int64_t d = vi.shape[i];
    if (d < 0) {
      const std::string sym = i < vi.dim_names.size() ? vi.dim_names[i] : "";
      auto it = dims.find(sym);
      d = it != dims.end() ? it->second : 1;
    }
    shape.push_back(d);
  }
  Tensor t(vi.dtype, shape);
  const bool mask = contains_ci(vi.name, "mask");
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, contains_ci(vi.name, "type") ? 1 : 9);
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

}  // namespace

std::map<std::string, DataValue> make_feeds(const Session& session,
                                            const std::vector<std::string>& input_specs,
                                            const std::vector<std::string>& dim_specs, uint64_t seed) {
  std::map<std::string, int64_t> dims;
  for (const std::string& spec : dim_specs) {
    const size_t eq = spec.find('=');
    check_arg(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(), "--dim expects NAME=VALUE, got '",
              spec, "'");
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(spec.substr(eq + 1), &used);
      check_arg(used == spec.size() - eq - 1, "");
    } catch (...) {
      throw Error(ErrorCode::invalid_argument, cat("--dim ", spec, ": the value must be an integer"));
    }
    check_arg(v >= 0 && v <= (int64_t(1) << 31), "--dim ", spec, ": the value must be in [0, 2^31]");
    dims[spec.substr(0, eq)] = v;
  }
  std::map<std::string, DataValue> feeds;
  std::map<std::string, const ValueInfo*> by_name;
  for (const ValueInfo& vi : session.inputs()) by_name[vi.name] = &vi;
  for (const std::string& spec : input_specs) {
    const size_t eq = spec.find('=');
    check_arg(eq != std::string::npos && eq > 0, "--input expects NAME=FILE.npy, got '", spec, "'");
    const std::string name = spec.substr(0, eq);
    check_arg(by_name.count(name), "--input: the model has no input named '", name, "'");
    feeds[name] = read_npy(spec.substr(eq + 1));
  }
  std::mt19937_64 rng(seed);
  for (const ValueInfo& vi : session.inputs()) {
    if (feeds.count(vi.name)) continue;
    if (vi.type.rfind("seq(", 0) == 0)
      feeds[vi.name] = DataValue::make_sequence({random_tensor(vi, dims, rng)}, vi.dtype);
    else
      feeds[vi.name] = random_tensor(vi, dims, rng);
  }
  return feeds;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

}  // namespace tessera::tools
