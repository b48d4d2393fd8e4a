#include "core/memory.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
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

// The background collapse (memory.h). One detached thread, started with the first block; the state is never
// destroyed, so the thread may outlive static destruction at exit.
class Collapser {
 public:
  static Collapser& get() {
    static const bool registered = [] {
#if defined(__linux__)
      // a forked child has none of the parent's threads: it starts afresh (the parent's state, whose mutex
      // another thread may have held at the fork, is left alone)
      pthread_atfork(nullptr, nullptr, [] { instance() = new Collapser; });
#endif
      return true;
    }();
    (void)registered;
    return *instance();
  }
  static Collapser*& instance() {
    static Collapser* c = new Collapser;
    return c;
  }
  void push(void* p, size_t bytes) {
    {
      std::lock_guard lk(m_);
      if (!supported_) return;
      q_.emplace_back(static_cast<char*>(p), bytes);
      if (!started_) {
        started_ = true;
        std::thread([this] { loop(); }).detach();
      }
    }
    work_.notify_one();
  }
  void cancel(void* p) {  // a block freed before its turn: not collapsed (its pages may be reused)
    std::lock_guard lk(m_);
    for (auto it = q_.begin(); it != q_.end();) it = it->first == p ? q_.erase(it) : it + 1;
  }
  void wait_idle() {
    std::unique_lock lk(m_);
    idle_.wait(lk, [&] { return (q_.empty() || holds_ > 0) && !busy_; });
  }
  void hold(int delta) {
    {
      std::lock_guard lk(m_);
      holds_ += delta;
    }
    work_.notify_one();
  }

 private:
  void loop() {
#if defined(__linux__)
    // below the workers: a run that needs both cores gets them
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
#endif
    std::unique_lock lk(m_);
    for (;;) {
      work_.wait(lk, [&] { return !q_.empty() && holds_ == 0; });
      const auto [p, bytes] = q_.front();
      q_.pop_front();
      busy_ = true;
      lk.unlock();
      bool ok = true;
#if defined(__linux__)
      constexpr int kMadvCollapse = 25;  // MADV_COLLAPSE (Linux 6.1); older headers lack the name
      // one huge page per call, so a failure (no free huge page just now) skips only that one
      for (size_t o = 0; o < bytes && ok; o += kHugePageBytes)
        if (madvise(p + o, kHugePageBytes, kMadvCollapse) != 0 && errno == EINVAL) ok = false;
#else
      ok = false;
#endif
      lk.lock();
      busy_ = false;
      if (!ok) supported_ = false, q_.clear();  // the kernel has no MADV_COLLAPSE: khugepaged's job
      idle_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable work_, idle_;
  std::deque<std::pair<char*, size_t>> q_;
  int holds_ = 0;
  bool started_ = false, busy_ = false, supported_ = true;
};

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

void free_aligned(void* p) {
  // only blocks of a HugePagesScope can be queued, and those are 2 MiB-aligned
  if (p && reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0 && huge_page_policy() == HugePagePolicy::lazy)
    Collapser::get().cancel(p);
  std::free(p);
}

void advise_huge_pages(void* p, size_t bytes) {
  if (huge_page_policy() == HugePagePolicy::lazy && bytes >= kHugePageBytes &&
      reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0) {
    madvise_huge(p, round_to_huge(bytes));
    Collapser::get().push(p, round_to_huge(bytes));
  }
}

void wait_for_huge_page_collapse() {
  Collapser::get().wait_idle();
}

HugePageCollapseHold::HugePageCollapseHold() {
  Collapser::get().hold(1);
}
HugePageCollapseHold::~HugePageCollapseHold() {
  Collapser::get().hold(-1);
}

namespace {

// The released blocks allocate_block keeps: (size, block), oldest first. Never destroyed: a block may be
// released during static destruction at exit (a Python array, a static session).
class BlockCache {
 public:
  static BlockCache& get() {
    static BlockCache* c = new BlockCache;
    return *c;
  }
  void* take(size_t bytes) {
    std::lock_guard lk(m_);
    for (size_t i = blocks_.size(); i-- > 0;)  // the most recent first: likelier in cache
      if (blocks_[i].first == bytes) {
        void* p = blocks_[i].second;
        blocks_.erase(blocks_.begin() + std::ptrdiff_t(i));
        held_ -= bytes;
        return p;
      }
    return nullptr;
  }
  void give(void* p, size_t bytes) {
    std::vector<void*> drop;
    {
      std::lock_guard lk(m_);
      // a block of up to half the cache is kept: GPT-2's logits over 512 tokens (103 MB) faulted in afresh
      // every run, 70 ms on the VM (its LM head 431 ms against onnxruntime's 366)
      if (bytes > kCachedBytes / 2) {
        drop.push_back(p);
      } else {
        blocks_.emplace_back(bytes, p);
        held_ += bytes;
        while (held_ > kCachedBytes) {
          drop.push_back(blocks_.front().second);
          held_ -= blocks_.front().first;
          blocks_.erase(blocks_.begin());
        }
      }
    }
    for (void* q : drop) free_aligned(q);
  }

 private:
  std::mutex m_;
  std::vector<std::pair<size_t, void*>> blocks_;
  size_t held_ = 0;
};

}  // namespace

// Under AddressSanitizer every block goes back to the allocator, so that a use after release is still
// caught (a kept block would stay valid memory).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kKeepBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kKeepBlocks = false;
#else
constexpr bool kKeepBlocks = true;
#endif
#else
constexpr bool kKeepBlocks = true;
#endif

std::shared_ptr<void> allocate_block(size_t bytes) {
  if (!kKeepBlocks || bytes < kCachedBlockMin || tl_huge_pages) {
    void* p = allocate_aligned(bytes);
    return p ? std::shared_ptr<void>(p, [](void* q) { free_aligned(q); }) : nullptr;
  }
  bytes = (bytes + 4095) / 4096 * 4096;  // sizes a page apart share blocks
  void* p = BlockCache::get().take(bytes);
  if (!p) p = allocate_aligned(bytes);
  if (!p) return nullptr;
  return std::shared_ptr<void>(p, [bytes](void* q) { BlockCache::get().give(q, bytes); });
}

WeightPool::~WeightPool() {
  for (const Chunk& c : chunks_)
    if (c.used >= c.size / 2) advise_huge_pages(c.p.get(), c.size);
}

std::pair<std::shared_ptr<void>, size_t> WeightPool::allocate(size_t bytes) {
  bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  const bool own = bytes >= kHugePageBytes;
  if (own || open_ >= chunks_.size() || chunks_[open_].used + bytes > chunks_[open_].size) {
    const size_t size = round_to_huge(bytes);
    void* p = nullptr;
    {
      const HugePagesScope huge;
      p = allocate_aligned(size);
    }
    if (!p) throw std::bad_alloc();
    chunks_.push_back({std::shared_ptr<void>(p, [](void* q) { free_aligned(q); }), 0, size});
    if (!own) open_ = chunks_.size() - 1;
  }
  Chunk& c = own ? chunks_.back() : chunks_[open_];
  const size_t at = c.used;
  c.used += bytes;
  return {c.p, at};
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
