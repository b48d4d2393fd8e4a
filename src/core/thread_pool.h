// A fork-join thread pool. The caller takes part in the work, so a pool of N
// threads starts N-1 workers. Kernels receive the pool; they never start threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // <= 0: one per hardware thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(task) for task in [0, num_tasks), spread over the threads; returns
  // when all are done. Safe to call from several threads at once (calls are
  // serialized); a nested call from inside a task runs inline.
  void run(int64_t num_tasks, const std::function<void(int64_t)>& fn);

  // Splits [0, n) into about num_threads chunks of at least `grain` and calls
  // fn(begin, end) on each.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t job_tasks_ = 0;
  int64_t next_task_ = 0;
  int64_t finished_tasks_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// Runs fn(begin, end) over [0, n): on the pool when given, inline otherwise.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessera
