// Aligned allocation for tensors, packed weights and scratch.
#pragma once

#include <cstddef>

namespace tessera {

// Blocks of at least this size are 2 MiB-aligned and advised as transparent huge pages (Linux). A weight
// streamed from memory on 4 KiB pages crosses a page every 16 rows of a 64-wide packed panel; on 2 MiB
// pages the TLB misses vanish and the hardware prefetchers run on: measured on Zen 4 with weights cycled
// through 128 MiB (bench/gemm_bench *_cold), M = 16 GEMM 9-15% faster, M = 1 GEMV 1.5x.
inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// Returns `bytes` (rounded up to 64) of 64-byte-aligned memory, or nullptr if none is left; free with
// std::free.
void* allocate_aligned(size_t bytes);

// Scratch memory, 64-byte aligned (a std::vector's 16-byte alignment splits every other zmm access across
// two cache lines: the fused pointwise+depthwise conv ran 10-15% slower on such a band), grown on demand;
// the contents are not kept when it grows. Meant as a thread_local per kernel.
class AlignedScratch {
 public:
  AlignedScratch() = default;
  ~AlignedScratch();
  AlignedScratch(const AlignedScratch&) = delete;
  AlignedScratch& operator=(const AlignedScratch&) = delete;
  // At least n floats; throws std::bad_alloc when memory is exhausted.
  float* get(size_t n);

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

// While one is alive, this thread's allocations stay on ordinary pages: for data read from cache many
// times over (convolution filters), which gains nothing from huge pages, while each fresh 2 MiB page costs
// session creation (a new VM backs it on first touch) and cannot reuse the 4 KiB pages just freed.
class OrdinaryPagesScope {
 public:
  OrdinaryPagesScope();
  ~OrdinaryPagesScope();
  OrdinaryPagesScope(const OrdinaryPagesScope&) = delete;
  OrdinaryPagesScope& operator=(const OrdinaryPagesScope&) = delete;

 private:
  bool prev_;
};

}  // namespace tessera
