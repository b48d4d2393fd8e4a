// Running a compiled graph: frames of values, one KernelContext per node,
// reference-counted release of intermediates, and the arena memory plan.
#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <thread>

#include "core/float_mode.h"
#include "runtime/cost_model.h"
#include "runtime/memory_planner.h"
#include "runtime/session_impl.h"

namespace tessera {

namespace runtime {

namespace {
double now_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// How a feed or a graph input's declared type reads in messages.
std::string describe_value(const DataValue& v) {
  switch (v.kind) {
    case DataValue::Kind::tensor:
      return v.tensor.describe();
    case DataValue::Kind::sequence:
      return cat("sequence of ", v.sequence.size(), " tensors");
    case DataValue::Kind::optional_none:
      return "an empty optional";
    case DataValue::Kind::none:
      return "nothing";
  }
  return "?";
}
}  // namespace

// The values of one graph execution; subgraph frames point at the frame of
// the node that runs them, so outer-scope values resolve up the chain.
struct Frame {
  const CompiledGraph* cg = nullptr;
  Frame* parent = nullptr;
  std::vector<DataValue> slots;

  Frame(const CompiledGraph* g, Frame* p) : cg(g), parent(p), slots(size_t(g->num_slots)) {}
  // The value at slot: the frame's, else the graph's initializer there (CompiledGraph::const_values).
  const DataValue* at(int slot) const {
    const DataValue* v = &slots[size_t(slot)];
    return v->kind == DataValue::Kind::none ? &cg->const_values[size_t(slot)] : v;
  }
};

// Per-run() state. Nothing here is shared between runs.
class RunState {
 public:
  RunState(const SessionImpl& s, std::shared_ptr<const Plan> plan)
      : s_(s), plan_(std::move(plan)), recording_(plan_ == nullptr), profiling_(s.profiling()) {}
  ~RunState() {
    // Back to the session for the next run, unless something still holds it.
    if (arena_ && arena_.use_count() == 1) s_.give_arena(arena_size_, std::move(arena_));
  }
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  void exec(Frame& f, bool main);
  std::vector<DataValue> run_subgraph(const CompiledNode& cn, Frame& f, const Subgraph& sg,
                                      const std::vector<DataValue>& inputs);
  // zeroed: clear the buffer (KernelContext::output) or not (output_for_overwrite).
  Tensor allocate(bool main, int node, const CompiledNode& cn, size_t out, DType dtype, const Shape& shape,
                  bool zeroed);
  const DataValue* resolve(Frame& f, ValueRef r) const {
    if (r.slot < 0) return nullptr;
    Frame* fr = &f;
    for (int d = 0; d < r.depth; ++d) {
      fr = fr->parent;
      check(fr != nullptr, ErrorCode::internal, "value scope chain is shorter than compiled");
    }
    return fr->at(r.slot);
  }
  ThreadPool* pool() const { return s_.pool_.get(); }

  // Memory planning.
  struct Record {
    size_t size = 0;
    int first = 0, last = 0;
    int node = 0, out = 0;
    bool escapes = false;
  };
  void touch(const DataValue& v, int node);
  // Checks (and records) outputs that alias planned memory; see Plan::aliases.
  void check_aliases(int node, size_t out, DataValue& v);
  void mark_escaping(const DataValue& v);
  // Recording: node's output `out` (just allocated as t) may take over input x's buffer (output_reusing).
  void note_reuse(int node, int out, const Tensor& x, const Tensor& t);
  std::shared_ptr<const Plan> make_plan() const;
  bool recording() const { return recording_; }
  const std::shared_ptr<void>& arena() const { return arena_; }

  size_t arena_bytes = 0, fallback_bytes = 0;
  std::vector<ProfileEvent> events;
  std::map<int, std::vector<DataValue>> shape_cache;  // recorded for the plan

 private:
  void touch_tensor(const Tensor& t, int node);

