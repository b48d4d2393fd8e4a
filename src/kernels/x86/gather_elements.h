// GatherElements over contiguous data: out[..., a, ...] = x[..., idx[..., a, ...], ...] along one axis.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

// x of shape xs, indices (int64 or int32, `idx_bytes` 8 or 4) of shape is (the same rank, each dim at most
// x's but on `axis`), values of `es` bytes (1, 2, 4 or 8). Negative indices count from the end. Returns false
// (y partly written) where an index is out of range: the caller reports it.
bool gather_elements(const void* x, const std::vector<int64_t>& xs, const void* idx, int idx_bytes,
                     const std::vector<int64_t>& is, int64_t axis, int es, void* y, ThreadPool* pool);

}  // namespace tessera::kernels::x86
