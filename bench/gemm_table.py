#!/usr/bin/env python3
"""Markdown table of a gemm_bench JSON run: best of the repetitions per (library, shape, threads).

    build/release/bench/gemm_bench --benchmark_format=json --benchmark_repetitions=5 \\
        --benchmark_min_time=0.1 > gemm.json
    python3 bench/gemm_table.py gemm.json

Best-of, not the median, because the machine is shared: other jobs only ever slow a run down.
The last column (model shapes only): B cycled through 128 MiB of copies, so it streams from memory as a
model's weights do (the other columns reuse one B, which stays in the 32 MiB L3).
"""
import collections
import json
import sys

SHAPES = ["256³", "512³", "1024³", "2048³", "1×4096×4096", "128×768×768", "128×3072×768", "3136×64×576",
          "196×256×2304", "49×2048×512", "16×768×768", "16×3072×768", "16×768×3072", "1×2304×768", "1×768×3072",
          "1×50257×768", "197×768×768", "197×3072×768", "197×768×3072"]
PEAK_PER_CORE = 114.8  # GFLOP/s: 32 f32 FLOP/cycle at 3.59 GHz (issue 3)


def main():
    d = json.load(open(sys.argv[1]))
    rows = collections.defaultdict(dict)
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"].split("/")
        lib, sh, th = name[0][3:], int(name[1].split(":")[1]), int(name[2].split(":")[1])
        v = (b["GFLOPS"], b["GBps"])
        if lib not in rows[(th, sh)] or v[0] > rows[(th, sh)][lib][0]:
            rows[(th, sh)][lib] = v
    print("| shape M×N×K | threads | tessera | tessera prepacked | oneDNN | OpenBLAS | tessera % peak "
          "| tessera/oneDNN (unpacked, prepacked) | B from memory: tessera prepacked / oneDNN |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (th, sh), r in sorted(rows.items()):
        gemv = SHAPES[sh].startswith("1×")

        def cell(lib):
            if lib not in r:
                return "–"
            return f"{r[lib][0]:.1f}" + (f" ({r[lib][1]:.1f} GB/s)" if gemv else "")

        best = max(r["tessera"][0], r["tessera_prepacked"][0])
        print(f"| {SHAPES[sh]} | {th} | {cell('tessera')} | {cell('tessera_prepacked')} | {cell('onednn')} "
              f"| {cell('openblas')} | {100 * best / (PEAK_PER_CORE * th):.0f}% "
              f"| {r['tessera'][0] / r['onednn'][0]:.2f}, {r['tessera_prepacked'][0] / r['onednn'][0]:.2f} "
              f"| {cell('tessera_prepacked_cold')} / {cell('onednn_cold')} |")


if __name__ == "__main__":
    main()