  const SessionImpl& s_;
  std::shared_ptr<const Plan> plan_;
  bool recording_;
  bool profiling_;
  std::vector<Record> records_;
  // Recorded buffers by address, with a weak reference: once a buffer is freed its address may come back
  // for an allocation the plan does not record (a graph output, a kernel's temporary), which must not be
  // taken for it.
  struct RecordRef {
    int record;
    std::weak_ptr<void> alive;
  };
  std::unordered_map<const void*, RecordRef> rec_by_storage_;
  // The record of the live buffer t's storage is, or -1.
  int record_of(const Tensor& t) {
    if (!t.storage()) return -1;
    auto it = rec_by_storage_.find(t.storage().get());
    if (it == rec_by_storage_.end()) return -1;
    if (it->second.alive.expired()) {
      rec_by_storage_.erase(it);
      return -1;
    }
    return it->second.record;
  }
  std::shared_ptr<void> arena_;
  size_t arena_size_ = 0;                                // its capacity (at least the plan's arena_size)
  std::map<Plan::Key, std::vector<Plan::Key>> aliases_;  // recorded
  struct Reuse {
    int node, out_record, in_record;
  };
  std::vector<Reuse> reuses_;  // recorded output_reusing calls
};

class NodeContext final : public KernelContext {
 public:
  // outs: the caller's vector, reused from node to node (one allocation per exec, not per node)
  NodeContext(RunState& rs, Frame& f, const CompiledNode& cn, int index, bool main,
              std::vector<DataValue>& outs)
      : rs_(rs), f_(f), cn_(cn), index_(index), main_(main), outs_(outs) {
    outs_.clear();
    outs_.resize(cn.node->outputs.size());
  }

  const std::string& node_name() const override { return cn_.name; }
  const std::string& op_type() const override { return cn_.node->op_type; }
  int opset() const override { return cn_.node->opset; }
  size_t num_inputs() const override { return cn_.inputs.size(); }
  const Tensor* input(size_t i) const override {
    const DataValue* v = input_value(i);
    return v && v->is_tensor() ? &v->tensor : nullptr;
  }
  const DataValue* input_value(size_t i) const override {
    if (i >= cn_.inputs.size()) return nullptr;
    const DataValue* v = rs_.resolve(f_, cn_.inputs[i]);
    return v && v->kind != DataValue::Kind::none ? v : nullptr;
  }
  size_t num_outputs() const override { return outs_.size(); }
  bool output_requested(size_t i) const override { return i < cn_.requested.size() && cn_.requested[i]; }
  bool output_may_be_strided(size_t i) const override {
    return i < cn_.strided_ok.size() && cn_.strided_ok[i];
  }
  Tensor& output(size_t i, DType dtype, const Shape& shape) override {
    if (i >= outs_.size()) fail(ErrorCode::internal, "kernel wrote output ", i, " of ", outs_.size());
    outs_[i] = DataValue(rs_.allocate(main_, index_, cn_, i, dtype, shape, true));
    return outs_[i].tensor;
  }
  Tensor& output_for_overwrite(size_t i, DType dtype, const Shape& shape) override {
    if (i >= outs_.size()) fail(ErrorCode::internal, "kernel wrote output ", i, " of ", outs_.size());
    outs_[i] = DataValue(rs_.allocate(main_, index_, cn_, i, dtype, shape, false));
    return outs_[i].tensor;
  }
  Tensor& output_reusing(size_t i, size_t in, DType dtype, const Shape& shape) override {
    Tensor& t = output_for_overwrite(i, dtype, shape);
    const Tensor* x = input(in);
    if (!x || !main_ || !x->storage()) return t;
    for (size_t j = 0; j < num_inputs(); ++j)  // read again through another input: not while it is written
      if (const Tensor* o = input(j); j != in && o && o->storage() == x->storage()) return t;
    rs_.note_reuse(index_, int(i), *x, t);
    return t;
  }
  void set_output(size_t i, DataValue v) override {
    if (i >= outs_.size()) fail(ErrorCode::internal, "kernel set output ", i, " of ", outs_.size());
    outs_[i] = std::move(v);
  }
  const Attribute* attr(std::string_view n) const override { return cn_.attr(n); }
  ThreadPool* pool() const override { return rs_.pool(); }
  std::vector<DataValue> run_subgraph(const Subgraph& g, const std::vector<DataValue>& inputs) override {
    return rs_.run_subgraph(cn_, f_, g, inputs);
  }

