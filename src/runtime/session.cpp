// Session creation (load, verify, infer, optimize, compile) and the public API.
// Execution lives in executor.cpp.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/memory.h"
#include "frontend/onnx/onnx_loader.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "kernels/x86/gemm_amx.h"
#include "kernels/x86/roofline.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "runtime/session_impl.h"
#include "runtime/shape_only.h"

namespace tessera {

namespace runtime {

namespace {
std::string onnx_elem_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::i16:
      return "int16";
    case DType::u16:
      return "uint16";
    case DType::i32:
      return "int32";
    case DType::u32:
      return "uint32";
    case DType::i64:
      return "int64";
    case DType::u64:
      return "uint64";
    case DType::boolean:
      return "bool";
    case DType::string:
      return "string";
    case DType::c64:
      return "complex64";
    case DType::c128:
      return "complex128";
    case DType::undefined:
      return "undefined";
    default:
      return std::string(dtype_name(t));
  }
}

ValueInfo value_info(const ir::Value& v) {
  ValueInfo vi;
  vi.name = v.name;
  vi.type = onnx_type_string(v.type);
  vi.dtype = v.type.elem;
  vi.has_shape = v.type.has_shape();
  if (v.type.shape) {
    for (const ir::Dim& d : *v.type.shape) {
      vi.shape.push_back(d.known() ? d.value : -1);
      vi.dim_names.push_back(d.known() ? std::string() : d.symbol);
    }
  }
  return vi;
}

// Values of `root`'s scope (owned by `owner`) read anywhere inside g.
void collect_captured(const ir::Graph& g, const CompiledGraph& owner, std::vector<int>& out) {
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->inputs) {
      if (!v) continue;
      auto it = owner.slot_of.find(v);
      if (it != owner.slot_of.end()) out.push_back(it->second);
    }
    for (const ir::Graph* sg : n->subgraphs()) collect_captured(*sg, owner, out);
  }
  for (const ir::Value* v : g.outputs) {
    if (!v) continue;
    auto it = owner.slot_of.find(v);
    if (it != owner.slot_of.end()) out.push_back(it->second);
  }
}
}  // namespace

std::string onnx_type_string(const ir::TypeInfo& t) {
  const std::string e = cat("tensor(", onnx_elem_name(t.elem), ")");
  switch (t.kind) {
    case ir::TypeInfo::Kind::tensor:
      return e;
    case ir::TypeInfo::Kind::sequence:
      return cat("seq(", e, ")");
    case ir::TypeInfo::Kind::optional:
      return t.inner == ir::TypeInfo::Kind::sequence ? cat("optional(seq(", e, "))")
                                                     : cat("optional(", e, ")");
    case ir::TypeInfo::Kind::unknown:
      return "unknown";
  }
  return "unknown";
}

Session make_session(ir::Model model, const SessionOptions& opts) {
  return Session(std::make_unique<SessionImpl>(std::move(model), opts));
}

}  // namespace runtime

using runtime::CompiledGraph;
using runtime::CompiledNode;
using runtime::ValueRef;

SessionImpl::SessionImpl(ir::Model model, const SessionOptions& opts)
    : model_(std::move(model)), opts_(opts), t0_(std::chrono::steady_clock::now()) {
  check(opts_.backend == "cpu" || opts_.backend.empty(), ErrorCode::unsupported, "backend '", opts_.backend,
        "' is not available (available: cpu)");
  if (const char* e = std::getenv("TESSERA_FLUSH_DENORMALS"); e && std::string_view(e) == "0")
    opts_.flush_denormals = false;
  check_model(model_.graph != nullptr, "the model has no graph");
  ir::Graph& g = *model_.graph;
  ir::verify(g);
  ir::infer_shapes(g);
  // the session's threads exist from here on: the passes pack weights on them (passes/pack_queue.h)
  pool_ = std::make_unique<ThreadPool>(opts_.threads);
  {
    const passes::PackingPoolScope packing(pool_.get());
    passes::run_pipeline(model_, opts_.optimization_level);
  }
  check_model(model_.graph != nullptr, "the optimization pipeline left no graph");
  if (opts_.optimization_level > 0) model_.graph->topological_sort();  // passes may append nodes
  graph_text_ = ir::to_string(*model_.graph);

  for (const ir::Value* v : model_.graph->inputs)
    if (v && !v->is_constant()) inputs_.push_back(runtime::value_info(*v));
  for (const ir::Value* v : model_.graph->outputs)
    if (v) outputs_.push_back(runtime::value_info(*v));

  compile_graph(*model_.graph, {});
  main_ = compiled_.at(model_.graph.get()).get();
}

