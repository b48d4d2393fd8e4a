#include "passes/pack_queue.h"

#include <algorithm>
#include <utility>

#include "core/thread_pool.h"

namespace tessera::passes {

namespace {
thread_local ThreadPool* tl_packing_pool = nullptr;
}  // namespace

PackingPoolScope::PackingPoolScope(ThreadPool* pool) : prev_(tl_packing_pool) {
  tl_packing_pool = pool;
}
PackingPoolScope::~PackingPoolScope() {
  tl_packing_pool = prev_;
}

void PackQueue::add(size_t bytes, std::function<void()> job) {
  if (!tl_packing_pool || tl_packing_pool->num_threads() <= 1) {  // one thread: at once, as written
    job();
    return;
  }
  jobs_.emplace_back(bytes, std::move(job));
  bytes_ += bytes;
  if (bytes_ >= kPackBatchBytes) flush();
}

void PackQueue::flush() {
  auto jobs = std::move(jobs_);
  jobs_.clear();
  bytes_ = 0;
  if (jobs.empty()) return;
  std::stable_sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // each job released (its source weights with it) as soon as it has run
  auto run_one = [&](int64_t i) {
    auto job = std::move(jobs[size_t(i)].second);
    job();
  };
  tl_packing_pool->run(int64_t(jobs.size()), run_one);
}

}  // namespace tessera::passes
