#include "core/memory.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera {

namespace {

// TESSERA_HUGE_PAGES=0 turns the advice off (measurements, or a system where THP compaction stalls).
bool huge_pages_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TESSERA_HUGE_PAGES");
    return !(e && e[0] == '0');
  }();
  return on;
}

thread_local bool tl_ordinary_pages = false;

}  // namespace

OrdinaryPagesScope::OrdinaryPagesScope() : prev_(tl_ordinary_pages) {
  tl_ordinary_pages = true;
}
OrdinaryPagesScope::~OrdinaryPagesScope() {
  tl_ordinary_pages = prev_;
}

void* allocate_aligned(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes < kHugePageBytes || !huge_pages_enabled() || tl_ordinary_pages)
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
#endif
  return p;
}

AlignedScratch::~AlignedScratch() {
  std::free(p_);
}

float* AlignedScratch::get(size_t n) {
  if (n > n_) {
    std::free(p_);
    p_ = nullptr, n_ = 0;
    p_ = static_cast<float*>(allocate_aligned(n * sizeof(float)));
    if (!p_) throw std::bad_alloc();
    n_ = n;
  }
  return p_;
}

}  // namespace tessera
