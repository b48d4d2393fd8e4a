// PackQueue (passes/pack_queue.h): without a pool of two threads a job runs at once; with one, queued jobs
// run once each at the flush, or when a batch reaches kPackBatchBytes; a job's exception
// reaches flush().
#include "passes/pack_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::passes {
namespace {

TEST(PackQueue, WithoutAPoolEachJobRunsAtOnce) {
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), new ThreadPool(1)}) {
    {
      const PackingPoolScope scope(pool);
      PackQueue q;
      std::vector<int> order;
      for (int i = 0; i < 3; ++i) {
        q.add(size_t(10 + i), [&order, i] { order.push_back(i); });
        EXPECT_EQ(order.size(), size_t(i + 1));
      }
      q.flush();
      EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
      EXPECT_THROW(q.add(1, [] { throw std::runtime_error("bad weights"); }), std::runtime_error);
    }
    delete pool;
  }
}

TEST(PackQueue, RunsOnThePoolOfItsScope) {
  ThreadPool pool(2);
  const PackingPoolScope scope(&pool);
  PackQueue q;
  std::atomic<int> runs{0};
  std::vector<int> hits(64, 0);
  for (int i = 0; i < 64; ++i)
    q.add(size_t(1 + i), [&, i] {
      ++hits[size_t(i)];
      ++runs;
    });
  EXPECT_EQ(runs.load(), 0);  // queued until the flush (or a full batch)
  q.flush();
  EXPECT_EQ(runs.load(), 64);
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(PackQueue, AFullBatchRunsBeforeTheFlush) {
  ThreadPool pool(2);
  const PackingPoolScope scope(&pool);
  PackQueue q;
  std::atomic<int> ran{0};
  q.add(kPackBatchBytes / 2, [&] { ++ran; });
  EXPECT_EQ(ran, 0);
  q.add(kPackBatchBytes / 2, [&] { ++ran; });  // the batch is full: both run now
  EXPECT_EQ(ran, 2);
  q.add(1, [&] { ++ran; });
  EXPECT_EQ(ran, 2);
  q.flush();
  EXPECT_EQ(ran, 3);
}

TEST(PackQueue, AJobsExceptionReachesFlushAndTheOthersStillRun) {
  ThreadPool pool(2);
  const PackingPoolScope scope(&pool);
  PackQueue q;
  std::atomic<int> ran{0};
  q.add(5, [&] { ++ran; });
  q.add(9, [] { throw std::runtime_error("bad weights"); });
  q.add(7, [&] { ++ran; });
  EXPECT_THROW(q.flush(), std::runtime_error);  // the pool runs every task, then rethrows
  EXPECT_EQ(ran.load(), 2);
}

}  // namespace
}  // namespace tessera::passes
