#!/usr/bin/env python3
"""Markdown table of a conv_bench JSON run: median of the repetitions per (library, shape, threads).

    build/release/bench/conv_bench --benchmark_format=json --benchmark_repetitions=5 > conv.json
    python3 bench/conv_table.py conv.json
"""
import collections
import json
import statistics
import sys


def main():
    d = json.load(open(sys.argv[1]))
    runs = collections.defaultdict(list)
    order = []
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        lib, rest = b["name"].split("/", 1)
        shape = rest.split("/shape:")[0]
        threads = int(rest.split("/threads:")[1].split("/")[0])
        lib = lib[3:].replace("_pair", "")
        if (shape, threads) not in order:
            order.append((shape, threads))
        runs[(shape, threads, lib)].append((b["real_time"] * {"ns": 1e-3, "us": 1, "ms": 1e3}[b["time_unit"]],
                                            b["GFLOPS"], b["pct_peak"]))
    print("| conv (NHWC, bias + ReLU6) | threads | tessera µs | oneDNN µs | tessera GFLOP/s | % peak | "
          "tessera/oneDNN time |")
    print("|---|---|---|---|---|---|---|")
    for shape, th in sorted(order, key=lambda k: (k[1], order.index(k))):
        t, o = runs.get((shape, th, "tessera")), runs.get((shape, th, "onednn"))
        if not t or not o:
            continue
        tt, ot = statistics.median(r[0] for r in t), statistics.median(r[0] for r in o)
        g, pk = statistics.median(r[1] for r in t), statistics.median(r[2] for r in t)
        print(f"| {shape} | {th} | {tt:.1f} | {ot:.1f} | {g:.1f} | {pk:.0f}% | {tt / ot:.2f} |")


if __name__ == "__main__":
    main()
