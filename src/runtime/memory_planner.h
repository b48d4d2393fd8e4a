// Static memory planning: given buffers with sizes and live intervals (node
// indices, inclusive), assign each an offset in one arena so that buffers live
// at the same time never overlap. Greedy best-fit, largest buffers first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::runtime {

inline constexpr size_t kArenaAlignment = 64;

struct BufferRequest {
  size_t size = 0;  // bytes
  int first = 0;    // node index that allocates it
  int last = 0;     // node index of its last use (>= first)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, aligned to kArenaAlignment
  size_t arena_size = 0;        // bytes the arena needs
};

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests);

// Whether two requests are live at the same time.
inline bool intervals_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace tessera::runtime
