// f32 GEMM: Tessera vs oneDNN (dnnl_sgemm) vs OpenBLAS (cblas_sgemm) on the shapes of issue 3,
// at 1 and 2 threads, in one process so that they share the machine's state.
//   build/release/bench/gemm_bench --benchmark_format=json --benchmark_repetitions=5 \
//       --benchmark_min_time=0.1 > gemm.json && python3 bench/gemm_table.py gemm.json
// Counters: GFLOPS (per second), GBps (A, B and C bytes once, per second: what bounds a GEMV),
// pct_peak (of the FMA peak measured at start, bench_common.h; TESSERA_PEAK_GFLOPS=per-core figure overrides)
// and, for M = 1, pct_stream (GBps as % of the STREAM triad measured at start at the same thread count).
// TESSERA_GEMM_PATH=packed|direct forces the A path.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <random>
#include <vector>

#include "bench/bench_common.h"
#include "core/thread_pool.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemm_amx.h"

namespace {

using tessera::bench::peak_gflops;
using tessera::bench::settle;

struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{256, 256, 256},
                         {512, 512, 512},
                         {1024, 1024, 1024},
                         {2048, 2048, 2048},
                         {1, 4096, 4096},
                         {128, 768, 768},
                         {128, 3072, 768},
                         {3136, 64, 576},
                         {196, 256, 2304},
                         {49, 2048, 512},
                         // model shapes (from kFirstModelShape): bert_base seq 16, gpt2 decode (M = 1)
                         // incl. the LM head, vit_b_16
                         {16, 768, 768},
                         {16, 3072, 768},
                         {16, 768, 3072},
                         {1, 2304, 768},
                         {1, 768, 3072},
                         {1, 50257, 768},
                         // vit_b_16 (197 tokens)
                         {197, 768, 768},
                         {197, 3072, 768},
                         {197, 768, 3072}};

constexpr int kFirstModelShape = 10;

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
  const double bytes =
      4.0 * (double(s.m) * double(s.k) + double(s.k) * double(s.n) + double(s.m) * double(s.n));
  st.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["pct_peak"] = benchmark::Counter(flops * 1e-9 * 100.0 / peak_gflops(threads),
                                               benchmark::Counter::kIsIterationInvariantRate);
  if (s.m == 1)
    st.counters["pct_stream"] = benchmark::Counter(bytes * 1e-9 * 100.0 / tessera::bench::stream_gbs(threads),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

void BM_tessera(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  settle();
  for (auto _ : st)
    tessera::kernels::x86::sgemm(s.m, s.n, s.k, d.a.data(), s.k, false, d.b.data(), s.n, false, d.c.data(),
                                 s.n, {}, &pool);
  report(st, s, threads);
}

void BM_tessera_prepacked(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  auto pb = tessera::kernels::x86::PackedB::pack(d.b.data(), s.n, false, s.k, s.n);
  settle();
  for (auto _ : st)
    tessera::kernels::x86::sgemm_packed(s.m, d.a.data(), s.k, false, pb, d.c.data(), s.n, {}, &pool);
  report(st, s, threads);
}

// One level of Strassen-Winograd over the same B packed once (registered where StrassenB::worthwhile):
// GFLOPS counts the classical 2MNK, so it reads as the speed-up over the classical kernel.
void BM_tessera_strassen(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  auto sb = tessera::kernels::x86::StrassenB::pack(d.b.data(), s.n, false, s.k, s.n);
  settle();
  for (auto _ : st)
    tessera::kernels::x86::sgemm_strassen(s.m, d.a.data(), s.k, false, sb, d.c.data(), s.n, {}, &pool);
  report(st, s, threads);
}

// f32 on AMX's bf16 tiles (kernels/x86/gemm_amx.h, bf16x6) over the same B split once (registered where
// the CPU has AMX-BF16 and M reaches kSplitMinRows).
void BM_tessera_amx(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  std::shared_ptr<void> sb(tessera::allocate_aligned(tessera::kernels::x86::split_b_bytes(s.k, s.n)),
                           tessera::free_aligned);
  tessera::kernels::x86::split_b_into(sb.get(), d.b.data(), s.n, false, s.k, s.n);
  settle();
  for (auto _ : st)
    tessera::kernels::x86::sgemm_split(s.m, s.n, s.k, d.a.data(), s.k, sb.get(), d.c.data(), s.n, {}, &pool);
  report(st, s, threads);
}

// "Cold" variants: B read from memory on every call, as in a model whose weights (bert_base: 340 MB) do not
// fit in L3 (32 MiB here) — the call cycles through copies of B that together take 128 MiB.
int64_t cold_copies(const Shape& s) {
  return std::max<int64_t>(2, (int64_t(128) << 20) / (4 * s.k * s.n));
}

void BM_tessera_prepacked_cold(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  tessera::ThreadPool pool(threads);
  std::vector<tessera::kernels::x86::PackedB> pbs;
  for (int64_t i = 0; i < cold_copies(s); ++i)
    pbs.push_back(tessera::kernels::x86::PackedB::pack(d.b.data(), s.n, false, s.k, s.n));
  size_t next = 0;
  settle();
  for (auto _ : st) {
    tessera::kernels::x86::sgemm_packed(s.m, d.a.data(), s.k, false, pbs[next], d.c.data(), s.n, {}, &pool);
    next = (next + 1) % pbs.size();
  }
  report(st, s, threads);
}

void BM_onednn_cold(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  omp_set_num_threads(threads);
  std::vector<std::vector<float>> bs(size_t(cold_copies(s)), d.b);
  size_t next = 0;
  settle();
  for (auto _ : st) {
    dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, d.a.data(), s.k, bs[next].data(), s.n, 0.0f, d.c.data(), s.n);
    next = (next + 1) % bs.size();
  }
  report(st, s, threads);
}

