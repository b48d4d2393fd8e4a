#!/usr/bin/env python3
"""Model latency, Tessera vs onnxruntime, side by side in one process: warm-up, then alternating
runs, median and p90 of each, and the ratio tessera/ort (< 1: Tessera is faster). onnxruntime runs
with all graph optimizations on and the same thread count, through its Python API, as a user would.

  python3 bench/compare_ort.py [MODEL ...] [--threads 1 2] [--runs 20] [--dim batch=4 ...]
MODEL: a name from assets/models (rebuilt into build/models) or a path to an .onnx file.
Also prints session-creation time and Tessera's planned peak intermediate memory.
"""
from __future__ import annotations

import argparse
import os
import sys

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "scripts"), os.path.join(ROOT, "tests", "python")]
import tessera  # noqa: E402
from materialize import materialize  # noqa: E402
from model_inputs import make_feeds  # noqa: E402
from tessera.bench import compare, with_probe_outputs  # noqa: E402


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
    p.add_argument("--gap", type=float, default=0.1, help="idle seconds before each block of runs (see tessera.bench)")
    p.add_argument("--block", type=int, default=5, help="back-to-back runs per turn (see tessera.bench)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="a symbolic input dim's value (default batch=1, seq=16; e.g. --dim batch=4 --dim seq=128)")
    a = p.parse_args()
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in a.dim)}
    print(f"| model | threads | tessera median ms | ort median ms | ratio | tessera p90 | ort p90 | "
          f"first run after idle (tessera / ort) | create tessera s | create ort s | max rel err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.models:
        path = model_path(name)
        model = onnx.load(path)
        feeds = make_feeds(model, seed=1, dims=dims)
        # The error column also covers the tensors feeding the outputs (ViT's zero-initialized head
        # makes its logits 0 whatever the encoder computes); timing uses the model as it is.
        probed = with_probe_outputs(model).SerializeToString()
        for t in a.threads:
            r = compare(path, t, a.runs, feeds=feeds, gap=a.gap, block=a.block)
            r["max_rel_err"] = compare(probed, t, 1, warmup=1, feeds=feeds)["max_rel_err"]
            print(f"| {name} | {t} | {r['tessera_ms']:.2f} | {r['ort_ms']:.2f} | {r['ratio']:.2f} | "
                  f"{r['tessera_p90_ms']:.2f} | {r['ort_p90_ms']:.2f} | "
                  f"{r['tessera_first_ms']:.2f} / {r['ort_first_ms']:.2f} | {r['create_tessera_s']:.3f} | "
                  f"{r['create_ort_s']:.3f} | {r['max_rel_err']:.1e} |", flush=True)
            if t == a.threads[0]:
                print(f"<!-- {name}: tessera planned peak intermediate memory "
                      f"{r['peak_memory_mib']:.1f} MiB -->", flush=True)


if __name__ == "__main__":
    main()
