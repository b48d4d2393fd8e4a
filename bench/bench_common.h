// What the kernel benchmarks (gemm_bench, conv_bench) share: the peak their "% peak" counters use, the
// pause before each benchmark, and the Google Benchmark main.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "core/memory.h"
#include "core/thread_pool.h"
#include "kernels/x86/roofline.h"

namespace tessera::bench {

// The machine's ceilings at `threads` threads, measured once per thread count (kernels/x86/roofline.h: FMA
// chains in registers, STREAM triad far past L3): the same VM class has been a Zen 4 (32 f32 FLOP/cycle) and
// a Zen 5 (64, full-width AVX-512), so a nominal figure would misstate "% peak" on one of them.
inline const kernels::x86::Ceilings& ceilings(int threads) {
  static std::map<int, kernels::x86::Ceilings> measured;
  auto it = measured.find(threads);
  if (it == measured.end()) {
    ThreadPool pool(threads);
    it = measured.emplace(threads, kernels::x86::measure_ceilings(&pool, 400)).first;
  }
  return it->second;
}

// f32 FLOP/s (1e9) at `threads` threads: TESSERA_PEAK_GFLOPS per core if set, else measured.
inline double peak_gflops(int threads) {
  if (const char* g = std::getenv("TESSERA_PEAK_GFLOPS")) return std::atof(g) * threads;
  return ceilings(threads).peak_gflops;
}

// STREAM-triad bandwidth (GB/s, 3 x 4 bytes per element) at `threads` threads, measured.
inline double stream_gbs(int threads) {
  return ceilings(threads).bandwidth_gbs;
}

// Each benchmark starts after a pause: the libraries' worker threads (OpenMP's, OpenBLAS's, Tessera's
// pool) keep spinning for a while after a call, and would otherwise hold the cores while the next library
// is timed.
// Tessera's packed weights are collapsed into huge pages in the background (core/memory.h): wait for that
// too, so a benchmark times the steady state rather than the collapse's page-table locks.
inline void settle() {
  wait_for_huge_page_collapse();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // the ceilings before any library's threads run (they would spin on the cores the probes time)
  for (int t = 1; t <= 2; ++t) {
    const auto& c = ceilings(t);
    benchmark::AddCustomContext("peak_gflops_" + std::to_string(t) + "t", std::to_string(c.peak_gflops));
    benchmark::AddCustomContext("stream_gbs_" + std::to_string(t) + "t", std::to_string(c.bandwidth_gbs));
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tessera::bench
