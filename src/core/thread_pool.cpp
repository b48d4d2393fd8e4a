#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace tessera {

namespace {
thread_local bool tl_inside_pool_task = false;
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lk(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int) {
  uint64_t seen = 0;
  std::unique_lock lk(mutex_);
  for (;;) {
    wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (job_ && next_task_ < job_tasks_) {
      const int64_t t = next_task_++;
      const auto* job = job_;
      lk.unlock();
      tl_inside_pool_task = true;
      (*job)(t);
      tl_inside_pool_task = false;
      lk.lock();
      if (++finished_tasks_ == job_tasks_) done_.notify_all();
    }
  }
}

void ThreadPool::run(int64_t num_tasks, const std::function<void(int64_t)>& fn) {
  if (num_tasks <= 0) return;
  if (num_threads_ == 1 || num_tasks == 1 || tl_inside_pool_task) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  std::lock_guard run_lk(run_mutex_);
  std::unique_lock lk(mutex_);
  job_ = &fn;
  job_tasks_ = num_tasks;
  next_task_ = 0;
  finished_tasks_ = 0;
  ++generation_;
  wake_.notify_all();
  while (next_task_ < job_tasks_) {
    const int64_t t = next_task_++;
    lk.unlock();
    tl_inside_pool_task = true;
    fn(t);
    tl_inside_pool_task = false;
    lk.lock();
    ++finished_tasks_;
  }
  done_.wait(lk, [&] { return finished_tasks_ == job_tasks_; });
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::clamp<int64_t>(n / grain, 1, num_threads_);
  const int64_t per = (n + chunks - 1) / chunks;
  run(chunks, [&](int64_t c) {
    const int64_t b = c * per, e = std::min(n, b + per);
    if (b < e) fn(b, e);
  });
}

void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) pool->parallel_for(n, grain, fn);
  else if (n > 0) fn(0, n);
}

}  // namespace tessera
