// What the kernel benchmarks (gemm_bench, conv_bench) share: the peak their "% peak" counters use, the
// pause before each benchmark, and the Google Benchmark main.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/memory.h"

namespace tessera::bench {

// 32 f32 FLOP/cycle/core at the nominal clock in TESSERA_PEAK_GHZ (default 3.5875: 114.8 GFLOP/s a core).
inline double peak_gflops(int threads) {
  const char* g = std::getenv("TESSERA_PEAK_GHZ");
  return (g ? std::atof(g) : 3.5875) * 32.0 * threads;
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tessera::bench
