// The fork-join pool: every task runs exactly once per job, across many
// back-to-back jobs (spinning workers) and after the workers fell asleep;
// exceptions reach the caller; nested calls run inline; callers on several
// threads are serialized.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tessera {
namespace {

void expect_each_task_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  pool.run(n, [&](int64_t t) { hits[size_t(t)].fetch_add(1); });
  for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[size_t(t)].load(), 1) << "task " << t << " of " << n;
}

TEST(ThreadPool, EveryTaskOnceOverManyJobs) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {1, 2, 3, 7, 64, 1000})
      for (int rep = 0; rep < 50; ++rep) expect_each_task_once(pool, n);
  }
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  setenv("TESSERA_SPIN_US", "0", 1);  // sleep at once
  ThreadPool pool(3);
  unsetenv("TESSERA_SPIN_US");
  for (int rep = 0; rep < 20; ++rep) {
    expect_each_task_once(pool, 17);
    if (rep % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(ThreadPool, UsesMoreThanOneThread) {
  ThreadPool pool(2);
  std::atomic<int> inside{0}, max_inside{0};
  pool.run(2, [&](int64_t) {
    const int now = ++inside;
    int m = max_inside.load();
    while (now > m && !max_inside.compare_exchange_weak(m, now)) {
    }
    // Hold the task long enough for the other thread to pick up the second one.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until && max_inside.load() < 2) std::this_thread::yield();
    --inside;
  });
  EXPECT_EQ(max_inside.load(), 2);
}

TEST(ThreadPool, ExceptionReachesCallerAndPoolStaysUsable) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(10,
                        [&](int64_t t) {
                          ++ran;
                          if (t == 3) throw std::runtime_error("task 3");
                        }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 10);  // the other tasks still ran
  expect_each_task_once(pool, 33);
}

TEST(ThreadPool, NestedRunIsInline) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.run(4, [&](int64_t) { pool.run(5, [&](int64_t) { ++total; }); });
  EXPECT_EQ(total.load(), 20);
}

TEST(ThreadPool, ConcurrentCallersAreSerialized) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 100; ++rep) pool.run(8, [&](int64_t t) { sum += t; });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), 4 * 100 * 28);
}

TEST(ThreadPool, ParallelForCoversRangeOnce) {
  ThreadPool pool(2);
  for (int64_t n : {1, 2, 5, 100, 1001})
    for (int64_t grain : {1, 3, 64, 5000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << n << " " << grain << " " << i;
    }
  int calls = 0;
  parallel_for(nullptr, 10, 1, [&](int64_t b, int64_t e) {
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tessera
