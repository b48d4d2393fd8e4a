#!/usr/bin/env python3
"""Structured fuzzing of the whole runtime (loader, shape inference, passes, kernels) with the ONNX node-test
models as seeds. Each case is one node-test model with one kind of mutation:

  attrs     attribute values (ints from EXTREME_INTS, lists emptied / lengthened / replaced, odd floats and
            strings)
  shapes    the fed shapes (a dim 0 or off by one, a dim more or fewer, a random small shape)
  dtypes    the fed element types
  extremes  integer inputs at extreme values
  wiring    an initializer value changed, or a node input dropped
  both      attributes and fed shapes at once
  opset     another opset version
  decl      an input's declared element type (and the fed one)

and runs through tessera.InferenceSession at one and two threads in a child process (batches of cases, the
address space capped). A tessera.Error (or any Python exception) is an accepted outcome; a signal, a hang past
the timeout, or a child that dies otherwise is a finding: the case is saved and printed.

  python3 tests/fuzz/fuzz_node_models.py --seed 1 --cases 2000 [--out /tmp/fuzz]

tests/python/test_fuzz_node_models.py runs 3000 cases with a fixed seed in the test suite (about 30 s).
Found this way (session 41): SIGFPE in ReduceL2 over an empty kept axis, SIGSEGV in MaxUnpool's shape
inference with strides = [] and in Scan with a scalar scan input, OOM kills of HammingWindow(2^31 - 1) and a
Resize to 2^31 columns, and a TfIdfVectorizer that looped 2^31 times.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

NODE_TESTS = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
EXTREME_INTS = [0, -1, 1, 2, 3, -2, 7, 100, -100, 1 << 20, -(1 << 31), (1 << 31) - 1, 1 << 40]
KINDS = ["attrs", "shapes", "dtypes", "extremes", "wiring", "both", "opset", "decl"]
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16,
          11: np.float64}


def mutate_attr(rng: random.Random, a: onnx.AttributeProto) -> None:
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(EXTREME_INTS)
    elif a.type == onnx.AttributeProto.INTS:
        k = rng.randrange(4)
        if k == 0 and a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice(EXTREME_INTS)
        elif k == 1:
            del a.ints[:]
        elif k == 2:
            a.ints.append(rng.choice(EXTREME_INTS))
        else:
            a.ints[:] = [rng.choice(EXTREME_INTS) for _ in range(rng.randrange(6))]
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, -1.0, 1e30, float("nan"), float("inf"), -0.5])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"bogus", b"NOTSET", b"SAME_UPPER", b"constant", b"reflect", b"edge", b"linear",
                          b"cubic", b"nearest"])


def mutate_shape(rng: random.Random, s: list[int]) -> list[int]:
    s = list(s)
    k = rng.randrange(5)
    if k == 0 and s:
        s[rng.randrange(len(s))] = rng.choice([0, 1, 2, 3, 5, 17])
    elif k == 1:
        s.append(rng.choice([1, 2, 3]))
    elif k == 2 and s:
        s.pop()
    elif k == 3 and s:
        s[rng.randrange(len(s))] += rng.choice([1, -1])
    else:
        s = [rng.choice([0, 1, 2, 4]) for _ in range(rng.randrange(5))]
    return [max(0, d) for d in s]


def make_case(rng: random.Random, index: int, model_path: str, kind: str):
    """Returns (model bytes, feeds) for one mutation of the model at model_path."""
    m = onnx.load(model_path)
    g = m.graph
    inits = {t.name for t in g.initializer}
    inputs = [vi for vi in g.input if vi.name not in inits]
    attrs = [a for n in g.node for a in n.attribute]
    if kind in ("attrs", "both"):
        for _ in range(rng.randrange(1, 3)):
            if attrs:
                mutate_attr(rng, rng.choice(attrs))
    if kind == "opset":
        for o in m.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = rng.choice([1, 6, 7, 9, 10, 11, 13, 16, 18, 21, 22, 23, 30])
    if kind == "decl" and inputs:
        rng.choice(inputs).type.tensor_type.elem_type = rng.choice(list(DTYPES))
    if kind == "wiring":
        if g.initializer and rng.random() < 0.5:
            t = rng.choice(g.initializer)
            a = numpy_helper.to_array(t).copy()
            flat = a.reshape(-1)
            if flat.size and np.issubdtype(flat.dtype, np.integer):
                flat[rng.randrange(flat.size)] = rng.choice(EXTREME_INTS[:9])
                t.CopyFrom(numpy_helper.from_array(flat.reshape(a.shape), t.name))
        elif g.node and len(g.node[0].input) > 1:
            n0 = g.node[0]
            n0.input[rng.randrange(len(n0.input))] = rng.choice(["", n0.input[0]])
    feeds = {}
    data_rng = np.random.default_rng(index)
    for vi in inputs:
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
        dt = DTYPES.get(vi.type.tensor_type.elem_type, np.float32)
        if kind in ("shapes", "both") and rng.random() < 0.6:
            shape = mutate_shape(rng, shape)
        if kind == "dtypes" and rng.random() < 0.5:
            dt = rng.choice(list(DTYPES.values()))
        n = int(np.prod(shape)) if shape else 1
        if n > 1 << 22:
            shape, n = [1], 1
        if dt == np.bool_:
            arr = data_rng.integers(0, 2, shape).astype(dt)
        elif np.issubdtype(dt, np.integer):
            if kind == "extremes":
                info = np.iinfo(dt)
                vals = [max(info.min, min(info.max, rng.choice(EXTREME_INTS))) for _ in range(n)]
                arr = np.array(vals, dtype=np.int64).astype(dt).reshape(shape)
            else:
                arr = data_rng.integers(-3, 5, shape).astype(dt)
        else:
            arr = data_rng.standard_normal(shape).astype(dt)
        feeds[vi.name] = arr
    return m.SerializeToString(), feeds


CHILD = """
import resource, sys, numpy as np, tessera
resource.setrlimit(resource.RLIMIT_AS, ({mem} << 30, {mem} << 30))
for path in sys.argv[1:]:
    print(path, flush=True)
    feeds = dict(np.load(path + ".npz"))
    for threads in (1, 2):
        try:
            tessera.InferenceSession(path, threads=threads).run(None, feeds)
        except Exception:
            pass
