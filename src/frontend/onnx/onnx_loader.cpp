// ModelProto -> ir::Model: graphs (and subgraphs), values, initializers,
// Constant nodes, attributes, and inlining of model-local functions.
// Opset canonicalization is in onnx_canonicalize.cpp.
#include "frontend/onnx/onnx_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#if defined(__unix__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/error.h"
#include "frontend/onnx/onnx_internal.h"

namespace tessera::frontend::onnx {

namespace {
namespace pb = tessera_onnx;
using OpsetMap = std::map<std::string, int>;

std::string norm_domain(const std::string& d) {
  return d == "ai.onnx" ? std::string() : d;
}

OpsetMap read_opsets(const google::protobuf::RepeatedPtrField<pb::OperatorSetIdProto>& ops) {
  OpsetMap m;
  for (const auto& o : ops) {
    check_model(o.version() > 0 && o.version() < 100000, "opset_import for domain '", o.domain(),
                "' has invalid version ", o.version());
    m[norm_domain(o.domain())] = int(o.version());
  }
  return m;
}

// A node to import: either one of the graph's own (borrowed) or an inlined
// function-body node (owned, renamed), with the opsets that apply to it.
struct PendingNode {
  const pb::NodeProto* node = nullptr;
  std::shared_ptr<pb::NodeProto> owned;
  const OpsetMap* opsets = nullptr;
};

constexpr int kMaxInlineDepth = 32;
constexpr int kMaxGraphDepth = 64;
// Inlining can multiply (a function calling another twice, 32 levels deep):
// the total number of inlined nodes is capped.
constexpr int64_t kMaxInlinedNodes = 1 << 20;

class Importer {
 public:
  Importer(const pb::ModelProto& mp, const LoadOptions& opts, std::string external_dir) : opts_(opts) {
    src_.external_dir = std::move(external_dir);
    src_.opts = &opts_;
    ir_version_ = mp.ir_version();
    model_opsets_ = read_opsets(mp.opset_import());
    if (mp.opset_import_size() == 0) model_opsets_[""] = 1;  // IR v1/v2 default
    for (const auto& f : mp.functions()) {
      auto key = std::make_tuple(norm_domain(f.domain()), f.name(), f.overload());
      check_model(!functions_.count(key), "model-local function '", f.domain(), ".", f.name(),
                  "' is defined twice");
      functions_[key] = &f;
      function_opsets_[&f] = read_opsets(f.opset_import());
    }
  }

  const OpsetMap& model_opsets() const { return model_opsets_; }

  void import_graph(const pb::GraphProto& gp, ir::Graph& g, const OpsetMap& opsets, int depth) {
    check_model(depth < kMaxGraphDepth, "subgraphs nested deeper than ", kMaxGraphDepth);
    if (g.name.empty()) g.name = gp.name();
    // Graph inputs.
    for (const auto& vi : gp.input()) {
      check_model(!vi.name().empty(), "graph '", gp.name(), "' has an input without a name");
      ir::Value* v = g.add_value(vi.name());
      if (vi.has_type()) v->type = detail::decode_type(vi.type(), cat("graph input '", vi.name(), "'"));
      g.inputs.push_back(v);
    }
    // Initializers (an initializer that is also an input is an overridable default).
    auto add_initializer = [&](const std::string& name, Tensor t) {
      check_model(!name.empty(), "graph '", gp.name(), "' has an initializer without a name");
      ir::Value* v = g.find_local_value(name);
      if (v)
        check_model(!v->initializer, "initializer '", name, "' is defined twice");
      else
        v = g.add_value(name);
      v->type = ir::TypeInfo::tensor_of(t);
      v->initializer = std::move(t);
    };
    detail::TensorSource adopt = src_;
    adopt.adopt_raw_data = true;  // initializers are decoded once, from the importer's own proto
    for (const auto& tp : gp.initializer()) add_initializer(tp.name(), detail::decode_tensor(tp, adopt));
    for (const auto& sp : gp.sparse_initializer())
      add_initializer(sp.values().name(), detail::decode_sparse(sp, src_));
    // Before IR version 4 every initializer had to be listed among the inputs too, and was a constant, not an
    // overridable default (as onnxruntime reads such models): the ONNX model zoo's older CNNs would otherwise
    // keep every weight a run-time input, so no conv or GEMM would be fused or prepacked.
    if (ir_version_ > 0 && ir_version_ < 4)
      std::erase_if(g.inputs, [](const ir::Value* v) { return v->initializer.has_value(); });

    // Expand function calls, then create every node output before connecting
    // inputs (nodes may be listed out of order; subgraphs see all outer values).
    std::vector<PendingNode> nodes;
    for (const auto& np : gp.node()) expand(PendingNode{&np, nullptr, &opsets}, nodes, 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const pb::NodeProto& np = *nodes[i].node;
      for (const auto& out : np.output()) {
        if (out.empty()) continue;
        try {
          g.add_value(out);
        } catch (const Error& e) {
          throw e.at_node(node_name(np, i), np.op_type());
        }
      }
    }
    for (size_t i = 0; i < nodes.size(); ++i) import_node(nodes[i], i, g, depth);

    // Graph outputs (may name an outer value in a subgraph).
    for (const auto& vi : gp.output()) {
      ir::Value* v = g.find_value(vi.name());
      check_model(v != nullptr, "graph '", gp.name(), "' output '", vi.name(),
                  "' is not produced by any node, input or initializer");
      if (vi.has_type() && v->owner == &g && !v->initializer) {
        ir::TypeInfo t = detail::decode_type(vi.type(), cat("graph output '", vi.name(), "'"));
        if (t.kind != ir::TypeInfo::Kind::unknown) v->type = std::move(t);
      }
      g.outputs.push_back(v);
    }
    for (const auto& vi : gp.value_info()) {
      ir::Value* v = g.find_local_value(vi.name());
      if (!v || v->initializer || !vi.has_type()) continue;  // value_info of an unused name is harmless
      ir::TypeInfo t = detail::decode_type(vi.type(), cat("value_info '", vi.name(), "'"));
      if (t.kind != ir::TypeInfo::Kind::unknown) v->type = std::move(t);
    }
    g.topological_sort();
  }

