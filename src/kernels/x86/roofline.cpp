#include "kernels/x86/roofline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cpu_features.h"

namespace tessera::kernels::x86 {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A scalar chain set the compiler may vectorize as it likes: the portable
// build's ceiling is what portable code can reach.
double fma_peak_loop_portable(long iters, float* sink) {
  float acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = float(i) * 1e-3f;
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
  for (float a : acc) *sink += a;
  return double(iters) * 16 * 2;
}

int threads_of(ThreadPool* pool) {
  return pool ? pool->num_threads() : 1;
}

// force_fma512_full_width's setting (-1: measure)
std::atomic<int> g_forced_full_width{-1};

}  // namespace

void force_fma512_full_width(int full) {
  g_forced_full_width.store(full, std::memory_order_relaxed);
}

bool fma512_full_width() {
  if (const int forced = g_forced_full_width.load(std::memory_order_relaxed); forced >= 0) return forced != 0;
  static const bool full = [] {
#if defined(__x86_64__)
    const CpuFeatures& cpu = cpu_features();
    if (!cpu.avx512_core() || !(cpu.avx2 && cpu.fma)) return false;
    if (const char* f = std::getenv("TESSERA_FMA512")) return std::strcmp(f, "full") == 0;
    // the same number of FMA instructions, 16 or 8 lanes each: about equal times on full-width pipes, twice
    // the time for the zmm loop on double-pumped ones (the ratio is what decides, so the clock drops out)
    float sink = 0;
    constexpr long kIters = 2000;  // 24k FMAs: ~12k cycles on two pipes
    double t512 = 1e9, t256 = 1e9;
    for (int trial = 0; trial < 5; ++trial) {
      auto t0 = Clock::now();
      fma_peak_loop_avx512f(kIters, &sink);
      t512 = std::min(t512, seconds_since(t0));
      t0 = Clock::now();
      fma_peak_loop_avx2(kIters, &sink);
      t256 = std::min(t256, seconds_since(t0));
    }
    return t512 < 1.5 * t256;
#else
    return false;
#endif
  }();
  return full;
}

Ceilings measure_ceilings(ThreadPool* pool, double budget_ms) {
  Ceilings c;
  const CpuFeatures& f = cpu_features();
  double (*loop)(long, float*) = fma_peak_loop_portable;
  c.isa = "portable";
#if defined(__x86_64__)
  if (f.avx512_core()) {
    loop = fma_peak_loop_avx512f;
    c.isa = "avx512f";
  } else if (f.avx2 && f.fma) {
    loop = fma_peak_loop_avx2;
    c.isa = "avx2";
  }
#endif
  const int nt = threads_of(pool);
  const double trial_s = budget_ms * 1e-3 / 8;

  // Peak: calibrate the iteration count on one thread, then time all threads together.
  float sink = 0;
  long iters = 1 << 14;
  for (;;) {
    const auto t0 = Clock::now();
    loop(iters, &sink);
    if (seconds_since(t0) > trial_s / 4 || iters > (1L << 40)) break;
    iters *= 2;
  }
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<float> sinks(size_t(nt), 0.0f);
    std::atomic<double> flops{0};
    const auto t0 = Clock::now();
    auto body = [&](int64_t t) {
      const double done = loop(iters, &sinks[size_t(t)]);
      double cur = flops.load();
      while (!flops.compare_exchange_weak(cur, cur + done)) {
      }
    };
    if (pool)
      pool->run(nt, body);
    else
      body(0);
    c.peak_gflops = std::max(c.peak_gflops, flops.load() / seconds_since(t0) * 1e-9);
    for (float s : sinks) sink += s;
  }

  // Bandwidth: STREAM triad over 3 arrays of 32 MiB each (well beyond L2/L3 per core here).
  const int64_t n = int64_t(8) << 20;
  std::unique_ptr<float[]> a(new float[size_t(n)]), b(new float[size_t(n)]), d(new float[size_t(n)]);
  auto init = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) a[i] = 0.0f, b[i] = 1.0f + float(i & 7), d[i] = 2.0f;
  };
  parallel_for(pool, n, 1 << 16, init);  // first touch on the threads that use the pages
  for (int trial = 0; trial < 4; ++trial) {
    const auto t0 = Clock::now();
    parallel_for(pool, n, 1 << 16, [&](int64_t lo, int64_t hi) {
      float* __restrict pa = a.get();
      const float* __restrict pb = b.get();
      const float* __restrict pd = d.get();
      for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 0.5f * pd[i];
    });
    c.bandwidth_gbs = std::max(c.bandwidth_gbs, double(n) * 12 / seconds_since(t0) * 1e-9);
  }
  sink += a[size_t(n / 2)];
  if (sink == 12345.678f) c.isa += " ";  // keep `sink` observable
  return c;
}

}  // namespace tessera::kernels::x86
