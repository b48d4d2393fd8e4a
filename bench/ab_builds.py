#!/usr/bin/env python3
"""Two builds of Tessera side by side: `tessera bench` of each, alternating in separate processes, medians
and the ratio new / old. For changes a switch inside one process cannot A/B (a pass, a packing), on a
machine whose speed drifts by more than the change: alternating rounds see the same drift.

  git worktree add /tmp/old <commit> && (cd /tmp/old && cmake --preset release &&
      cmake --build --preset release --target tessera_cli)
  python3 bench/ab_builds.py /tmp/old/build/release/tessera build/release/tessera resnet50 --threads 1 2
  python3 bench/ab_builds.py OLD NEW bert_base gpt2 --dim seq=16 --threads 1 2
  python3 bench/ab_builds.py OLD NEW regnety_800mf --cold   # caches evicted before each run

MODEL: a name from build/models (rebuilt there by scripts/demo.sh or the tests) or an .onnx path.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_path(name: str) -> str:
    if os.path.exists(name):
        return name
    path = os.path.join(ROOT, "build", "models", name + ".onnx")
    if not os.path.exists(path):
        sys.exit(f"no model {name!r}: give an .onnx path or build {path}")
    return path


def bench_median(exe: str, model: str, threads: int, runs: int, dims: list[str], cold: bool) -> float:
    """The median ms `tessera bench` prints for one thread count."""
    cmd = [exe, "bench", model, "--threads", str(threads), "--runs", str(runs), "--warmup", "5"]
    if cold:
        cmd.append("--cold-cache")
    for d in dims:
        cmd += ["--dim", d]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 2 and cols[0] == str(threads):
            return float(cols[1])
    raise RuntimeError(f"no median in the output of {exe} bench:\n{out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", help="the baseline build's tessera executable")
    ap.add_argument("new", help="the changed build's tessera executable")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--rounds", type=int, default=5, help="alternations of old and new")
    ap.add_argument("--runs", type=int, default=30, help="timed runs per `tessera bench`")
    ap.add_argument("--cold", action="store_true",
                    help="`tessera bench --cold-cache`: caches evicted before each run (weights from memory)")
    ap.add_argument("--dim", action="append", default=[],
                    help="NAME=VALUE for a symbolic input dim, as `tessera bench --dim` (others become 1; "
                         "compare_ort.py runs seq=16 and past_len=8)")
    args = ap.parse_args()
    for exe in (args.old, args.new):
        if not os.access(exe, os.X_OK):
            sys.exit(f"not an executable: {exe}")
    print("| model | threads | old ms | new ms | new / old | old rounds | new rounds |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models:
        model = model_path(name)
        for t in args.threads:
            times: dict[str, list[float]] = {"old": [], "new": []}
            for _ in range(args.rounds):
                for which, exe in (("old", args.old), ("new", args.new)):
                    times[which].append(bench_median(exe, model, t, args.runs, args.dim, args.cold))
            old, new = statistics.median(times["old"]), statistics.median(times["new"])
            print(f"| {name} | {t} | {old:.3f} | {new:.3f} | {new / old:.3f} | "
                  f"{' '.join(f'{x:.2f}' for x in times['old'])} | {' '.join(f'{x:.2f}' for x in times['new'])} |",
                  flush=True)


if __name__ == "__main__":
    main()
