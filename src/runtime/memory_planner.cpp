#include "runtime/memory_planner.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace tessera::runtime {

namespace {
size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // Largest first; ties by earlier start, then index (deterministic).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].size != requests[b].size) return requests[a].size > requests[b].size;
    return requests[a].first < requests[b].first;
  });

  struct Placed {
    size_t offset, size;
  };
  std::vector<size_t> placed;  // indices of requests already placed
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    check(r.first <= r.last, ErrorCode::internal, "memory plan: buffer ", idx, " has interval [", r.first, ",",
          r.last, "]");
    const size_t size = align_up(std::max<size_t>(r.size, 1));
    // Blocks of already placed buffers live at the same time, by offset.
    std::vector<Placed> busy;
    for (size_t p : placed)
      if (intervals_overlap(r, requests[p])) busy.push_back({plan.offsets[p], align_up(std::max<size_t>(requests[p].size, 1))});
    std::sort(busy.begin(), busy.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    // Best fit: the smallest gap between busy blocks that holds this buffer.
    size_t best_offset = 0, best_gap = SIZE_MAX;
    size_t cursor = 0;
    for (const Placed& b : busy) {
      if (b.offset > cursor) {
        const size_t gap = b.offset - cursor;
        if (gap >= size && gap < best_gap) {
          best_gap = gap;
          best_offset = cursor;
        }
      }
      cursor = std::max(cursor, b.offset + b.size);
    }
    if (best_gap == SIZE_MAX) best_offset = cursor;  // after the last busy block
    plan.offsets[idx] = best_offset;
    plan.arena_size = std::max(plan.arena_size, best_offset + size);
    placed.push_back(idx);
  }
  return plan;
}

}  // namespace tessera::runtime