  std::vector<DataValue>& outs() { return outs_; }

 private:
  RunState& rs_;
  Frame& f_;
  const CompiledNode& cn_;
  int index_;
  bool main_;
  std::vector<DataValue>& outs_;
};

Tensor RunState::allocate(bool main, int node, const CompiledNode& cn, size_t out, DType dtype,
                          const Shape& shape, bool zeroed) {
  const auto fresh = [&] { return zeroed ? Tensor(dtype, shape) : Tensor::uninitialized(dtype, shape); };
  const bool plannable = main && out < cn.graph_output.size() && !cn.graph_output[out] &&
                         dtype != DType::string && dtype != DType::undefined;
  if (!plannable) {
    Tensor t = fresh();
    fallback_bytes += t.nbytes();
    return t;
  }
  const int64_t numel = shape_numel(shape);
  if (size_t(numel) > (size_t(64) << 30) / dtype_size(dtype))
    throw Error(ErrorCode::invalid_argument,
                cat("refusing to allocate tensor ", dtype_name(dtype), shape_str(shape)));
  const size_t nbytes = size_t(numel) * dtype_size(dtype);
  if (recording_) {
    Tensor t = fresh();
    fallback_bytes += nbytes;
    if (nbytes > 0) {
      const int r = int(records_.size());
      records_.push_back({nbytes, node, node, node, int(out), false});
      // (a freed address reused: the old buffer is dead)
      rec_by_storage_[t.storage().get()] = {r, t.storage()};
    }
    return t;
  }
  const Plan::Slot* slot = plan_->slot(node, int(out));
  if (!slot || slot->size != nbytes) {  // unplanned or dynamic
    Tensor t = fresh();
    fallback_bytes += nbytes;
    return t;
  }
  if (!arena_) {
    arena_size_ = plan_->arena_size;
    arena_ = s_.take_arena(&arena_size_);
  }
  Tensor t = Tensor::view(dtype, shape, arena_, slot->offset);
  if (zeroed) std::memset(t.raw_data(), 0, nbytes);  // same contract as a fresh Tensor
  arena_bytes += nbytes;
  return t;
}

void RunState::touch_tensor(const Tensor& t, int node) {
  if (const int r = record_of(t); r >= 0) records_[size_t(r)].last = std::max(records_[size_t(r)].last, node);
}

void RunState::touch(const DataValue& v, int node) {
  if (v.is_tensor()) touch_tensor(v.tensor, node);
  for (const Tensor& t : v.sequence) touch_tensor(t, node);
}

void RunState::mark_escaping(const DataValue& v) {
  auto mark = [&](const Tensor& t) {
    if (!t.storage()) return;
    if (const int r = record_of(t); r >= 0) records_[size_t(r)].escapes = true;
  };
  if (v.is_tensor()) mark(v.tensor);
  for (const Tensor& t : v.sequence) mark(t);
}

void RunState::note_reuse(int node, int out, const Tensor& x, const Tensor& t) {
  if (!recording_ || x.nbytes() != t.nbytes() || x.byte_offset() != 0) return;
  const int ri = record_of(x), ro = record_of(t);
  if (ri >= 0 && ro >= 0 && ri != ro) reuses_.push_back({node, ro, ri});
}

std::shared_ptr<const Plan> RunState::make_plan() const {
  // An output that takes over its input's buffer (output_reusing) joins that buffer's request: where the
  // input is as large, whole (not a view into it), planned, and read by nothing after the node.
  std::vector<int> root(records_.size()), last(records_.size());
  for (size_t i = 0; i < records_.size(); ++i) root[i] = int(i), last[i] = records_[i].last;
  for (const Reuse& u : reuses_) {  // in node order, so chains (a -> b -> c in place) join one root
    const Record &in = records_[size_t(u.in_record)], &out = records_[size_t(u.out_record)];
    const int r = root[size_t(u.in_record)];
    if (in.escapes || out.escapes || in.size != out.size || in.last != u.node || last[size_t(r)] != u.node ||
        root[size_t(u.out_record)] != u.out_record)
      continue;
    root[size_t(u.out_record)] = r;
    last[size_t(r)] = std::max(last[size_t(r)], out.last);
  }
  std::vector<BufferRequest> reqs;
  std::vector<int> req_of(records_.size(), -1);
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    if (r.escapes || root[i] != int(i)) continue;
    req_of[i] = int(reqs.size());
    reqs.push_back({r.size, r.first, last[i]});
  }
  const MemoryPlan mp = plan_memory(reqs);
  auto plan = std::make_shared<Plan>();
  plan->arena_size = mp.arena_size;
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    const int q = req_of[size_t(root[i])];
    if (r.escapes || q < 0) continue;
    if (plan->placement.size() <= size_t(r.node)) plan->placement.resize(size_t(r.node) + 1);
    auto& outs = plan->placement[size_t(r.node)];
    if (outs.size() <= size_t(r.out)) outs.resize(size_t(r.out) + 1);
    outs[size_t(r.out)] = {mp.offsets[size_t(q)], r.size, r.first, r.last};
  }
  plan->aliases = aliases_;
  plan->shape_cache = shape_cache;
  return plan;
}

