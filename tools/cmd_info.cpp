// `tessera info MODEL [--ir]`: inputs, outputs, op histogram, parameters and a
// FLOPs estimate from the static shapes; --ir prints the optimized IR.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "frontend/onnx/onnx_loader.h"
#include "ir/op_registry.h"
#include "passes/pass_manager.h"
#include "tessera/tessera.h"
#include "tools/commands.h"

namespace tessera::tools {

namespace {

struct InfoOptions {
  std::string model;
  bool ir = false;
  std::string dump_after;  // a pass name, or "import"
};

std::string human(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s%s" : "%.2f %s%s", v, prefixes[i], unit);
  return buf;
}

// Set when a FLOPs estimate used 1 for a named or unknown dim.
bool g_symbolic_dims = false;

// The shape of v with named/unknown dims taken as 1 (FLOPs per batch item);
// nullopt when the rank is unknown.
std::optional<Shape> static_shape_of(const ir::Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->initializer) return v->initializer->shape();
  if (v->type.kind != ir::TypeInfo::Kind::tensor || !v->type.shape) return std::nullopt;
  Shape s;
  for (const ir::Dim& d : *v->type.shape) {
    if (!d.known()) g_symbolic_dims = true;
    s.push_back(d.known() ? d.value : 1);
  }
  return s;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// FLOPs of one node (2 per multiply-add for the contractions; one per output
// element otherwise); nullopt when the shapes it needs are not static.
std::optional<double> node_flops(const ir::Node& n) {
  auto in = [&](size_t i) { return i < n.inputs.size() ? static_shape_of(n.inputs[i]) : std::nullopt; };
  auto out0 = n.outputs.empty() ? std::nullopt : static_shape_of(n.outputs[0]);
  if (n.domain.empty() || n.domain == "ai.onnx") {
    if (n.op_type == "MatMul" || n.op_type == "MatMulInteger" || n.op_type == "QLinearMatMul") {
      auto a = in(0);
      if (!a || !out0 || a->empty()) return std::nullopt;
      return 2.0 * double(numel_of(*out0)) * double(a->back());
    }
    if (n.op_type == "Gemm") {
      auto a = in(0);
      if (!a || !out0 || a->size() != 2) return std::nullopt;
      const Attribute* ta = n.attr("transA");
      const int64_t k = (ta && ta->i) ? (*a)[0] : (*a)[1];
      return 2.0 * double(numel_of(*out0)) * double(k);
    }
    if (n.op_type == "Conv" || n.op_type == "ConvInteger" || n.op_type == "QLinearConv") {
      auto w = in(n.op_type == "QLinearConv" ? 3 : 1);
      if (!w || !out0 || w->size() < 2) return std::nullopt;
      return 2.0 * double(numel_of(*out0)) * double(numel_of(Shape(w->begin() + 1, w->end())));
    }
    if (n.op_type == "ConvTranspose") {
      auto x = in(0), w = in(1);
      if (!x || !w || w->size() < 2) return std::nullopt;
      return 2.0 * double(numel_of(*x)) * double(numel_of(Shape(w->begin() + 1, w->end())));
    }
  }
  if (!out0) return std::nullopt;
  return double(numel_of(*out0));
}

struct Stats {
  std::map<std::string, int64_t> histogram;
  int64_t params = 0, param_bytes = 0, nodes = 0, unknown_flops_nodes = 0;
  double flops = 0;
  std::set<const ir::Value*> seen;
};

void walk(const ir::Graph& g, Stats& st) {
  for (const auto& v : g.values())
    if (v->initializer && st.seen.insert(v.get()).second) {
      st.params += v->initializer->numel();
      if (v->initializer->dtype() != DType::string) st.param_bytes += int64_t(v->initializer->nbytes());
    }
  for (const auto& n : g.nodes()) {
    ++st.nodes;
    st.histogram[n->domain.empty() || n->domain == "ai.onnx" ? n->op_type : n->domain + ":" + n->op_type]++;
    if (auto f = node_flops(*n))
      st.flops += *f;
    else
      ++st.unknown_flops_nodes;
    for (const ir::Graph* sg : n->subgraphs()) walk(*sg, st);
  }
}

std::string value_line(const ir::Value* v) {
  if (v == nullptr) return "  (omitted)";
  return cat("  ", v->name, ": ", v->type.str());
}

void print_info(const InfoOptions& o) {
  if (!o.dump_after.empty() && o.dump_after != "import") {
    const auto names = passes::pass_names();
    std::string known = "import";
    for (const std::string& n : names) known += ", " + n;
    check_arg(std::find(names.begin(), names.end(), o.dump_after) != names.end(),
              "--dump-after: no pass named '", o.dump_after, "' (passes, in order: ", known, ")");
  }
  ir::Model model = frontend::onnx::load_file(o.model);
  ir::Graph& g = *model.graph;
  std::string inference_note;
  try {
    ir::infer_shapes(g);
  } catch (const Error& e) {
    inference_note = e.what();
  }
  Stats st;
  walk(g, st);

  std::cout << "model: " << o.model << "\n";
  if (!model.producer_name.empty())
    std::cout << "producer: " << model.producer_name << " " << model.producer_version << "\n";
  if (model.ir_version) std::cout << "ir_version: " << model.ir_version << "\n";
  if (!model.opsets.empty()) {
    std::cout << "opsets:";
    for (const auto& [d, v] : model.opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
    std::cout << "\n";
  }
  std::cout << "inputs:\n";
  for (const ir::Value* v : g.inputs)
    if (!v->is_constant()) std::cout << value_line(v) << "\n";
  std::cout << "outputs:\n";
  for (const ir::Value* v : g.outputs) std::cout << value_line(v) << "\n";
  std::cout << "nodes: " << st.nodes << "\n";
  std::cout << "op histogram:\n";
  std::vector<std::pair<int64_t, std::string>> hist;
  for (const auto& [op, c] : st.histogram) hist.push_back({-c, op});
  std::sort(hist.begin(), hist.end());
  for (const auto& [c, op] : hist) std::cout << "  " << op << ": " << -c << "\n";
  std::cout << "parameters: " << st.params;
  if (st.params >= 1000) std::cout << " (" << human(double(st.params), "") << ")";
  std::cout << "\n";
  std::cout << "parameter bytes: " << st.param_bytes << " (" << human(double(st.param_bytes), "B") << ")\n";
  std::cout << "FLOPs (estimate): " << human(st.flops, "FLOP");
  if (g_symbolic_dims) std::cout << " (named/unknown dims taken as 1)";
  if (st.unknown_flops_nodes)
    std::cout << " (" << st.unknown_flops_nodes << " nodes of unknown rank not counted)";
  std::cout << "\n";
  if (!inference_note.empty()) std::cout << "note: shape inference stopped: " << inference_note << "\n";
  if (o.ir) {
    Session session(o.model, SessionOptions{.threads = 1});
    std::cout << "\n" << session.graph_text();
  }
  if (!o.dump_after.empty()) {
    std::string text;
    if (o.dump_after == "import") {
      text = ir::to_string(g);
    } else {
      passes::run_pipeline(model, 99, o.dump_after, &text);
    }
    std::cout << "\ngraph after " << o.dump_after << ":\n" << text;
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto opts = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "Describe a model: inputs, outputs, ops, parameters, FLOPs");
  cmd->add_option("model", opts->model, "the .onnx file")->required();
  cmd->add_flag("--ir", opts->ir, "also print the IR after import and optimization");
  cmd->add_option(
      "--dump-after", opts->dump_after,
      "print the graph after this pass ('import' for before any; `tessera info --passes` lists them)");
  cmd->add_flag_callback(
      "--passes",
      [] {
        std::cout << "import";
        for (const std::string& n : passes::pass_names()) std::cout << " " << n;
        std::cout << "\n";
        throw CLI::Success();
      },
      "list the optimization passes in order and exit");
  cmd->callback([opts] { print_info(*opts); });
}

}  // namespace tessera::tools