void BM_onednn(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  omp_set_num_threads(threads);  // Debian's oneDNN uses OpenMP
  settle();
  for (auto _ : st)
    dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, d.a.data(), s.k, d.b.data(), s.n, 0.0f, d.c.data(), s.n);
  report(st, s, threads);
}

void BM_openblas(benchmark::State& st) {
  const Shape s = kShapes[st.range(0)];
  const int threads = int(st.range(1));
  Data d(s);
  openblas_set_num_threads(threads);
  settle();
  for (auto _ : st)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.m), int(s.n), int(s.k), 1.0f, d.a.data(),
                int(s.k), d.b.data(), int(s.n), 0.0f, d.c.data(), int(s.n));
  report(st, s, threads);
}

}  // namespace

// Registered shape by shape, library after library, so that the four see the same machine
// state (the machine may be shared; a library run minutes later may see another load).
int main(int argc, char** argv) {
  const std::pair<const char*, void (*)(benchmark::State&)> libs[] = {
      {"BM_tessera", BM_tessera},
      {"BM_tessera_prepacked", BM_tessera_prepacked},
      {"BM_onednn", BM_onednn},
      {"BM_openblas", BM_openblas}};
  const std::pair<const char*, void (*)(benchmark::State&)> cold_libs[] = {
      {"BM_tessera_prepacked_cold", BM_tessera_prepacked_cold}, {"BM_onednn_cold", BM_onednn_cold}};
  for (int t : {1, 2})
    for (int i = 0; i < int(std::size(kShapes)); ++i) {
      for (const auto& [name, fn] : libs)
        benchmark::RegisterBenchmark(name, fn)
            ->Args({i, t})
            ->ArgNames({"shape", "threads"})
            ->UseRealTime()
            ->MinTime(0.2);
      if (tessera::kernels::x86::StrassenB::worthwhile(kShapes[i].m, kShapes[i].k, kShapes[i].n))
        benchmark::RegisterBenchmark("BM_tessera_strassen", BM_tessera_strassen)
            ->Args({i, t})
            ->ArgNames({"shape", "threads"})
            ->UseRealTime()
            ->MinTime(0.2);
      if (tessera::kernels::x86::amx_gemm_available() && kShapes[i].m >= tessera::kernels::x86::kSplitMinRows)
        benchmark::RegisterBenchmark("BM_tessera_amx", BM_tessera_amx)
            ->Args({i, t})
            ->ArgNames({"shape", "threads"})
            ->UseRealTime()
            ->MinTime(0.2);
      if (i >= kFirstModelShape)
        for (const auto& [name, fn] : cold_libs)
          benchmark::RegisterBenchmark(name, fn)
              ->Args({i, t})
              ->ArgNames({"shape", "threads"})
              ->UseRealTime()
              ->MinTime(0.2);
    }
  return tessera::bench::run_benchmarks(argc, argv);
}