void RunState::check_aliases(int node, size_t out, DataValue& v) {
  const Plan::Key self{node, int(out)};
  if (recording_) {
    auto note = [&](const Tensor& t) {
      if (!t.storage()) return;
      const int ri = record_of(t);
      if (ri < 0) return;
      const Record& r = records_[size_t(ri)];
      const Plan::Key src{r.node, r.out};
      if (src == self) return;  // its own allocation
      auto& list = aliases_[self];
      if (std::find(list.begin(), list.end(), src) == list.end()) list.push_back(src);
    };
    if (v.is_tensor()) note(v.tensor);
    for (const Tensor& t : v.sequence) note(t);
    return;
  }
  if (!arena_) return;
  // A planned run: a view into the arena is fine only where the recording run
  // saw the same view (the plan then keeps its source alive long enough);
  // anything else (data-dependent aliasing) is copied out of the arena.
  // Planned buffers live at the same time never overlap, so the one holding `off` now is the output's own
  // buffer or a source the recording run saw it view (Reshape, Slice…); checking those few keys avoids
  // scanning every placement for each view.
  auto holds = [&](const Plan::Key& key, size_t off, bool live_check) {
    const Plan::Slot* found = plan_->slot(key.first, key.second);
    if (!found) return false;
    const Plan::Slot& slot = *found;
    return off >= slot.offset && off < slot.offset + slot.size &&
           (!live_check || (node >= slot.first && node <= slot.last));
  };
  auto fix = [&](Tensor& t) {
    if (t.storage().get() != arena_.get()) return;
    const size_t off = t.byte_offset();
    if (holds(self, off, false)) return;
    if (auto it = plan_->aliases.find(self); it != plan_->aliases.end())
      for (const Plan::Key& src : it->second)
        if (holds(src, off, true)) return;
    t = t.clone();
  };
  if (v.is_tensor()) fix(v.tensor);
  for (Tensor& t : v.sequence) fix(t);
}

