#!/usr/bin/env python3
"""One runtime alone in its process: median latency of a run that follows an idle gap and of the run right
after it — how much a runtime loses when its worker threads went to sleep (or the VM parked the idle vCPU).

  python3 bench/run_after_idle.py MODEL --runtime tessera|onnxruntime [--threads 2] [--gap 0.05] [--runs 15]
MODEL: a name from assets/models (rebuilt into build/models) or an .onnx path.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "scripts"), os.path.join(ROOT, "tests", "python")]
from model_inputs import make_feeds  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--runtime", choices=["tessera", "onnxruntime"], default="tessera")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--gap", type=float, default=0.05)
    p.add_argument("--runs", type=int, default=15)
    a = p.parse_args()
    path = a.model if a.model.endswith(".onnx") else os.path.join(ROOT, "build", "models", f"{a.model}.onnx")
    feeds = make_feeds(onnx.load(path), seed=1)
    if a.runtime == "tessera":
        import tessera
        sess = tessera.InferenceSession(path, threads=a.threads)
    else:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, feeds)
    after_gap, next_run = [], []
    for _ in range(a.runs):
        time.sleep(a.gap)
        t = time.perf_counter()
        sess.run(None, feeds)
        after_gap.append(time.perf_counter() - t)
        t = time.perf_counter()
        sess.run(None, feeds)
        next_run.append(time.perf_counter() - t)
    print(f"{a.runtime} {a.model} threads {a.threads} gap {a.gap}s: after the gap {np.median(after_gap) * 1e3:.2f} ms, "
          f"the run right after {np.median(next_run) * 1e3:.2f} ms (medians of {a.runs})")


if __name__ == "__main__":
    main()
