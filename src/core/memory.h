// Aligned allocation for tensors, packed weights and scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tessera {

// The transparent huge page size (Linux, x86-64): see HugePagesScope.
inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// Returns `bytes` (rounded up to 64) of 64-byte-aligned memory, or nullptr if none is left; free with
// free_aligned (std::free also works, but does not take the block out of the huge-page collapse queue).
void* allocate_aligned(size_t bytes);
void free_aligned(void* p);

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

// Storage for a tensor (64-byte aligned), released when the last owner lets go. Blocks of kCachedBlockMin
// bytes and more are kept when released (kCachedBytes in all, the oldest let go first) and handed out again
// for the same size: a model's outputs are allocated every run (they outlive it, outside the arena), and
// glibc maps such blocks afresh each time — every 4 KiB page then faults in again, ~2 us each on a VM
// (a 1.2 MB output: 0.6 ms a run). onnxruntime's arena allocator keeps them too. Within a
// HugePagesScope (weights) blocks are allocated as there, never from the cache.
std::shared_ptr<void> allocate_block(size_t bytes);
inline constexpr size_t kCachedBlockMin = size_t(128) << 10, kCachedBytes = size_t(256) << 20;

// Transparent huge pages for weights a kernel streams from memory. On 4 KiB pages a 64-wide packed panel
// crosses a page every 16 rows; on 2 MiB pages the TLB misses vanish and the hardware prefetchers run on —
// measured on Zen 4 with weights cycled through 128 MiB (bench/gemm_bench *_cold): M = 16 GEMM 9-15%
// faster, M = 1 GEMV 1.5x; a GPT-2 decode step on the Zen 3 VM 3-5% (its GEMVs now read four streams of
// panels, which recovers most of that on 4 KiB pages: gemv_panels_impl.h); packed conv filters of 2 MiB
// and more (ResNet-50 2.5-6% on a Xeon VM). Everything else stays on ordinary pages: data read from cache
// many times over gains nothing.
//
// When: a fresh 2 MiB page cannot reuse the 4 KiB pages just freed, and on a VM that hands free memory back
// to its host each one costs a host fault on first touch — bert_base's session creation took 1.6-4.8 s
// instead of 0.7 on the Zen 3 VM with its packed weights advised before they were written (1.5-2.3 s
// instead of 0.47-0.68 for bert_base and GPT-2 on the Xeon VM). So by default (`lazy`) the weights are
// written on ordinary pages, advised afterwards, and handed to one background thread per process that
// collapses them into huge pages (MADV_COLLAPSE, Linux 6.1+), oldest first: session creation pays nothing,
// and the runs reach huge pages within a second or two — khugepaged alone collapses about 16 MiB every
// 10 s with Linux's defaults, minutes for a transformer's weights. On the Xeon VM, BERT-base and GPT-2 at
// 16 tokens run 12-15% faster on huge pages (one thread). Collapsing copies each 2 MiB into a fresh huge
// page with the same contents, so a block freed or reused meanwhile is harmless (the call fails, or changes
// only the page size of whatever lives there now). Older kernels: khugepaged does it in its own time.
// TESSERA_HUGE_PAGES=1 (`eager`) advises at allocation: huge pages from the first run, where they are cheap
// to fault in (bare metal); TESSERA_HUGE_PAGES=0 never.
enum class HugePagePolicy { off, lazy, eager };
HugePagePolicy huge_page_policy();

// While one is alive, this thread's allocations of kHugePageBytes or more are 2 MiB-aligned (advised at
// once under `eager`). Pair each with advise_huge_pages once its contents are written.
class HugePagesScope {
 public:
  HugePagesScope();
  ~HugePagesScope();
  HugePagesScope(const HugePagesScope&) = delete;
  HugePagesScope& operator=(const HugePagesScope&) = delete;

 private:
  bool prev_;
};

// Under `lazy`, advises a block allocated in a HugePagesScope as huge pages and queues it for the
// background collapse; otherwise (and for blocks that are small or not 2 MiB-aligned) does nothing.
void advise_huge_pages(void* p, size_t bytes);

// Small read-only blocks made at session creation (packed filters under 2 MiB) side by side in shared
// 2 MiB chunks, which go on huge pages as the large blocks do (advise_huge_pages) once the pool is gone
// (its blocks written). Apart, each on its own 4 KiB pages, MobileNetV2's 14 MB of filters took ~3500
// pages (past Zen 4's 3072-entry L2 TLB), read once per run from L3. A chunk under half full is left on
// ordinary pages (a small model's few KiB stay small).
class WeightPool {
 public:
  WeightPool() = default;
  ~WeightPool();
  WeightPool(const WeightPool&) = delete;
  WeightPool& operator=(const WeightPool&) = delete;
  // Room for `bytes` (64-byte aligned): the chunk that owns it, which lives as long as any of its blocks,
  // and the offset into it. A block of kHugePageBytes or more gets a chunk of its own.
  std::pair<std::shared_ptr<void>, size_t> allocate(size_t bytes);

 private:
  struct Chunk {
    std::shared_ptr<void> p;
    size_t used, size;
  };
  std::vector<Chunk> chunks_;
  size_t open_ = SIZE_MAX;  // the chunk small blocks go to
};

// Blocks until the background collapse has gone through every block queued so far (tests, benchmarks that
// want the steady state); returns at once while a HugePageCollapseHold defers it.
void wait_for_huge_page_collapse();

// While one is alive, the background collapse starts no block: a session's creation holds it, since each
// collapse takes the process's memory-map lock, which the page faults of the weights still being written
// wait for (bert_base's creation took 1-1.8 s instead of 0.45 with the two overlapping).
class HugePageCollapseHold {
 public:
  HugePageCollapseHold();
  ~HugePageCollapseHold();
  HugePageCollapseHold(const HugePageCollapseHold&) = delete;
  HugePageCollapseHold& operator=(const HugePageCollapseHold&) = delete;
};

}  // namespace tessera