SessionImpl::~SessionImpl() {
  if (profiling() && !profile_.empty()) {
    try {
      write_profile();
    } catch (...) {
      // A destructor must not throw; the profile is best effort here.
    }
  }
}

void SessionImpl::compile_graph(const ir::Graph& g, const std::vector<const ir::Graph*>& scope) {
  if (compiled_.count(&g)) return;  // a body shared by two nodes
  auto cg_owned = std::make_unique<CompiledGraph>();
  CompiledGraph& cg = *cg_owned;
  cg.graph = &g;
  compiled_[&g] = std::move(cg_owned);
  for (const auto& v : g.values()) {
    cg.slot_of[v.get()] = cg.num_slots++;
    cg.const_values.push_back(v->initializer ? DataValue(*v->initializer) : DataValue());
  }

  // Resolves a value through the scope chain: g, then its enclosing graphs.
  std::vector<const CompiledGraph*> chain{&cg};
  for (const ir::Graph* p : scope) chain.push_back(compiled_.at(p).get());
  auto resolve = [&](const ir::Value* v, const char* what, const std::string& who) -> ValueRef {
    if (!v) return {};
    for (size_t d = 0; d < chain.size(); ++d) {
      auto it = chain[d]->slot_of.find(v);
      if (it != chain[d]->slot_of.end()) return {int(d), it->second};
    }
    throw Error(ErrorCode::invalid_model, cat(what, " '", v->name, "' of ", who, " is not defined in graph '",
                                              g.name, "' or around it"));
  };

  std::set<const ir::Value*> graph_outputs(g.outputs.begin(), g.outputs.end());
  for (const ir::Value* v : g.inputs) {
    check_model(v != nullptr, "graph '", g.name, "' has an empty input");
    cg.input_slots.push_back(resolve(v, "input", "graph").slot);
    cg.input_optional.push_back(v->is_constant());
  }
  for (const ir::Value* v : g.outputs) {
    check_model(v != nullptr, "graph '", g.name, "' has an empty output");
    cg.output_refs.push_back(resolve(v, "output", cat("graph '", g.name, "'")));
  }

  std::vector<const ir::Graph*> inner_scope{&g};
  inner_scope.insert(inner_scope.end(), scope.begin(), scope.end());
  for (const auto& np : g.nodes()) {
    const ir::Node& n = *np;
    for (const ir::Graph* sg : n.subgraphs()) compile_graph(*sg, inner_scope);
    CompiledNode cn;
    cn.node = &n;
    cn.name = n.name;
    if (cn.name.empty())
      for (const ir::Value* v : n.outputs)
        if (v) {
          cn.name = v->name;
          break;
        }
    cn.fn = backends::cpu::select(n);
    for (const auto& [name, a] : n.attrs) cn.attrs.emplace_back(name, &a);
    if (!cn.fn)
      throw Error(ErrorCode::unsupported,
                  cat("no kernel for op '", n.domain.empty() ? "" : n.domain + ".", n.op_type, "' on the ",
                      "cpu backend"),
                  cn.name, n.op_type);
    for (const ir::Value* v : n.inputs) cn.inputs.push_back(resolve(v, "input", "node '" + cn.name + "'"));
    for (const ir::Value* v : n.outputs) {
      if (!v) {
        cn.outputs.push_back(-1);
        cn.requested.push_back(false);
        cn.graph_output.push_back(false);
        continue;
      }
      const ValueRef r = resolve(v, "output", "node '" + cn.name + "'");
      check_model(r.depth == 0, "node '", cn.name, "' writes value '", v->name, "' of an enclosing graph");
      cn.outputs.push_back(r.slot);
      const bool is_out = graph_outputs.count(v) > 0;
      cn.requested.push_back(is_out || !v->uses.empty());
      cn.graph_output.push_back(is_out);
    }
    for (const ValueRef& r : cn.inputs)
      if (r.slot >= 0 && r.depth == 0) cn.touches.push_back(r.slot);
    for (const ir::Graph* sg : n.subgraphs()) runtime::collect_captured(*sg, cg, cn.touches);
    std::sort(cn.touches.begin(), cn.touches.end());
    cn.touches.erase(std::unique(cn.touches.begin(), cn.touches.end()), cn.touches.end());
    cg.nodes.push_back(std::move(cn));
  }
  // Outputs that may be strided views: read only by nodes that take views in place — FusedAttention's
  // Q, K and V (its x86 kernel reads rows at any stride), MatMul's A and B (a Transpose of the last two dims
  // becomes a transposed operand of the GEMM, as onnxruntime's MatmulTransposeFusion does; other views it
  // copies), a Reshape whose own output may be strided (it
  // views a strided input where the dims allow, else copies), Shape and Size — and not graph outputs. Decided
  // from the last node back, so a Reshape's verdict is known before its producer's. ViT's qkv Slices then
  // hand the attention views of the in-projection's output instead of three copies a layer.
  std::unordered_map<const ir::Node*, size_t> index_of;
  for (size_t k = 0; k < cg.nodes.size(); ++k) index_of[cg.nodes[k].node] = k;
  for (size_t k = cg.nodes.size(); k-- > 0;) {
    CompiledNode& cn = cg.nodes[k];
    const ir::Node& n = *cn.node;
    cn.strided_ok.assign(n.outputs.size(), false);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const ir::Value* v = n.outputs[o];
      if (!v || cn.graph_output[o] || v->uses.empty()) continue;
      bool ok = true;
      for (const auto& [user, idx] : v->uses) {
        const bool attention = user->op_type == "FusedAttention" && user->domain == "tessera" && idx <= 2;
        const bool shape = (user->op_type == "Shape" || user->op_type == "Size") && user->domain.empty();
        const bool matmul = user->op_type == "MatMul" && user->domain.empty() && idx <= 1;
        bool reshape = false;
        if (user->op_type == "Reshape" && user->domain.empty() && idx == 0)
          if (auto it = index_of.find(user); it != index_of.end() && it->second > k)
            reshape = !cg.nodes[it->second].strided_ok.empty() && cg.nodes[it->second].strided_ok[0];
        ok = ok && (attention || matmul || reshape || shape) && user->subgraphs().empty();
      }
      cn.strided_ok[o] = ok;
    }
  }
  if (scope.empty()) {  // the main graph: plans (and so the shape cache) exist for it only
    const std::vector<bool> shape_only = runtime::shape_only_nodes(g);
    for (size_t k = 0; k < cg.nodes.size() && k < shape_only.size(); ++k)
      cg.nodes[k].shape_only = shape_only[k];
  }

  // Liveness: each local slot is released after the last node that reads it
  // (or right after its producer when nothing reads it). Graph outputs stay.
  std::vector<int> last_use(size_t(cg.num_slots), -1);
  for (size_t k = 0; k < cg.nodes.size(); ++k) {
    for (int s : cg.nodes[k].touches) last_use[size_t(s)] = int(k);
    for (int s : cg.nodes[k].outputs)
      if (s >= 0) last_use[size_t(s)] = std::max(last_use[size_t(s)], int(k));
  }
  for (const ValueRef& r : cg.output_refs)
    if (r.depth == 0 && r.slot >= 0) last_use[size_t(r.slot)] = -1;  // pinned
  for (int s = 0; s < cg.num_slots; ++s)
    if (last_use[size_t(s)] >= 0) cg.nodes[size_t(last_use[size_t(s)])].release.push_back(s);
}

