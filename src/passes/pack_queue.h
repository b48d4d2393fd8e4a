// Weight packing deferred and spread over the session's threads. A pass that packs constant weights
// (layout_nhwc, fuse_gemm, pack_qconv, pack_qmatmul, pack_recurrent, pack_conv3d) allocates each packed
// tensor and rewrites the graph at once, but hands the packing itself — a transpose or transform of the
// weights into fresh pages, most of a session's creation — to a PackQueue, which runs the jobs it holds on
// the packing pool (run_pipeline's, the session's threads) once they reach kPackBatchBytes of weights, and
// the rest when the pass ends (flush). A job keeps its source weights alive until it has run; the batch bound
// caps what that adds to creation's peak memory. Without a pool of two threads or more a job runs at once, in
// add(), as the pass wrote it.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace tessera {
class ThreadPool;
}

namespace tessera::passes {

// While one is alive, this thread's PackQueues run their jobs on `pool` (nullptr: on the calling thread).
class PackingPoolScope {
 public:
  explicit PackingPoolScope(ThreadPool* pool);
  ~PackingPoolScope();
  PackingPoolScope(const PackingPoolScope&) = delete;
  PackingPoolScope& operator=(const PackingPoolScope&) = delete;

 private:
  ThreadPool* prev_;
};

inline constexpr size_t kPackBatchBytes = size_t(64) << 20;

class PackQueue {
 public:
  PackQueue() = default;
  // Jobs not flushed are dropped: a pass that throws leaves its graph unusable anyway.
  ~PackQueue() = default;
  PackQueue(const PackQueue&) = delete;
  PackQueue& operator=(const PackQueue&) = delete;

  // Queues job (which reads `bytes` of source weights) and runs the queue when it holds kPackBatchBytes; or,
  // without a packing pool of several threads, runs it now.
  void add(size_t bytes, std::function<void()> job);
  // Runs every queued job, the largest first (the threads finish together), and returns when all are done;
  // rethrows the first exception a job threw.
  void flush();

 private:
  std::vector<std::pair<size_t, std::function<void()>>> jobs_;
  size_t bytes_ = 0;
};

}  // namespace tessera::passes
