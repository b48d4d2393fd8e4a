#!/usr/bin/env python3
"""Session creation as a user's first call sees it: each measurement in a fresh process, Tessera and
onnxruntime alternating, medians.

  python3 bench/create_time.py MODEL [--threads 1] [--repeats 3]
MODEL: a name from assets/models (rebuilt into build/models) or an .onnx path.
Set TESSERA_HUGE_PAGES=0 to measure Tessera without transparent huge pages.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import sys, time
rt, path, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
if rt == "tessera":
    import tessera
    t = time.perf_counter(); s = tessera.InferenceSession(path, threads=threads); e = time.perf_counter()
else:
    import onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = threads
    t = time.perf_counter(); s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]); e = time.perf_counter()
print(e - t)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    path = a.model if a.model.endswith(".onnx") else os.path.join(ROOT, "build", "models", f"{a.model}.onnx")
    times = {"tessera": [], "onnxruntime": []}
    for _ in range(a.repeats):
        for rt in times:
            out = subprocess.run([sys.executable, "-c", _CHILD, rt, path, str(a.threads)], capture_output=True,
                                 text=True, check=True).stdout
            times[rt].append(float(out.strip().splitlines()[-1]))
    t, o = statistics.median(times["tessera"]), statistics.median(times["onnxruntime"])
    print(f"{os.path.basename(path)} threads {a.threads}: first session in a process, median of {a.repeats}: "
          f"tessera {t:.3f} s, onnxruntime {o:.3f} s (ratio {t / o:.2f}); "
          f"all: tessera {[round(x, 3) for x in times['tessera']]}, onnxruntime "
          f"{[round(x, 3) for x in times['onnxruntime']]}")


if __name__ == "__main__":
    main()
