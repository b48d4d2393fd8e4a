#!/usr/bin/env python3
"""Markdown table of a gemm_bench JSON run: the median of the repetitions per (library, shape, threads).

    build/release/bench/gemm_bench --benchmark_format=json --benchmark_repetitions=5 \\
        --benchmark_min_time=0.1 --benchmark_enable_random_interleaving=true > gemm.json
    python3 bench/gemm_table.py gemm.json [--best]

--best takes the best repetition instead (other jobs on a shared machine only ever slow a run down).
% peak is of the FMA peak gemm_bench measured at start at that thread count (its JSON context), for the
unpacked and the prepacked B; for M = 1 the GB/s figures are also given as % of the STREAM triad measured
there. The last column (model shapes only): B cycled through 128 MiB of copies, so it streams from memory as
a model's weights do (the other columns reuse one B, which stays in the 32 MiB L3). Where the run has AMX's
(tessera_amx: f32 on bf16 tiles over B split once, kernels/x86/gemm_amx.h), it is a column of its own, with
its % of the AVX-512 FMA peak and its ratio to oneDNN.
"""
import collections
import json
import statistics
import sys

SHAPES = ["256³", "512³", "1024³", "2048³", "1×4096×4096", "128×768×768", "128×3072×768", "3136×64×576",
          "196×256×2304", "49×2048×512", "16×768×768", "16×3072×768", "16×768×3072", "1×2304×768", "1×768×3072",
          "1×50257×768", "197×768×768", "197×3072×768", "197×768×3072"]
PEAK_PER_CORE = 114.8  # GFLOP/s: runs from before gemm_bench measured its peak (Zen 4, 32 FLOP/cycle, 3.59 GHz)


def main():
    d = json.load(open(sys.argv[1]))
    best_of = "--best" in sys.argv[2:]
    ctx = d.get("context", {})
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"].split("/")
        lib, sh, th = name[0][3:], int(name[1].split(":")[1]), int(name[2].split(":")[1])
        runs[(th, sh)][lib].append((b["GFLOPS"], b["GBps"]))
    pick = (lambda v: max(v)) if best_of else (lambda v: (statistics.median(x[0] for x in v),
                                                          statistics.median(x[1] for x in v)))
    rows = {key: {lib: pick(v) for lib, v in libs.items()} for key, libs in runs.items()}

    def peak(th):
        return float(ctx.get(f"peak_gflops_{th}t", PEAK_PER_CORE * th))

    print(f"FMA peak measured: {', '.join(f'{t}T {peak(t):.1f} GFLOP/s' for t in (1, 2))}; STREAM triad: "
          f"{', '.join(f'{t}T ' + ctx.get(f'stream_gbs_{t}t', '?')[:5] + ' GB/s' for t in (1, 2))}\n")
    amx = any("tessera_amx" in r for r in rows.values())
    print("| shape M×N×K | threads | tessera | tessera prepacked | " + ("tessera AMX | " if amx else "") +
          "oneDNN | OpenBLAS | tessera % peak (unpacked, prepacked" + (", AMX" if amx else "") +
          ") | tessera/oneDNN (unpacked, prepacked" + (", AMX" if amx else "") +
          ") | B from memory: tessera prepacked / oneDNN |")
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if amx else ""))
    for (th, sh), r in sorted(rows.items()):
        gemv = SHAPES[sh].startswith("1×")
        stream = float(ctx.get(f"stream_gbs_{th}t", 0))

        def cell(lib):
            if lib not in r:
                return "–"
            if not gemv:
                return f"{r[lib][0]:.1f}"
            pct = f", {100 * r[lib][1] / stream:.0f}% of STREAM" if stream else ""
            return f"{r[lib][0]:.1f} ({r[lib][1]:.1f} GB/s{pct})"

        def ratio(lib):
            return f"{r[lib][0] / r['onednn'][0]:.2f}" if lib in r and "onednn" in r else "–"

        def pct_peak(lib):
            return f"{100 * r[lib][0] / peak(th):.0f}%" if lib in r else "–"

        a_cell, a_pct, a_ratio = (f" {cell('tessera_amx')} |", f", {pct_peak('tessera_amx')}",
                                  f", {ratio('tessera_amx')}") if amx else ("", "", "")
        print(f"| {SHAPES[sh]} | {th} | {cell('tessera')} | {cell('tessera_prepacked')} |{a_cell} {cell('onednn')} "
              f"| {cell('openblas')} | {pct_peak('tessera')}, {pct_peak('tessera_prepacked')}{a_pct} "
              f"| {ratio('tessera')}, {ratio('tessera_prepacked')}{a_ratio} "
              f"| {cell('tessera_prepacked_cold')} / {cell('onednn_cold')} |")


if __name__ == "__main__":
    main()
