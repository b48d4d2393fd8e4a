// The runtime's Session: load -> verify -> infer shapes -> optimize -> compile
// (a kernel per node from the CPU backend) -> run. The compiled form is
// immutable; every run keeps its state (value frames, arena) in the call, and
// only the memory-plan cache and the profile are shared, behind mutexes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/kernel_context.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "tessera/tessera.h"

namespace tessera {

namespace runtime {

// Where a node finds a value at run time: `depth` frames up the scope chain
// (0: the graph's own frame), slot `slot` there. slot -1: omitted.
struct ValueRef {
  int depth = 0;
  int slot = -1;
};

struct CompiledNode {
  const ir::Node* node = nullptr;
  KernelFn fn = nullptr;
  std::string name;  // node name, or its first output's name when unnamed
  std::vector<ValueRef> inputs;
  std::vector<int> outputs;        // local slots; -1 for omitted outputs
  std::vector<bool> requested;     // output used by the graph (or a graph output)
  std::vector<bool> graph_output;  // output is an output of its graph
  std::vector<bool> strided_ok;    // output may be a strided view (KernelContext::output_may_be_strided)
  std::vector<int> touches;        // local slots read by the node, its subgraphs included
  std::vector<int> release;        // local slots whose last use is this node
  bool shape_only = false;         // outputs depend on input shapes only (runtime/shape_only.h)
  // The node's attributes for KernelContext::attr: a kernel asks for a dozen by name every run, and a flat
  // scan that compares lengths first costs a fraction of the map's string compares (a small conv's
  // lookups were a quarter of its time in the executor).
  std::vector<std::pair<std::string_view, const Attribute*>> attrs;
  const Attribute* attr(std::string_view n) const {
    for (const auto& [name, a] : attrs)
      if (name.size() == n.size() && (n.empty() || name[0] == n[0]) && name == n) return a;
    return nullptr;
  }
};

struct CompiledGraph {
  const ir::Graph* graph = nullptr;
  int num_slots = 0;
  std::unordered_map<const ir::Value*, int> slot_of;  // the graph's own values
  // The initializers' values by slot (none elsewhere). A frame's slot of an initializer stays empty unless
  // a feed overrides it, and reads fall through to these: a run copies no constants (MobileNetV2 made
  // ~300 small allocations a run copying its weights' tensors into the frame).
  std::vector<DataValue> const_values;
  std::vector<int> input_slots;       // graph inputs, in order
  std::vector<bool> input_optional;   // input has an initializer
  std::vector<ValueRef> output_refs;  // graph outputs, in order
  std::vector<CompiledNode> nodes;
};

// A static memory plan for one set of input shapes: where each planned
// allocation (node index, output index) lives in the arena.
struct Plan {
  using Key = std::pair<int, int>;  // (node index, output index) of an allocation
  struct Slot {
    size_t offset = 0, size = 0;
    int first = 0, last = 0;  // live interval (node indices)
  };
  // By node index, then output index; size 0: not planned. (A flat table: the executor looks an allocation
  // up at every node output, where a map's compares were 8% of a chain of small MatMuls' run.)
  std::vector<std::vector<Slot>> placement;
  const Slot* slot(int node, int out) const {
    if (node < 0 || size_t(node) >= placement.size() || out < 0 ||
        size_t(out) >= placement[size_t(node)].size())
      return nullptr;
    const Slot& s = placement[size_t(node)][size_t(out)];
    return s.size ? &s : nullptr;
  }
  // Outputs the recording run saw aliasing an earlier allocation (views), and
  // which: a planned run accepts exactly these aliases into the arena.
  std::map<Key, std::vector<Key>> aliases;
  size_t arena_size = 0;
  // Outputs of shape-only nodes (by node index) from the recording run, reused by later runs.
  std::map<int, std::vector<DataValue>> shape_cache;
};

struct ProfileEvent {
  std::string name, op;
  double start_us = 0, dur_us = 0;  // microseconds since the session started
  uint64_t tid = 0;
  double flops = 0, bytes = 0;  // runtime/cost_model.h
  std::string shapes;
};

class RunState;

}  // namespace runtime

class SessionImpl {
 public:
  SessionImpl(ir::Model model, const SessionOptions& opts);
  ~SessionImpl();
  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