 private:
  static std::string node_name(const pb::NodeProto& np, size_t index) {
    return np.name().empty() ? cat(np.op_type(), "_", index) : np.name();
  }

  const pb::FunctionProto* find_function(const pb::NodeProto& np) const {
    auto it = functions_.find(std::make_tuple(norm_domain(np.domain()), np.op_type(), np.overload()));
    return it == functions_.end() ? nullptr : it->second;
  }

  // Number of nodes a call of f expands to (saturating past the cap).
  int64_t expanded_size(const pb::FunctionProto* f, int depth) {
    check_model(depth < kMaxInlineDepth, "function '", f->name(), "' calls itself (or nests deeper than ",
                kMaxInlineDepth, ")");
    if (auto it = expanded_size_.find(f); it != expanded_size_.end()) return it->second;
    int64_t total = 0;
    for (const auto& body : f->node()) {
      const pb::FunctionProto* callee = find_function(body);
      total += callee ? expanded_size(callee, depth + 1) : 1;
      total = std::min(total, kMaxInlinedNodes + 1);
    }
    expanded_size_[f] = total;
    return total;
  }

  // Appends `pn`, or (for a call of a model-local function) its inlined body.
  void expand(PendingNode pn, std::vector<PendingNode>& out, int depth) {
    const pb::FunctionProto* f = find_function(*pn.node);
    if (!f) {
      out.push_back(std::move(pn));
      return;
    }
    const pb::NodeProto& call = *pn.node;
    check_model(depth < kMaxInlineDepth, "function '", f->name(), "' calls itself (or nests deeper than ",
                kMaxInlineDepth, ")");
    check_model(call.input_size() <= f->input_size() && call.output_size() <= f->output_size(),
                "call of function '", f->name(), "' (node '", call.name(), "') has ", call.input_size(),
                " inputs / ", call.output_size(), " outputs; the function takes ", f->input_size(), " / ",
                f->output_size());
    const std::string prefix =
        cat(call.name().empty() ? f->name() : call.name(), "/", f->name(), "#", inline_counter_++, "/");
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f->input_size(); ++i)
      rename[f->input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f->output_size(); ++i)
      rename[f->output(i)] =
          i < call.output_size() && !call.output(i).empty() ? call.output(i) : prefix + f->output(i);
    // Attribute bindings: the call's attributes, then the function's defaults.
    std::map<std::string, const pb::AttributeProto*> bound;
    for (const auto& a : f->attribute_proto()) bound[a.name()] = &a;
    for (const auto& a : call.attribute()) bound[a.name()] = &a;
    auto map_name = [&](const std::string& n) -> std::string {
      if (n.empty()) return n;
      auto it = rename.find(n);
      return it != rename.end() ? it->second : prefix + n;
    };
    const OpsetMap* fopsets = &function_opsets_.at(f);
    if (depth == 0) {  // checked once per top-level call, before any copying
      inlined_nodes_ += expanded_size(f, 0);
      check_model(inlined_nodes_ <= kMaxInlinedNodes,
                  "inlining model-local functions would create more than ", kMaxInlinedNodes, " nodes");
    }
    for (const auto& body : f->node()) {
      auto copy = std::make_shared<pb::NodeProto>(body);
      rewrite_node(*copy, map_name, bound, f->name());
      if (!copy->name().empty()) copy->set_name(prefix + copy->name());
      // Opsets inside a function: its own imports, falling back to the model's.
      const OpsetMap* ops = fopsets;
      if (!fopsets->count(norm_domain(copy->domain()))) ops = &model_opsets_;
      expand(PendingNode{copy.get(), copy, ops}, out, depth + 1);
    }
  }

