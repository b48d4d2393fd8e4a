// The machine's roofline ceilings, measured here rather than looked up: the
// f32 FMA throughput of the widest ISA the dispatcher uses (independent FMA
// chains in registers, no memory traffic) and the STREAM-triad bandwidth
// (a[i] = b[i] + s * c[i] over arrays far larger than the caches). Both use
// `threads` threads of the pool. The profiler rates each op against them.
#pragma once

#include <string>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

struct Ceilings {
  double peak_gflops = 0;    // f32 FLOP/s / 1e9
  double bandwidth_gbs = 0;  // bytes/s / 1e9 (triad counts 3 x 4 bytes per element)
  std::string isa;           // the FMA loop that measured the peak
};

// ~`budget_ms` of measurement in all; both figures are the best of a few trials.
Ceilings measure_ceilings(ThreadPool* pool, double budget_ms = 300);

// Whether this core runs a 512-bit FMA as fast as a 256-bit one (two full-width FMA pipes: Zen 5, Intel's
// server cores), rather than as two halves (Zen 4): it doubles the FLOP rate the GEMM's packing and cache
// traffic must keep up with, so its blocking differs (gemm.cpp). Measured once (~50 us: the same 12 FMA
// chains with zmm and with ymm registers, best of a few trials); TESSERA_FMA512=full|half forces it where
// the AVX-512 kernels run. False without them.
bool fma512_full_width();
// Tests: 1 or 0 forces fma512_full_width()'s answer (both blockings run on any AVX-512 machine); -1 measures.
void force_fma512_full_width(int full);

// Defined per ISA (avx512f/, avx2/): runs `iters` rounds of independent FMAs and
// returns the number of FLOPs done (the result feeds `sink` so nothing is elided).
double fma_peak_loop_avx512f(long iters, float* sink);
double fma_peak_loop_avx2(long iters, float* sink);

}  // namespace tessera::kernels::x86
