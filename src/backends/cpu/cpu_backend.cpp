#include "backends/cpu/cpu_backend.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/ref/registry.h"

namespace tessera::backends::cpu {

namespace {

struct TunedEntry {
  KernelPredicate predicate;
  KernelFn fn;
};

struct TunedTable {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, std::vector<TunedEntry>> entries;
};

TunedTable& tuned_table() {
  static TunedTable* t = new TunedTable;
  return *t;
}

// The tuned kernels shipped with Tessera register themselves on first use.
void ensure_builtin_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_x86_bindings();
    register_x86_attention_bindings();
  });
}

std::string canonical_domain(const std::string& d) {
  return d == "ai.onnx" ? std::string() : d;
}

KernelFn find_tuned(const ir::Node& node) {
  ensure_builtin_kernels();
  TunedTable& t = tuned_table();
  std::vector<TunedEntry> candidates;
  {
    std::lock_guard lock(t.mutex);
    auto it = t.entries.find({canonical_domain(node.domain), node.op_type});
    if (it == t.entries.end()) return nullptr;
    candidates = it->second;
  }
  // Newest registration first; predicates run outside the lock.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it)
    if (!it->predicate || it->predicate(node)) return it->fn;
  return nullptr;
}

}  // namespace

void add_tuned_kernel(const std::string& domain, const std::string& op_type, KernelPredicate predicate,
                      KernelFn fn) {
  check(fn != nullptr, ErrorCode::internal, "add_tuned_kernel: null kernel for ", op_type);
  TunedTable& t = tuned_table();
  std::lock_guard lock(t.mutex);
  t.entries[{canonical_domain(domain), op_type}].push_back({std::move(predicate), fn});
}

KernelFn select(const ir::Node& node) {
  if (KernelFn fn = find_tuned(node)) return fn;
  return kernels::ref::KernelTable::instance().find(node.domain, node.op_type);
}

std::string selected_kind(const ir::Node& node) {
  if (find_tuned(node)) return "tuned";
  if (kernels::ref::KernelTable::instance().find(node.domain, node.op_type)) return "ref";
  return "";
}

std::vector<int64_t> matrix_batch_bases(const Tensor& t) {
  const int64_t r = t.rank();
  int64_t batch = 1;
  for (int64_t i = 0; i + 2 < r; ++i) batch *= t.dim(i);
  std::vector<int64_t> base(size_t(batch), 0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t rem = b, off = 0;
    for (int64_t i = r - 3; i >= 0; --i) {
      off += (rem % t.dim(i)) * t.strides()[size_t(i)];
      rem /= t.dim(i);
    }
    base[size_t(b)] = off;
  }
  return base;
}

void run_reference(KernelContext& ctx, const char* domain) {
  KernelFn fn = kernels::ref::KernelTable::instance().find(domain, ctx.op_type());
  if (!fn) ctx.fail(ErrorCode::internal, "no reference kernel for ", ctx.op_type());
  fn(ctx);
}

}  // namespace tessera::backends::cpu
