// f32 GEMM: Tessera vs oneDNN (dnnl_sgemm) vs OpenBLAS (cblas_sgemm) on the shapes of issue 3,
// at 1 and 2 threads, in one process so that they share the machine's state.
//   build/bench/bench/gemm_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Counters: GFLOPS (per second), GBps (A + B + C bytes once, per second: the GEMV bound) and pct_peak (of 32 f32 FLOP/cycle/core at the nominal clock
// passed in TESSERA_PEAK_GHZ, default 3.6 — 114.8 GFLOP/s per core).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/gemm.h"

namespace {

struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{256, 256, 256},  {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
                         {1, 4096, 4096},  {128, 768, 768},  {128, 3072, 768},   {3136, 64, 576},
                         {196, 256, 2304}, {49, 2048, 512},
                         // model shapes: bert_base seq 16, gpt2 decode (M = 1) incl. the LM head
                         {16, 768, 768},   {16, 3072, 768},  {16, 768, 3072},    {1, 2304, 768},
                         {1, 768, 3072},   {1, 50257, 768}};

double peak_gflops(int threads) {
  const char* g = std::getenv("TESSERA_PEAK_GHZ");
  return (g ? std::atof(g) : 3.5875) * 32.0 * threads;
}

struct Data {
  std::vector<float> a, b, c;
  explicit Data(const Shape& s) : a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), c(size_t(s.m * s.n)) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1, 1);
    for (auto& x : a) x = d(rng);
    for (auto& x : b) x = d(rng);
  }
};

void report(benchmark::State& st, const Shape& s, int threads) {
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  st.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // bytes of A, B and C touched once: the bandwidth a GEMV (M = 1) is bound by
  const double bytes = 4.0 * (double(s.m) * double(s.k) + double(s.k) * double(s.n) + double(s.m) * double(s.n));
  st.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["pct_peak"] =
      benchmark::Counter(flops * 1e-9 * 100.0 / peak_gflops(threads), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_tessera(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  for (auto _ : st)
    tessera::kernels::x86::sgemm(s.m, s.n, s.k, d.a.data(), s.k, false, d.b.data(), s.n, false, d.c.data(), s.n,
                                 {}, &pool);
  report(st, s, threads);
}

void BM_tessera_prepacked(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  auto pb = tessera::kernels::x86::PackedB::pack(d.b.data(), s.n, false, s.k, s.n);
  for (auto _ : st) tessera::kernels::x86::sgemm_packed(s.m, d.a.data(), s.k, false, pb, d.c.data(), s.n, {}, &pool);
  report(st, s, threads);
}

void BM_onednn(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  omp_set_num_threads(threads);  // Debian's oneDNN uses OpenMP
  for (auto _ : st)
    dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, d.a.data(), s.k, d.b.data(), s.n, 0.0f, d.c.data(), s.n);
  report(st, s, threads);
}

void BM_openblas(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  openblas_set_num_threads(threads);
  for (auto _ : st)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.m), int(s.n), int(s.k), 1.0f, d.a.data(), int(s.k),
                d.b.data(), int(s.n), 0.0f, d.c.data(), int(s.n));
  report(st, s, threads);
}

void args(benchmark::internal::Benchmark* b) {
  for (int t : {1, 2})
    for (int i = 0; i < int(std::size(kShapes)); ++i) b->Args({i, t});
  b->ArgNames({"shape", "threads"})->UseRealTime()->MinTime(0.2);
}

}  // namespace

// Interleaved per shape so the libraries see the same machine state.
BENCHMARK(BM_tessera)->Apply(args);
BENCHMARK(BM_tessera_prepacked)->Apply(args);
BENCHMARK(BM_onednn)->Apply(args);
BENCHMARK(BM_openblas)->Apply(args);
BENCHMARK_MAIN();