"""


def run_batch(paths: list[str], timeout: float, mem_gib: int) -> tuple[str | None, str]:
    """Runs the cases in one child; returns (the case it died on, why) or (None, "")."""
    try:
        r = subprocess.run([sys.executable, "-c", CHILD.format(mem=mem_gib)] + paths, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        done = [line for line in out.splitlines() if line]
        return (done[-1] if done else paths[0]), f"timeout after {timeout:.0f} s"
    if r.returncode == 0:
        return None, ""
    done = [line for line in r.stdout.splitlines() if line]
    return (done[-1] if done else paths[0]), f"exit {r.returncode} (negative: signal)\n{r.stderr[-2000:]}"


def fuzz(seed: int, cases: int, out: str, batch: int = 50, timeout: float = 300, mem_gib: int = 8) -> list[dict]:
    rng = random.Random(seed)
    models = sorted(glob.glob(os.path.join(NODE_TESTS, "*", "model.onnx")))
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(dir=out)
    meta = {}
    paths = []
    for i in range(cases):
        path, kind = rng.choice(models), rng.choice(KINDS)
        data, feeds = make_case(rng, i, path, kind)
        p = os.path.join(work, f"case{i:05d}.onnx")
        with open(p, "wb") as f:
            f.write(data)
        np.savez(p + ".npz", **feeds)
        meta[p] = {"test": os.path.basename(os.path.dirname(path)), "kind": kind, "case": p}
        paths.append(p)
    findings = []
    i = 0
    while i < len(paths):
        chunk = paths[i:i + batch]
        bad, why = run_batch(chunk, timeout, mem_gib)
        if bad is None:
            i += batch
            continue
        # confirm alone: the batch may have died of something an earlier case left behind
        again, why_alone = run_batch([bad], timeout, mem_gib)
        if again is not None:
            findings.append(dict(meta[bad], why=why_alone))
            print("FINDING", json.dumps(findings[-1]), flush=True)
        i = paths.index(bad) + 1
    for p in paths:
        if not any(f["case"] == p for f in findings):
            os.remove(p)
            os.remove(p + ".npz")
    return findings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "tessera_fuzz"))
    ap.add_argument("--timeout", type=float, default=300, help="seconds per batch of 50 cases")
    args = ap.parse_args()
    findings = fuzz(args.seed, args.cases, args.out, timeout=args.timeout)
    print(f"{args.cases} cases, {len(findings)} findings (kept under {args.out})")
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