void RunState::exec(Frame& f, bool main) {
  const CompiledGraph& cg = *f.cg;
  std::vector<DataValue> node_outs;
  for (size_t k = 0; k < cg.nodes.size(); ++k) {
    const CompiledNode& cn = cg.nodes[k];
    if (main && cn.shape_only && !recording_) {
      if (auto hit = plan_->shape_cache.find(int(k)); hit != plan_->shape_cache.end()) {
        for (size_t i = 0; i < cn.outputs.size(); ++i)
          if (cn.outputs[i] >= 0) f.slots[size_t(cn.outputs[i])] = hit->second[i];
        for (int s : cn.release) f.slots[size_t(s)] = DataValue();
        continue;
      }
    }
    if (main && recording_)
      for (int s : cn.touches) touch(*f.at(s), int(k));
    NodeContext ctx(*this, f, cn, int(k), main, node_outs);
    const double t_start = profiling_ ? now_us(s_.t0_) : 0;
    try {
      cn.fn(ctx);
    } catch (const Error& e) {
      throw e.at_node(cn.name, cn.node->op_type);
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::runtime, "out of memory", cn.name, cn.node->op_type);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::runtime, e.what(), cn.name, cn.node->op_type);
    }
    auto& outs = ctx.outs();
    if (profiling_) {
      const double t_end = now_us(s_.t0_);
      const NodeCost cost = node_cost(ctx, outs);
      events.push_back({cn.name, cn.node->op_type, t_start, t_end - t_start,
                        std::hash<std::thread::id>{}(std::this_thread::get_id()), cost.flops, cost.bytes,
                        cost.shapes});
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (cn.requested[i] && outs[i].kind == DataValue::Kind::none)
        throw Error(ErrorCode::internal,
                    cat("the kernel did not produce output ", i, " ('", cn.node->outputs[i]->name, "')"),
                    cn.name, cn.node->op_type);
      if (main && outs[i].kind != DataValue::Kind::none) check_aliases(int(k), i, outs[i]);
      if (cn.outputs[i] >= 0) f.slots[size_t(cn.outputs[i])] = std::move(outs[i]);
    }
    if (main && recording_ && cn.shape_only) {
      // Small results only; owned copies (the recording run's buffers are its own).
      constexpr size_t kMaxCachedBytes = size_t(64) << 10;
      std::vector<DataValue> cached;
      size_t bytes = 0;
      bool ok = true;
      for (size_t i = 0; i < cn.outputs.size() && ok; ++i) {
        const DataValue* v = cn.outputs[i] >= 0 ? &f.slots[size_t(cn.outputs[i])] : nullptr;
        if (!v || v->kind == DataValue::Kind::none) {
          cached.emplace_back();
          continue;
        }
        ok = v->is_tensor() && v->tensor.dtype() != DType::string;
        if (ok) bytes += v->tensor.nbytes();
        ok = ok && bytes <= kMaxCachedBytes;
        if (ok) cached.emplace_back(v->tensor.clone());
      }
      if (ok) shape_cache[int(k)] = std::move(cached);
    }
    for (int s : cn.release) f.slots[size_t(s)] = DataValue();
  }
}