  std::vector<DataValue> run(const std::map<std::string, DataValue>& feeds,
                             const std::vector<std::string>& output_names) const;

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  size_t peak_memory_bytes() const { return peak_.load(); }
  const std::string& graph_text() const { return graph_text_; }

  // Introspection (tests, tools).
  const ir::Model& model() const { return model_; }
  ThreadPool* pool() const { return pool_.get(); }
  size_t num_cached_plans() const;
  int64_t num_planned_runs() const { return planned_runs_.load(); }
  // Bytes served from the arena / by ordinary allocation in the last run.
  size_t last_arena_bytes() const { return last_arena_bytes_.load(); }
  size_t last_fallback_bytes() const { return last_fallback_bytes_.load(); }
  // Writes the Chrome trace now (also done when the session ends).
  void write_profile() const;
  // onnxruntime's end_profiling: writes the trace, stops profiling (later runs record nothing, the session's
  // end writes nothing) and returns the file's path; "" where profiling is off or already ended.
  std::string end_profiling() const;
  bool profiling() const { return opts_.enable_profiling && !profiling_ended_.load(); }
  std::string profile_path() const {
    return opts_.profile_path.empty() ? "tessera_profile.json" : opts_.profile_path;
  }
  // The profile so far (one event per executed node, in run order), and forgetting it (e.g. after warm-up).
  std::vector<runtime::ProfileEvent> profile_events() const;
  void clear_profile() const;

 private:
  friend class runtime::RunState;
  void compile_graph(const ir::Graph& g, const std::vector<const ir::Graph*>& scope);
  void validate_feeds(const std::map<std::string, DataValue>& feeds) const;
  std::vector<int64_t> plan_key(const std::map<std::string, DataValue>& feeds) const;

  ir::Model model_;
  SessionOptions opts_;
  std::vector<ValueInfo> inputs_, outputs_;
  std::string graph_text_;
  std::unique_ptr<ThreadPool> pool_;
  std::unordered_map<const ir::Graph*, std::unique_ptr<runtime::CompiledGraph>> compiled_;
  const runtime::CompiledGraph* main_ = nullptr;

  mutable std::mutex plan_mutex_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const runtime::Plan>> plans_;
  mutable std::atomic<size_t> peak_{0};
  mutable std::atomic<int64_t> planned_runs_{0};
  mutable std::atomic<size_t> last_arena_bytes_{0}, last_fallback_bytes_{0};

  // Arenas of finished runs, kept for the next ones: a fresh arena per run would
  // page-fault its whole size in again (MobileNetV2: 5.7 MiB, ~0.4 ms a run).
  // A run takes one of at least *bytes (set to the arena's capacity), or a new one.
  std::shared_ptr<void> take_arena(size_t* bytes) const;
  void give_arena(size_t bytes, std::shared_ptr<void> arena) const;
  mutable std::mutex arena_mutex_;
  mutable std::vector<std::pair<size_t, std::shared_ptr<void>>> free_arenas_;

  std::chrono::steady_clock::time_point t0_;
  mutable std::mutex profile_mutex_;
  mutable std::vector<runtime::ProfileEvent> profile_;
  mutable std::atomic<bool> profiling_ended_{false};
};

namespace runtime {
// A session over an already built model (tests and tools that build graphs in C++).
Session make_session(ir::Model model, const SessionOptions& opts = {});
// ONNX-style type string of a value ("tensor(float)", "seq(tensor(int64))").
std::string onnx_type_string(const ir::TypeInfo& t);
}  // namespace runtime

}  // namespace tessera