  template <typename F>
  static void rewrite_graph(pb::GraphProto& g, const F& map_name,
                            const std::map<std::string, const pb::AttributeProto*>& bound,
                            const std::string& fn) {
    for (auto& vi : *g.mutable_input()) vi.set_name(map_name(vi.name()));
    for (auto& vi : *g.mutable_output()) vi.set_name(map_name(vi.name()));
    for (auto& vi : *g.mutable_value_info()) vi.set_name(map_name(vi.name()));
    for (auto& t : *g.mutable_initializer()) t.set_name(map_name(t.name()));
    for (auto& s : *g.mutable_sparse_initializer()) s.mutable_values()->set_name(map_name(s.values().name()));
    for (auto& n : *g.mutable_node()) rewrite_node(n, map_name, bound, fn);
  }

  template <typename F>
  static void rewrite_node(pb::NodeProto& n, const F& map_name,
                           const std::map<std::string, const pb::AttributeProto*>& bound,
                           const std::string& fn) {
    for (auto& s : *n.mutable_input()) s = map_name(s);
    for (auto& s : *n.mutable_output()) s = map_name(s);
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size();) {
      pb::AttributeProto& a = attrs->at(i);
      if (!a.ref_attr_name().empty()) {
        auto it = bound.find(a.ref_attr_name());
        if (it == bound.end()) {  // unbound reference: the attribute is absent
          attrs->DeleteSubrange(i, 1);
          continue;
        }
        const std::string name = a.name();
        a = *it->second;  // the caller's value: its graphs (if any) already name the caller's values
        a.set_name(name);
        a.clear_ref_attr_name();
        ++i;
        continue;
      }
      if (a.has_g()) rewrite_graph(*a.mutable_g(), map_name, bound, fn);
      for (auto& sg : *a.mutable_graphs()) rewrite_graph(sg, map_name, bound, fn);
      ++i;
    }
  }