std::vector<DataValue> RunState::run_subgraph(const CompiledNode& cn, Frame& f, const Subgraph& sg,
                                              const std::vector<DataValue>& inputs) {
  const auto* g = dynamic_cast<const ir::Graph*>(&sg);
  bool own = false;
  for (const ir::Graph* x : cn.node->subgraphs()) own |= (x == g);
  if (!own)
    throw Error(ErrorCode::internal, "run_subgraph: not a subgraph of this node", cn.name, cn.node->op_type);
  auto it = s_.compiled_.find(g);
  check(it != s_.compiled_.end(), ErrorCode::internal, "subgraph '", g->name, "' was not compiled");
  const CompiledGraph& cg = *it->second;
  if (inputs.size() != cg.input_slots.size())
    throw Error(ErrorCode::runtime,
                cat("subgraph '", g->name, "' takes ", cg.input_slots.size(), " inputs, got ", inputs.size()),
                cn.name, cn.node->op_type);
  Frame child(&cg, &f);
  for (size_t i = 0; i < inputs.size(); ++i) child.slots[size_t(cg.input_slots[i])] = inputs[i];
  exec(child, false);
  std::vector<DataValue> outs;
  outs.reserve(cg.output_refs.size());
  for (size_t i = 0; i < cg.output_refs.size(); ++i) {
    const DataValue* v = resolve(child, cg.output_refs[i]);
    if (!v || v->kind == DataValue::Kind::none)
      throw Error(ErrorCode::internal, cat("subgraph '", g->name, "' did not produce output ", i), cn.name,
                  cn.node->op_type);
    outs.push_back(*v);
  }
  return outs;
}

}  // namespace runtime

// ---- SessionImpl: feeds, plans, run

void SessionImpl::validate_feeds(const std::map<std::string, DataValue>& feeds) const {
  const ir::Graph& g = *model_.graph;
  for (const auto& [name, v] : feeds) {
    const ir::Value* in = nullptr;
    for (const ir::Value* x : g.inputs)
      if (x->name == name) in = x;
    if (!in) {
      std::string names;
      for (const ValueInfo& vi : inputs_) names += (names.empty() ? "" : ", ") + vi.name;
      throw Error(ErrorCode::invalid_argument,
                  cat("unknown input '", name, "' (the model's inputs: ", names, ")"));
    }
    const ir::TypeInfo& t = in->type;
    // (the message is built only when it is thrown: this runs for every feed of every run)
    auto bad = [&]() {
      throw Error(ErrorCode::invalid_argument,
                  cat("input '", name, "': expected ", t.str(), ", got ", runtime::describe_value(v)));
    };
    auto check_tensor = [&](const Tensor& x) {
      if (t.elem != DType::undefined && x.dtype() != t.elem) bad();
      if (!t.shape) return;
      if (size_t(x.rank()) != t.shape->size()) bad();
      for (size_t d = 0; d < t.shape->size(); ++d)
        if ((*t.shape)[d].known() && (*t.shape)[d].value != x.shape()[d]) bad();
    };
    switch (t.kind) {
      case ir::TypeInfo::Kind::tensor:
        if (!v.is_tensor()) bad();
        check_tensor(v.tensor);
        break;
      case ir::TypeInfo::Kind::sequence:
        if (!v.is_sequence()) bad();
        for (const Tensor& x : v.sequence)
          if (t.elem != DType::undefined && x.dtype() != t.elem) bad();
        break;
      case ir::TypeInfo::Kind::optional:
        if (v.kind == DataValue::Kind::none) bad();
        if (v.is_tensor() && t.inner == ir::TypeInfo::Kind::tensor) check_tensor(v.tensor);
        break;
      case ir::TypeInfo::Kind::unknown:
        if (v.kind == DataValue::Kind::none) bad();
        break;
    }
  }
  for (const ir::Value* x : g.inputs)
    if (!x->is_constant() && !feeds.count(x->name))
      throw Error(ErrorCode::invalid_argument,
                  cat("missing required input '", x->name, "' (", x->type.str(), ")"));
}

std::vector<int64_t> SessionImpl::plan_key(const std::map<std::string, DataValue>& feeds) const {
  std::vector<int64_t> key;
  auto add_tensor = [&](const Tensor& t) {
    key.push_back(int64_t(t.dtype()));
    key.push_back(t.rank());
    key.insert(key.end(), t.shape().begin(), t.shape().end());
  };
  for (const ir::Value* x : model_.graph->inputs) {
    auto it = feeds.find(x->name);
    if (it == feeds.end()) {
      key.push_back(-2);
      continue;
    }
    const DataValue& v = it->second;
    key.push_back(-3 - int64_t(v.kind));
    if (v.is_tensor()) add_tensor(v.tensor);
    key.push_back(int64_t(v.sequence.size()));
    for (const Tensor& t : v.sequence) add_tensor(t);
  }
  return key;
}