std::shared_ptr<void> SessionImpl::take_arena(size_t* bytes) const {
  {
    std::lock_guard lock(arena_mutex_);
    for (size_t i = 0; i < free_arenas_.size(); ++i)
      if (free_arenas_[i].first >= *bytes) {
        *bytes = free_arenas_[i].first;
        std::shared_ptr<void> a = std::move(free_arenas_[i].second);
        free_arenas_.erase(free_arenas_.begin() + std::ptrdiff_t(i));
        return a;
      }
  }
  return allocate_storage(*bytes);
}

void SessionImpl::give_arena(size_t bytes, std::shared_ptr<void> arena) const {
  constexpr size_t kKeep = 2;  // enough for two concurrent runs; more are allocated per run
  std::lock_guard lock(arena_mutex_);
  free_arenas_.emplace_back(bytes, std::move(arena));
  if (free_arenas_.size() > kKeep)  // drop the smallest
    free_arenas_.erase(std::min_element(free_arenas_.begin(), free_arenas_.end(),
                                        [](const auto& a, const auto& b) { return a.first < b.first; }));
}

size_t SessionImpl::num_cached_plans() const {
  std::lock_guard lock(plan_mutex_);
  return plans_.size();
}

std::vector<runtime::ProfileEvent> SessionImpl::profile_events() const {
  std::lock_guard lock(profile_mutex_);
  return profile_;
}

