"""Model latency, Tessera vs onnxruntime, side by side in one process.

    python -m tessera.bench MODEL.onnx [--threads 1] [--runs 20] [--dim seq=16]
    tessera bench MODEL.onnx --compare onnxruntime      (the CLI hands over to this)

Both sessions are created with the same thread count (onnxruntime with all graph
optimizations, as a user runs it), warmed up, then run in alternating blocks of
back-to-back runs so both see the same machine state; prints the median and p90
of each, the median of the first run after an idle gap, the ratio
tessera / onnxruntime (< 1: Tessera is faster), session-creation times and the
largest output difference relative to the output's largest magnitude.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

_NP_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def random_feeds(inputs, dims: dict | None = None, seed: int = 0) -> dict:
    """Feeds for onnxruntime NodeArgs (or anything with .name/.type/.shape):
    symbolic dims from `dims` (others 1), floats standard normal, ids in [0, 1000)
    (token types 0/1), masks all ones."""
    dims = dims or {}
    rng = np.random.default_rng(seed)
    feeds = {}
    for a in inputs:
        if a.type not in _NP_TYPES:
            raise ValueError(f"input '{a.name}' has type {a.type}; no random data for it")
        dtype = _NP_TYPES[a.type]
        shape = [d if isinstance(d, int) and d >= 0 else dims.get(d, 1) if isinstance(d, str) else 1
                 for d in a.shape]
        name = a.name.lower()
        if np.issubdtype(dtype, np.integer):
            if "mask" in name:
                v = np.ones(shape, dtype)
            elif "type" in name:
                v = rng.integers(0, 2, shape).astype(dtype)
            else:
                v = rng.integers(0, 1000, shape).astype(dtype)
        elif dtype == np.bool_:
            v = np.ones(shape, dtype) if "mask" in name else rng.random(shape) < 0.5
        else:
            v = rng.standard_normal(shape).astype(dtype)
        feeds[a.name] = v
    return feeds


def with_probe_outputs(model):
    """A copy of an onnx.ModelProto with the float inputs of its output-producing nodes added as outputs, so
    a comparison also covers the network when a head is degenerate (ViT's classifier is zero-initialized:
    its logits are all 0 whatever the encoder computes)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    known = {o.name for o in g.output} | {i.name for i in g.input} | {t.name for t in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    # each probe with its own element type (a quantized model's are 8-bit); untyped ones are left out
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    except Exception:  # noqa: BLE001 - a model shape inference rejects: float probes as before
        inferred = []
    types = {v.name: v.type.tensor_type.elem_type for v in inferred if v.type.HasField("tensor_type")}
    for out in list(g.output):
        node = producers.get(out.name)
        for x in (node.input if node is not None else []):
            # (where inference ran, a value it could not type — a contrib op's output — is left out too)
            if x and x not in known and (x in types or not inferred) and types.get(x, onnx.TensorProto.FLOAT):
                g.output.append(onnx.helper.make_tensor_value_info(x, types.get(x, onnx.TensorProto.FLOAT), None))
                known.add(x)
    return m


def rel_err(a, b) -> float:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-30)
    return float(np.max(np.abs(a - b))) / scale if a.size else 0.0


def compare(path, threads: int, runs: int = 20, warmup: int = 2, feeds: dict | None = None,
            dims: dict | None = None, seed: int = 1, gap: float = 0.1, block: int = 5) -> dict:
    """Times Tessera and onnxruntime on one model (a path, or serialized model bytes); returns the figures
    as a dict.

    The runtimes take turns in blocks: `gap` seconds of idle time, then `block` back-to-back runs of one
    runtime, then the same for the other, until each has `runs` timed runs. The first run of a block is the
    run after idle time: its median is reported apart ("first"), the others give the steady-state median
    and p90 — the latency a user sees running a model in a loop. The gap is longer than either runtime keeps
    its worker threads spinning after a run (onnxruntime: ~50 ms), so neither is timed while the other's
    spinning threads hold a core."""
    import onnxruntime as ort

    import tessera

    t0 = time.perf_counter()
    ours = tessera.InferenceSession(path, threads=threads)
    t1 = time.perf_counter()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    t2 = time.perf_counter()
    if feeds is None:
        feeds = random_feeds(ref.get_inputs(), dims, seed)
    for _ in range(max(warmup, 1)):
        out_t = ours.run(None, feeds)
        out_o = ref.run(None, feeds)
    err = max((rel_err(x, y) for x, y in zip(out_t, out_o)), default=0.0)
    block = max(block, 2)
    times = {"t": ([], []), "o": ([], [])}  # (first runs after the gap, steady runs)

    def timed_block(sess, key: str) -> None:
        time.sleep(gap)
        first, steady = times[key]
        for i in range(block):
            s = time.perf_counter()
            sess.run(None, feeds)
            (first if i == 0 else steady).append(time.perf_counter() - s)

    while len(times["t"][1]) < runs:  # alternate so both see the same machine state
        timed_block(ours, "t")
        timed_block(ref, "o")
    tt, to = times["t"][1][:runs], times["o"][1][:runs]
    mt, mo = float(np.median(tt)) * 1e3, float(np.median(to)) * 1e3
    return {"threads": threads, "tessera_ms": mt, "ort_ms": mo, "ratio": mt / mo,
            "tessera_p90_ms": float(np.percentile(tt, 90)) * 1e3, "ort_p90_ms": float(np.percentile(to, 90)) * 1e3,
            "tessera_first_ms": float(np.median(times["t"][0])) * 1e3,
            "ort_first_ms": float(np.median(times["o"][0])) * 1e3,
            "create_tessera_s": t1 - t0, "create_ort_s": t2 - t1, "max_rel_err": err,
            "peak_memory_mib": ours.peak_memory_bytes() / 2**20}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="tessera bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--threads", type=int, nargs="+", default=[1])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gap", type=float, default=0.1,
                   help="idle seconds before each block of runs, so neither runtime's spinning threads hold a core "
                        "while the other is timed")
    p.add_argument("--block", type=int, default=5, help="back-to-back runs per turn (the first is reported apart)")
    a = p.parse_args(argv)
    dims = {}
    for d in a.dim:
        name, _, value = d.partition("=")
        if not name or not value.lstrip("-").isdigit():
            p.error(f"--dim expects NAME=VALUE, got '{d}'")
        dims[name] = int(value)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("tessera bench: error: --compare onnxruntime needs the onnxruntime package (pip install onnxruntime)",
              file=sys.stderr)
        return 1
    print(f"{'threads':>7} {'tessera ms':>11} {'ort ms':>9} {'ratio':>6} {'tessera p90':>11} {'ort p90':>8} "
          f"{'first (t/ort)':>15} {'create s (t/ort)':>17} {'max rel err':>11}")
    for t in a.threads:
        r = compare(a.model, t, a.runs, a.warmup, dims=dims, seed=a.seed, gap=a.gap, block=a.block)
        print(f"{t:>7} {r['tessera_ms']:>11.2f} {r['ort_ms']:>9.2f} {r['ratio']:>6.2f} {r['tessera_p90_ms']:>11.2f} "
              f"{r['ort_p90_ms']:>8.2f} {r['tessera_first_ms']:>7.2f}/{r['ort_first_ms']:<7.2f} "
              f"{r['create_tessera_s']:>8.3f}/{r['create_ort_s']:<8.3f} "
              f"{r['max_rel_err']:>11.1e}", flush=True)
    print("ratio = tessera median / onnxruntime median (< 1: Tessera is faster); medians of back-to-back runs in "
          "alternating blocks; first = median of the first run of each block (after --gap idle seconds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