std::vector<DataValue> SessionImpl::run(const std::map<std::string, DataValue>& feeds,
                                        const std::vector<std::string>& output_names) const {
  const FlushDenormalsScope float_mode(opts_.flush_denormals);  // this thread; the pool's take it on per job
  validate_feeds(feeds);
  const ir::Graph& g = *model_.graph;

  // Which outputs, in the order asked for.
  std::vector<size_t> wanted;
  if (output_names.empty()) {
    for (size_t i = 0; i < g.outputs.size(); ++i) wanted.push_back(i);
  } else {
    for (const std::string& n : output_names) {
      size_t found = g.outputs.size();
      for (size_t i = 0; i < g.outputs.size(); ++i)
        if (g.outputs[i]->name == n) found = i;
      if (found == g.outputs.size()) {
        std::string names;
        for (const ValueInfo& vi : outputs_) names += (names.empty() ? "" : ", ") + vi.name;
        throw Error(ErrorCode::invalid_argument,
                    cat("unknown output '", n, "' (the model's outputs: ", names, ")"));
      }
      wanted.push_back(found);
    }
  }

  // The memory plan for these input shapes, if one was made.
  const std::vector<int64_t> key = plan_key(feeds);
  std::shared_ptr<const runtime::Plan> plan;
  {
    std::lock_guard lock(plan_mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) plan = it->second;
  }

  if (pool_) pool_->wake();  // workers that slept since the last run start spinning now
  runtime::RunState rs(*this, plan);
  runtime::Frame frame(main_, nullptr);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    auto it = feeds.find(g.inputs[i]->name);
    if (it == feeds.end()) continue;  // optional: keeps its initializer
    DataValue v = it->second;
    if (v.is_tensor()) v.tensor = v.tensor.contiguous();
    for (Tensor& t : v.sequence) t = t.contiguous();
    frame.slots[size_t(main_->input_slots[i])] = std::move(v);
  }
  rs.exec(frame, true);

  std::vector<DataValue> results;
  results.reserve(wanted.size());
  for (size_t i : wanted) {
    const DataValue* v = rs.resolve(frame, main_->output_refs[i]);
    check(v && v->kind != DataValue::Kind::none, ErrorCode::internal, "output '", g.outputs[i]->name,
          "' was not produced");
    results.push_back(*v);
  }

  if (rs.recording()) {
    for (const runtime::ValueRef& r : main_->output_refs) rs.mark_escaping(*rs.resolve(frame, r));
    std::shared_ptr<const runtime::Plan> made = rs.make_plan();
    peak_.store(made->arena_size);
    std::lock_guard lock(plan_mutex_);
    constexpr size_t kMaxPlans = 64;
    if (plans_.size() >= kMaxPlans) plans_.erase(plans_.begin());
    plans_.emplace(key, std::move(made));
  } else {
    planned_runs_.fetch_add(1);
    peak_.store(plan->arena_size);
    // Safety net: nothing returned may point into the arena.
    const void* arena = rs.arena().get();
    if (arena) {
      for (DataValue& v : results) {
        if (v.is_tensor() && v.tensor.storage().get() == arena) v.tensor = v.tensor.clone();
        for (Tensor& t : v.sequence)
          if (t.storage().get() == arena) t = t.clone();
      }
    }
  }
  last_arena_bytes_.store(rs.arena_bytes);
  last_fallback_bytes_.store(rs.fallback_bytes);

  if (profiling() && !rs.events.empty()) {
    std::lock_guard lock(profile_mutex_);
    profile_.insert(profile_.end(), rs.events.begin(), rs.events.end());
  }
  return results;
}

}  // namespace tessera
