#!/usr/bin/env python3
"""Model latency, Tessera vs onnxruntime, side by side in one process: warm-up, then alternating
runs, median and p90 of each, and the ratio tessera/ort (< 1: Tessera is faster). onnxruntime runs
with all graph optimizations on and the same thread count, through its Python API, as a user would.

  python3 bench/compare_ort.py [MODEL ...] [--threads 1 2] [--runs 20]
MODEL: a name from assets/models (rebuilt into build/models) or a path to an .onnx file.
Also prints session-creation time and Tessera's planned peak intermediate memory.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "scripts"), os.path.join(ROOT, "tests", "python")]
import tessera  # noqa: E402
from materialize import materialize  # noqa: E402
from model_inputs import make_feeds, rel_err  # noqa: E402


def model_path(name: str) -> str:
    if name.endswith(".onnx"):
        return name
    path = os.path.join(ROOT, "build", "models", f"{name}.onnx")
    if not os.path.exists(path):
        materialize(os.path.join(ROOT, "assets", "models", f"{name}.skeleton.onnx"), path)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", default=["resnet18", "resnet50", "mobilenet_v2", "vit_b_16", "bert_base",
                                                  "gpt2", "gpt2_decode"])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--runs", type=int, default=15)
    a = p.parse_args()
    print(f"| model | threads | tessera median ms | ort median ms | ratio | tessera p90 | ort p90 | "
          f"create tessera s | create ort s | max rel err |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in a.models:
        path = model_path(name)
        feeds = make_feeds(onnx.load(path, load_external_data=False), seed=1)
        for t in a.threads:
            t0 = time.perf_counter()
            ours = tessera.InferenceSession(path, threads=t)
            t1 = time.perf_counter()
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            t2 = time.perf_counter()
            for _ in range(2):  # warm-up
                out_t = ours.run(None, feeds)
                out_o = ref.run(None, feeds)
            err = max(rel_err(x, y) for x, y in zip(out_t, out_o))
            tt, to = [], []
            for _ in range(a.runs):  # alternate so both see the same machine state
                s = time.perf_counter(); ours.run(None, feeds); tt.append(time.perf_counter() - s)
                s = time.perf_counter(); ref.run(None, feeds); to.append(time.perf_counter() - s)
            mt, mo = np.median(tt) * 1e3, np.median(to) * 1e3
            print(f"| {name} | {t} | {mt:.2f} | {mo:.2f} | {mt / mo:.2f} | {np.percentile(tt, 90) * 1e3:.2f} | "
                  f"{np.percentile(to, 90) * 1e3:.2f} | {t1 - t0:.3f} | {t2 - t1:.3f} | {err:.1e} |", flush=True)
            if t == a.threads[0]:
                print(f"<!-- {name}: tessera planned peak intermediate memory "
                      f"{ours.peak_memory_bytes() / 2**20:.1f} MiB -->", flush=True)


if __name__ == "__main__":
    main()
