#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "runtime/memory_planner.h"

namespace tessera::runtime {
namespace {

size_t aligned(size_t n) { return (std::max<size_t>(n, 1) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// Checks the invariants of a plan: aligned offsets inside the arena, and no two
// buffers live at the same time share a byte.
void check_plan(const std::vector<BufferRequest>& reqs, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), reqs.size());
  size_t naive = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    naive += aligned(reqs[i].size);
    EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + reqs[i].size, plan.arena_size);
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      if (!intervals_overlap(reqs[i], reqs[j])) continue;
      const bool disjoint = plan.offsets[i] + reqs[i].size <= plan.offsets[j] ||
                            plan.offsets[j] + reqs[j].size <= plan.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap while both live";
    }
  }
  EXPECT_LE(plan.arena_size, naive);
  // No plan can beat the largest set of buffers live at one moment.
  int tmax = 0;
  for (const auto& r : reqs) tmax = std::max(tmax, r.last);
  size_t live_max = 0;
  for (int t = 0; t <= tmax; ++t) {
    size_t live = 0;
    for (const auto& r : reqs)
      if (r.first <= t && t <= r.last) live += r.size;
    live_max = std::max(live_max, live);
  }
  EXPECT_GE(plan.arena_size, live_max);
}

TEST(RuntimeMemoryPlan, Empty) {
  MemoryPlan p = plan_memory({});
  EXPECT_EQ(p.arena_size, 0u);
  EXPECT_TRUE(p.offsets.empty());
}

TEST(RuntimeMemoryPlan, ChainReusesMemory) {
  // a -> b -> c -> d, each live from its producer to its consumer: two buffers suffice.
  std::vector<BufferRequest> reqs = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan p = plan_memory(reqs);
  check_plan(reqs, p);
  EXPECT_EQ(p.arena_size, 2 * aligned(1000));
}

TEST(RuntimeMemoryPlan, AllLiveIsNaiveSum) {
  std::vector<BufferRequest> reqs = {{100, 0, 5}, {200, 1, 5}, {300, 2, 5}};
  MemoryPlan p = plan_memory(reqs);
  check_plan(reqs, p);
  EXPECT_EQ(p.arena_size, aligned(100) + aligned(200) + aligned(300));
}

TEST(RuntimeMemoryPlan, BestFitFillsGap) {
  // Two long-lived big buffers with a gap-sized hole freed in between.
  std::vector<BufferRequest> reqs = {{4096, 0, 10}, {1024, 0, 2}, {4096, 0, 10}, {1000, 3, 10}};
  MemoryPlan p = plan_memory(reqs);
  check_plan(reqs, p);
  EXPECT_EQ(p.arena_size, 4096 + 4096 + 1024);
}

TEST(RuntimeMemoryPlan, RandomIntervals) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = int(rng() % 40) + 1;
    std::vector<BufferRequest> reqs;
    for (int i = 0; i < n; ++i) {
      const int first = int(rng() % 30);
      const int len = int(rng() % 8);
      const size_t size = (rng() % 5 == 0) ? 0 : size_t(rng() % 5000) + 1;
      reqs.push_back({size, first, first + len});
    }
    MemoryPlan p = plan_memory(reqs);
    check_plan(reqs, p);
    if (HasFailure()) {
      ADD_FAILURE() << "trial " << trial;
      return;
    }
  }
}

TEST(RuntimeMemoryPlan, RejectsBadInterval) {
  EXPECT_THROW(plan_memory({{10, 3, 2}}), Error);
}

}  // namespace
}  // namespace tessera::runtime