  Attribute import_attr(const pb::AttributeProto& a, ir::Graph& g, const std::string& where,
                        const OpsetMap& opsets, int depth) {
    check_model(a.ref_attr_name().empty(), where, ": attribute '", a.name(), "' refers to '",
                a.ref_attr_name(), "' outside a function");
    using AT = pb::AttributeProto;
    AT::AttributeType type = a.type();
    if (type == AT::UNDEFINED) {  // old models: infer from the field that is set
      if (a.has_f())
        type = AT::FLOAT;
      else if (a.has_i())
        type = AT::INT;
      else if (a.has_s())
        type = AT::STRING;
      else if (a.has_t())
        type = AT::TENSOR;
      else if (a.has_g())
        type = AT::GRAPH;
      else if (a.has_sparse_tensor())
        type = AT::SPARSE_TENSOR;
      else if (a.has_tp())
        type = AT::TYPE_PROTO;
      else if (a.floats_size())
        type = AT::FLOATS;
      else if (a.ints_size())
        type = AT::INTS;
      else if (a.strings_size())
        type = AT::STRINGS;
      else if (a.tensors_size())
        type = AT::TENSORS;
      else if (a.graphs_size())
        type = AT::GRAPHS;
      else if (a.sparse_tensors_size())
        type = AT::SPARSE_TENSORS;
      else
        throw Error(ErrorCode::invalid_model,
                    cat(where, ": attribute '", a.name(), "' has no type and no value"));
    }
    auto subgraph = [&](const pb::GraphProto& gp) {
      auto sg = std::make_shared<ir::Graph>();
      sg->parent = &g;
      sg->name = gp.name();
      import_graph(gp, *sg, opsets, depth + 1);
      return std::shared_ptr<Subgraph>(sg);
    };
    Attribute r;
    switch (type) {
      case AT::FLOAT:
        r.kind = Attribute::Kind::f;
        r.f = a.f();
        break;
      case AT::INT:
        r.kind = Attribute::Kind::i;
        r.i = a.i();
        break;
      case AT::STRING:
        r.kind = Attribute::Kind::s;
        r.s = a.s();
        break;
      case AT::TENSOR:
        r.kind = Attribute::Kind::t;
        r.t = detail::decode_tensor(a.t(), src_);
        break;
      case AT::SPARSE_TENSOR:
        r.kind = Attribute::Kind::t;
        r.t = detail::decode_sparse(a.sparse_tensor(), src_);
        break;
      case AT::GRAPH:
        r.kind = Attribute::Kind::g;
        r.g = subgraph(a.g());
        break;
      case AT::TYPE_PROTO: {
        r.kind = Attribute::Kind::type_proto;
        ir::TypeInfo ti = detail::decode_type(a.tp(), cat(where, ": attribute '", a.name(), "'"));
        r.type_elem = ti.elem;
        break;
      }
      case AT::FLOATS:
        r.kind = Attribute::Kind::floats;
        r.floats.assign(a.floats().begin(), a.floats().end());
        break;
      case AT::INTS:
        r.kind = Attribute::Kind::ints;
        r.ints.assign(a.ints().begin(), a.ints().end());
        break;
      case AT::STRINGS:
        r.kind = Attribute::Kind::strings;
        r.strings.assign(a.strings().begin(), a.strings().end());
        break;
      case AT::TENSORS:
        r.kind = Attribute::Kind::tensors;
        for (const auto& t : a.tensors()) r.tensors.push_back(detail::decode_tensor(t, src_));
        break;
      case AT::SPARSE_TENSORS:
        r.kind = Attribute::Kind::tensors;
        for (const auto& t : a.sparse_tensors()) r.tensors.push_back(detail::decode_sparse(t, src_));
        break;
      case AT::GRAPHS:
        r.kind = Attribute::Kind::graphs;
        for (const auto& gp : a.graphs()) r.graphs.push_back(subgraph(gp));
        break;
      default:
        throw Error(ErrorCode::unsupported,
                    cat(where, ": attribute '", a.name(), "' has unsupported type ", int(type)));
    }
    return r;
  }

  // A Constant node becomes an initializer on its output value.
  Tensor constant_value(const pb::NodeProto& np, const std::string& where) {
    check_model(np.attribute_size() == 1, where, ": Constant needs exactly one value attribute, has ",
                np.attribute_size());
    const pb::AttributeProto& a = np.attribute(0);
    const std::string& k = a.name();
    check_model(a.ref_attr_name().empty(), where, ": attribute reference outside a function");
    if (k == "value") return detail::decode_tensor(a.t(), src_);
    if (k == "sparse_value") return detail::decode_sparse(a.sparse_tensor(), src_);
    if (k == "value_float") return Tensor::scalar<float>(a.f());
    if (k == "value_int") return Tensor::scalar<int64_t>(a.i());
    if (k == "value_string") return Tensor::scalar<std::string>(a.s());
    if (k == "value_floats") {
      std::vector<float> v(a.floats().begin(), a.floats().end());
      return Tensor::from_vector(v, {int64_t(v.size())});
    }
    if (k == "value_ints") {
      std::vector<int64_t> v(a.ints().begin(), a.ints().end());
      return Tensor::from_vector(v, {int64_t(v.size())});
    }
    if (k == "value_strings") {
      std::vector<std::string> v(a.strings().begin(), a.strings().end());
      return Tensor::from_vector(v, {int64_t(v.size())});
    }
    throw Error(ErrorCode::invalid_model, cat(where, ": Constant has unknown attribute '", k, "'"));
  }

  void import_node(const PendingNode& pn, size_t index, ir::Graph& g, int depth) {
    const pb::NodeProto& np = *pn.node;
    const std::string name = node_name(np, index);
    const std::string domain = norm_domain(np.domain());
    try {
      check_model(!np.op_type().empty(), "node has no op_type");
      auto ov = pn.opsets->find(domain);
      check_model(ov != pn.opsets->end(), "domain '", domain, "' is not in the model's opset_import");
      if (domain.empty() && np.op_type() == "Constant") {
        check_model(np.input_size() == 0 && np.output_size() == 1 && !np.output(0).empty(),
                    "Constant must have no inputs and one output");
        ir::Value* v = g.find_local_value(np.output(0));
        Tensor t = constant_value(np, cat("node '", name, "'"));
        v->type = ir::TypeInfo::tensor_of(t);
        v->initializer = std::move(t);
        return;
      }
      ir::Node* n = g.add_node(np.op_type(), name);
      n->domain = domain;
      n->opset = ov->second;
      for (const auto& a : np.attribute()) {
        check_model(!n->attrs.count(a.name()), "attribute '", a.name(), "' is given twice");
        n->attrs[a.name()] = import_attr(a, g, cat("node '", name, "'"), *pn.opsets, depth);
      }
      for (const auto& in : np.input()) {
        if (in.empty()) {
          g.connect_input(n, nullptr);
          continue;
        }
        ir::Value* v = g.find_value(in);
        check_model(v != nullptr, "input '", in,
                    "' is not defined (no graph input, initializer or node output has that name)");
        g.connect_input(n, v);
      }
      for (const auto& out : np.output())
        g.connect_output(n, out.empty() ? nullptr : g.find_local_value(out));
    } catch (const Error& e) {
      throw e.at_node(name, np.op_type());
    }
  }

