// A fork-join thread pool. The caller takes part in the work, so a pool of N
// threads starts N-1 workers. Kernels receive the pool; they never start threads.
//
// Waking a sleeping thread costs tens of microseconds, more than many kernels
// take, so workers spin for a while after each job (TESSERA_SPIN_US, default
// 50 ms like onnxruntime's; yielding the core after the first millisecond)
// before they sleep on a condition variable. Tasks are claimed
// dynamically, and the caller never waits for a worker that has not joined:
// when another process holds the other cores, the caller runs the tasks itself
// instead of waiting a scheduler quantum for an absent worker. A job is closed
// (generation bumped) before run() returns, and a worker only touches a job it
// entered while it was open, so none touches it afterwards.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
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
  // serialized); a nested call from inside a task runs inline. The first
  // exception a task throws is rethrown here (the other tasks still run).
  void run(int64_t num_tasks, const std::function<void(int64_t)>& fn);

  // Wakes sleeping workers so they are spinning by the time the next job comes (a run of a model calls
  // this first: waking a worker that slept for a while can take longer than a whole small kernel).
  void wake();

  // Splits [0, n) into about num_threads chunks of at least `grain` and calls
  // fn(begin, end) on each.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);
  void drain();  // claims and runs tasks of the current job until none are left

  int num_threads_;
  int64_t spin_ns_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  // Odd: a job is open; even: closed. Workers wait for it to change.
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> active_{0};  // workers inside the current job
  std::atomic<bool> stop_{false};
  // The current job; written before generation_ is bumped (release).
  const std::function<void(int64_t)>* job_ = nullptr;
  uint32_t job_float_mode_ = 0;  // the caller's floating-point mode (MXCSR), which the workers take on
  int64_t job_tasks_ = 0;
  alignas(64) std::atomic<int64_t> next_task_{0};
  alignas(64) std::atomic<int64_t> finished_tasks_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<uint32_t> wake_epoch_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Runs fn(begin, end) over [0, n): on the pool when given, inline otherwise.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessera
