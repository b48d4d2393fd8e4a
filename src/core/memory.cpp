#include "core/memory.h"

#include <algorithm>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera {

void* allocate_aligned(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes < kHugePageBytes) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
#endif
  return p;
}

}  // namespace tessera