  LoadOptions opts_;
  detail::TensorSource src_;
  OpsetMap model_opsets_;
  std::map<std::tuple<std::string, std::string, std::string>, const pb::FunctionProto*> functions_;
  std::map<const pb::FunctionProto*, OpsetMap> function_opsets_;
  int64_t ir_version_ = 0;
  int inline_counter_ = 0;
  int64_t inlined_nodes_ = 0;
  std::map<const pb::FunctionProto*, int64_t> expanded_size_;
};

ir::Model import_model(const pb::ModelProto& mp, const LoadOptions& opts, const std::string& external_dir) {
  ir::Model m;
  m.ir_version = mp.ir_version();
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  for (const auto& kv : mp.metadata_props()) m.metadata[kv.key()] = kv.value();
  check_model(mp.has_graph(), "model has no graph");
  Importer imp(mp, opts, external_dir);
  m.opsets = imp.model_opsets();
  imp.import_graph(mp.graph(), *m.graph, imp.model_opsets(), 0);
  detail::expand_contrib_quant(*m.graph);
  if (opts.canonicalize) detail::canonicalize(*m.graph);
  return m;
}

pb::ModelProto parse_model(std::span<const uint8_t> bytes, const std::string& what) {
  check_model(!bytes.empty(), what, " is empty");
  check_model(bytes.size() < size_t(INT32_MAX), what, " is larger than 2 GiB (use external data)");
  pb::ModelProto mp;
  check_model(mp.ParseFromArray(bytes.data(), int(bytes.size())), what,
              " is not a valid ONNX ModelProto (truncated or corrupt protobuf, ", bytes.size(), " bytes)");
  return mp;
}

}  // namespace

ir::Model load_bytes(std::span<const uint8_t> bytes, const LoadOptions& opts) {
  pb::ModelProto mp = parse_model(bytes, "model");
  return import_model(mp, opts, opts.external_data_dir);
}

ir::Model load_file(const std::string& path, const LoadOptions& opts) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check(fs::is_regular_file(path, ec), ErrorCode::io, "cannot open model '", path, "': not a file");
  const auto size = fs::file_size(path, ec);
  check(!ec, ErrorCode::io, "cannot stat model '", path, "': ", ec.message());
  check_model(size > 0, "model '", path, "' is empty");
  check_model(size < uint64_t(INT32_MAX), "model '", path, "' is larger than 2 GiB (use external data)");
  pb::ModelProto mp;
  bool parsed = false;
#if defined(__unix__)
  // Parsed from a read-only mapping of the file: protobuf then sizes each tensor's bytes once and copies
  // them once from the page cache (from a stream it grows them chunk by chunk, copying and faulting in
  // fresh pages on the way), and the file is never copied whole.
  if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    void* m = ::mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m != MAP_FAILED) {
      ::madvise(m, size_t(size), MADV_SEQUENTIAL);
      parsed = mp.ParseFromArray(m, int(size));
      ::munmap(m, size_t(size));
      check_model(parsed, "model '", path,
                  "' is not a valid ONNX ModelProto (truncated or corrupt protobuf, ", size, " bytes)");
    }
  }
#endif
  if (!parsed) {
    std::ifstream f(path, std::ios::binary);
    check(bool(f), ErrorCode::io, "cannot open model '", path, "'");
    check_model(mp.ParseFromIstream(&f), "model '", path,
                "' is not a valid ONNX ModelProto (truncated or corrupt protobuf, ", size, " bytes)");
  }
  std::string dir = opts.external_data_dir;
  if (dir.empty()) {
    dir = fs::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
  }
  ir::Model m = import_model(mp, opts, dir);
  m.path = path;
  return m;
}

}  // namespace tessera::frontend::onnx
