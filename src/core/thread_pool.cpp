#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "core/float_mode.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSERA_CPU_RELAX() _mm_pause()
#else
#define TESSERA_CPU_RELAX() std::this_thread::yield()
#endif

namespace tessera {

namespace {

thread_local bool tl_inside_pool_task = false;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Busy-waits for done(): pause a while, then yield (a waited-for thread may need this core).
template <typename F>
void wait_until(F done) {
  for (int spins = 0; !done(); ++spins) {
    if (spins < 4096)
      TESSERA_CPU_RELAX();
    else
      std::this_thread::yield();
  }
}

// How long a worker stays awake after its last job before it sleeps. onnxruntime's workers spin about
// 50 ms after a run (measured here: 44-51 ms of CPU time in a 200 ms pause), Intel OpenMP's KMP_BLOCKTIME is
// 200 ms: waking a parked vCPU costs far more than a small kernel takes, so the next run should find the
// workers awake. After the first `kPauseOnlyNs` the spin yields the core on every round, so a runnable thread
// that needs it is not starved.
constexpr int64_t kDefaultSpinUs = 50000;
constexpr int64_t kPauseOnlyNs = 1'000'000;

int64_t spin_ns_from_env() {
  int64_t us = kDefaultSpinUs;
  if (const char* e = std::getenv("TESSERA_SPIN_US")) us = std::max<long long>(0, std::atoll(e));
  return us * 1000;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : spin_ns_(spin_ns_from_env()) {
  if (num_threads <= 0) num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(2, std::memory_order_seq_cst);
  { std::lock_guard lk(sleep_mutex_); }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain() {
  const bool outer = tl_inside_pool_task;
  tl_inside_pool_task = true;
  for (;;) {
    const int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= job_tasks_) break;
    try {
      (*job_)(t);
    } catch (...) {
      std::lock_guard lk(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    finished_tasks_.fetch_add(1, std::memory_order_acq_rel);
  }
  tl_inside_pool_task = outer;
}

void ThreadPool::worker_loop(int) {
  uint32_t seen = 0;  // the generation at construction: a worker that starts late still joins an open job
  for (;;) {
    // (A worker that starts after the destructor began sees its final generation as `seen`: check stop
    // here and in the sleep predicate, not only after a change.)
    if (stop_.load(std::memory_order_acquire)) return;
    uint32_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      // Spin a while (the next job usually follows within microseconds), then sleep.
      int64_t start = now_ns();
      for (int i = 0; (g = generation_.load(std::memory_order_acquire)) == seen && !stop_.load(); ++i) {
        if ((i & 63) != 63) {
          TESSERA_CPU_RELAX();
          continue;
        }
        const int64_t t = now_ns();
        if (t - start > kPauseOnlyNs) std::this_thread::yield();
        if (t - start > spin_ns_) {
          // Sleep. sleepers_ and generation_ are seq_cst on both sides, so either the caller sees a
          // sleeper (and notifies under the mutex) or we see the new generation before waiting.
          std::unique_lock lk(sleep_mutex_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          const uint32_t epoch = wake_epoch_.load(std::memory_order_seq_cst);
          wake_.wait(lk, [&] {
            return stop_.load() || generation_.load(std::memory_order_seq_cst) != seen ||
                   wake_epoch_.load(std::memory_order_seq_cst) != epoch;
          });
          sleepers_.fetch_sub(1, std::memory_order_seq_cst);
          start = now_ns();  // woken: spin again before sleeping
        }
      }
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = g;
    if ((g & 1) == 0) continue;  // a job already closed
    active_.fetch_add(1, std::memory_order_acq_rel);
    if (generation_.load(std::memory_order_acquire) == g) {  // still open: the job's fields are valid
      set_float_mode(job_float_mode_);
      drain();
    }
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(int64_t num_tasks, const std::function<void(int64_t)>& fn) {
  if (num_tasks <= 0) return;
  if (num_threads_ == 1 || num_tasks == 1 || tl_inside_pool_task) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  std::lock_guard run_lk(run_mutex_);
  job_ = &fn;
  job_float_mode_ = float_mode();  // the tasks run in the caller's floating-point mode (core/float_mode.h)
  job_tasks_ = num_tasks;
  error_ = nullptr;
  next_task_.store(0, std::memory_order_relaxed);
  finished_tasks_.store(0, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // open (odd)
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard lk(sleep_mutex_); }
    wake_.notify_all();
  }
  drain();
  // Tasks a worker claimed may still be running; tasks nobody claimed the caller ran in drain().
  wait_until([&] { return finished_tasks_.load(std::memory_order_acquire) == job_tasks_; });
  generation_.fetch_add(1, std::memory_order_acq_rel);  // closed (even): late workers turn back
  wait_until([&] { return active_.load(std::memory_order_acquire) == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::wake() {
  if (num_threads_ <= 1 || sleepers_.load(std::memory_order_seq_cst) == 0) return;
  {
    std::lock_guard lk(sleep_mutex_);
    wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
  }
  wake_.notify_all();
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

void parallel_for(ThreadPool* pool, int64_t n, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (pool)
    pool->parallel_for(n, grain, fn);
  else if (n > 0)
    fn(0, n);
}

}  // namespace tessera
