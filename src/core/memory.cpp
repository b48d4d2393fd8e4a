#include "core/memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera {

namespace {

thread_local bool tl_huge_pages = false;

size_t round_to_huge(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

void madvise_huge(void* p, size_t rounded) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
#else
  (void)p, (void)rounded;
#endif
}

}  // namespace

HugePagePolicy huge_page_policy() {
  static const HugePagePolicy policy = [] {
    const char* e = std::getenv("TESSERA_HUGE_PAGES");
    if (!e || !*e) return HugePagePolicy::lazy;
    const std::string v = e;
    if (v == "0" || v == "off") return HugePagePolicy::off;
    if (v == "1" || v == "eager") return HugePagePolicy::eager;
    return HugePagePolicy::lazy;
  }();
  return policy;
}

HugePagesScope::HugePagesScope() : prev_(tl_huge_pages) {
  tl_huge_pages = true;
}
HugePagesScope::~HugePagesScope() {
  tl_huge_pages = prev_;
}

void* allocate_aligned(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  const HugePagePolicy policy = huge_page_policy();
  if (!tl_huge_pages || bytes < kHugePageBytes || policy == HugePagePolicy::off)
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t rounded = round_to_huge(bytes);
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p && policy == HugePagePolicy::eager) madvise_huge(p, rounded);
  return p;
}

void advise_huge_pages(void* p, size_t bytes) {
  if (huge_page_policy() == HugePagePolicy::lazy && bytes >= kHugePageBytes &&
      reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0)
    madvise_huge(p, round_to_huge(bytes));
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
