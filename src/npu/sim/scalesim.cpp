#include "npu/sim/scalesim.h"

#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "core/error.h"

namespace tessera::npu {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
}  // namespace

int64_t TopologyLayer::ofmap_h() const { return ceil_div(ifmap_h - filter_h + stride, stride); }
int64_t TopologyLayer::ofmap_w() const { return ceil_div(ifmap_w - filter_w + stride, stride); }

std::vector<TopologyLayer> parse_topology_csv(const std::string& text) {
  std::vector<TopologyLayer> layers;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) cells.push_back(trim(cell));
    while (!cells.empty() && cells.back().empty()) cells.pop_back();  // trailing comma
    if (!header_seen) {
      header_seen = true;
      // the header names the columns; a first line whose second cell is a number is data
      bool numeric = cells.size() > 1 && !cells[1].empty() &&
                     cells[1].find_first_not_of("0123456789") == std::string::npos;
      if (!numeric) continue;
    }
    check_arg(cells.size() >= 8, "topology line ", lineno, ": expected 8 fields (name, H, W, R, S, C, N, stride), got ",
              cells.size());
    TopologyLayer l;
    l.name = cells[0];
    int64_t* f[7] = {&l.ifmap_h, &l.ifmap_w, &l.filter_h, &l.filter_w, &l.channels, &l.num_filters, &l.stride};
    for (int i = 0; i < 7; ++i) {
      const std::string& c = cells[size_t(i) + 1];
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(c, &used);
      } catch (...) {
        used = 0;
      }
      check_arg(used == c.size() && !c.empty(), "topology line ", lineno, ": field ", i + 2, " '", c,
                "' is not an integer");
      check_arg(v > 0, "topology line ", lineno, ": field ", i + 2, " must be positive, got ", v);
      *f[i] = v;
    }
    check_arg(l.filter_h <= l.ifmap_h && l.filter_w <= l.ifmap_w, "topology line ", lineno, " (", l.name,
              "): filter larger than the input");
    layers.push_back(l);
  }
  return layers;
}

std::vector<TopologyLayer> read_topology_csv(const std::string& path) {
  std::ifstream f(path);
  check(bool(f), ErrorCode::io, "cannot open topology file '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_topology_csv(ss.str());
}

TopologyLayer gemm_layer(const std::string& name, int64_t m, int64_t n, int64_t k) {
  check_arg(m > 0 && n > 0 && k > 0, "GEMM dimensions must be positive");
  TopologyLayer l;
  l.name = name;
  l.ifmap_h = m;
  l.ifmap_w = 1;
  l.filter_h = l.filter_w = 1;
  l.channels = k;
  l.num_filters = n;
  l.stride = 1;
  return l;
}

ScaleSimResult scalesim_gemm(const std::string& name, int64_t m, int64_t n, int64_t k, int R, int C, Dataflow df) {
  check_arg(m > 0 && n > 0 && k > 0, "GEMM dimensions must be positive");
  check_arg(R > 0 && C > 0, "array dimensions must be positive");
  ScaleSimResult r;
  r.name = name;
  r.m = m;
  r.n = n;
  r.k = k;
  // (rows dimension, cols dimension, streamed dimension) for the dataflow
  int64_t on_rows, on_cols, streamed;
  switch (df) {
    case Dataflow::ws: on_rows = k, on_cols = n, streamed = m; break;
    case Dataflow::os: on_rows = m, on_cols = n, streamed = k; break;
    default: on_rows = k, on_cols = m, streamed = n; break;
  }
  int64_t row_folds = ceil_div(on_rows, R), col_folds = ceil_div(on_cols, C);
  r.folds = row_folds * col_folds;
  r.cycles_per_fold = df == Dataflow::os ? R + C + streamed - 2 : 2 * R + C + streamed - 2;
  r.total_cycles = r.folds * r.cycles_per_fold - 1;
  double map_sum = 0, util_sum = 0;
  // Folds come in four kinds (full/partial rows x full/partial cols): sum in closed form.
  int64_t last_r = on_rows - (row_folds - 1) * R, last_c = on_cols - (col_folds - 1) * C;
  for (int fr = 0; fr < 2; ++fr)
    for (int fc = 0; fc < 2; ++fc) {
      int64_t nr = fr == 0 ? row_folds - 1 : 1, nc = fc == 0 ? col_folds - 1 : 1;
      int64_t ur = fr == 0 ? R : last_r, uc = fc == 0 ? C : last_c;
      double count = double(nr * nc);
      if (count == 0) continue;
      double used = double(ur * uc);
      map_sum += count * used / (double(R) * C);
      util_sum += count * used * double(streamed) / (double(R) * C * double(r.cycles_per_fold));
    }
  r.mapping_eff = 100.0 * map_sum / double(r.folds);
  r.compute_util = 100.0 * util_sum / double(r.folds);
  r.overall_util = 100.0 * double(m) * double(n) * double(k) / (double(R) * C * double(r.total_cycles));
  return r;
}

ScaleSimResult scalesim_layer(const TopologyLayer& l, const ArchConfig& a) {
  check_arg(l.ifmap_h >= l.filter_h && l.ifmap_w >= l.filter_w && l.stride > 0, "layer '", l.name,
            "': bad geometry");
  return scalesim_gemm(l.name, l.gemm_m(), l.gemm_n(), l.gemm_k(), a.rows, a.cols, a.dataflow);
}

std::vector<ScaleSimResult> scalesim_topology(const std::vector<TopologyLayer>& layers, const ArchConfig& a) {
  std::vector<ScaleSimResult> out;
  out.reserve(layers.size());
  for (auto& l : layers) out.push_back(scalesim_layer(l, a));
  return out;
}

void write_compute_report(std::ostream& os, const std::vector<ScaleSimResult>& results) {
  os << "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    os << i << ", " << r.total_cycles << ", " << r.stall_cycles << ", " << std::setprecision(12) << r.overall_util
       << ", " << r.mapping_eff << ", " << r.compute_util << ",\n";
  }
}

}  // namespace tessera::npu