void SessionImpl::clear_profile() const {
  std::lock_guard lock(profile_mutex_);
  profile_.clear();
}

std::string SessionImpl::end_profiling() const {
  if (!profiling()) return "";
  write_profile();
  profiling_ended_.store(true);
  clear_profile();
  return profile_path();
}

void SessionImpl::write_profile() const {
  if (!profiling()) return;
  const std::string path = profile_path();
  nlohmann::json events = nlohmann::json::array();
  {
    std::lock_guard lock(profile_mutex_);
    for (const runtime::ProfileEvent& e : profile_) {
      events.push_back(
          {{"name", e.name},
           {"cat", e.op},
           {"ph", "X"},
           {"ts", e.start_us},
           {"dur", e.dur_us},
           {"pid", 0},
           {"tid", e.tid},
           {"args", {{"op", e.op}, {"shapes", e.shapes}, {"flops", e.flops}, {"bytes", e.bytes}}}});
    }
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  std::ofstream f(path);
  check(bool(f), ErrorCode::io, "cannot write the profile to '", path, "'");
  f << doc.dump(1) << "\n";
  check(bool(f), ErrorCode::io, "failed writing the profile to '", path, "'");
}

// ---- the public API

namespace {
// Loads and builds a session; the weights packed meanwhile are collapsed into huge pages after it
// (core/memory.h).
template <class Load>
std::unique_ptr<SessionImpl> build_session(Load load, const SessionOptions& opts) {
  const HugePageCollapseHold hold;
  return std::make_unique<SessionImpl>(load(), opts);
}
}  // namespace

Session::Session(const std::string& model_path, const SessionOptions& opts)
    : impl_(build_session([&] { return frontend::onnx::load_file(model_path); }, opts)) {}

Session::Session(std::span<const uint8_t> model_bytes, const SessionOptions& opts)
    : impl_(build_session([&] { return frontend::onnx::load_bytes(model_bytes); }, opts)) {}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {
  check(impl_ != nullptr, ErrorCode::internal, "Session built from a null implementation");
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<ValueInfo>& Session::inputs() const {
  return impl_->inputs();
}
const std::vector<ValueInfo>& Session::outputs() const {
  return impl_->outputs();
}

std::vector<DataValue> Session::run(const std::map<std::string, DataValue>& feeds,
                                    const std::vector<std::string>& output_names) const {
  return impl_->run(feeds, output_names);
}

size_t Session::peak_memory_bytes() const {
  return impl_->peak_memory_bytes();
}
std::string Session::graph_text() const {
  return impl_->graph_text();
}
std::string Session::end_profiling() {
  return impl_->end_profiling();
}

std::string version() {
  return "0.1.0";
}

std::string kernel_isa() {
  // and "fma512-full" where 512-bit FMAs run at full width (roofline.h): several kernel choices differ there;
  // "amx-bf16" where f32 GEMMs may take AMX's tiles (gemm_amx.h: the CPU has them, the OS granted them, and
  // TESSERA_AMX is not 0)
  return cpu_features().describe() + (kernels::x86::fma512_full_width() ? " fma512-full" : "") +
         (kernels::x86::amx_gemm_available() ? " amx-bf16" : "");
}

}  // namespace tessera
