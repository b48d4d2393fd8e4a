// Copying a strided view into contiguous memory, for trivially copyable
// elements: dims that are contiguous with each other are merged first, then
// the innermost run is one memcpy (unit stride) or a tight loop, so a Slice,
// a Split or a permuted view costs about a memcpy rather than index
// arithmetic per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera {

class ThreadPool;

// dst[i] (row-major over `shape`) = src[(base + sum idx[d] * strides[d]) * elem_size bytes]. A large copy
// is split over `pool`'s threads when one is given.
void strided_copy(const void* src, int64_t base, const std::vector<int64_t>& strides, void* dst,
                  const std::vector<int64_t>& shape, size_t elem_size, ThreadPool* pool = nullptr);

}  // namespace tessera
