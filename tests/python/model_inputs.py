"""Random feeds for a model's inputs: the right dtype and shape, plausible values."""
from __future__ import annotations

import numpy as np
import onnx

# Values for symbolic dims by name; anything else becomes 1.
DIM_VALUES = {"batch": 1, "seq": 16, "sequence": 16, "past_len": 8, "past_sequence_length": 8}

_NP = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_,
    onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.INT8: np.int8,
}


def make_feeds(model: onnx.ModelProto, seed: int = 0, dims: dict | None = None) -> dict:
    dims = {**DIM_VALUES, **(dims or {})}
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, 1) for d in tt.shape.dim]
        dtype = _NP[tt.elem_type]
        name = inp.name.lower()
        if dtype == np.int64 or dtype == np.int32:
            if "mask" in name:
                v = np.ones(shape, dtype)
            elif "type" in name:
                v = rng.integers(0, 2, shape).astype(dtype)
            else:
                v = rng.integers(0, 1000, shape).astype(dtype)
        elif dtype == np.bool_:
            v = rng.random(shape) < 0.5
        else:
            v = rng.standard_normal(shape).astype(dtype)
        feeds[inp.name] = v
    return feeds


def rel_err(ours: np.ndarray, ref: np.ndarray) -> float:
    """max |ours - ref| / max |ref| (ref all zero: the plain max difference)."""
    ours = np.asarray(ours, np.float64)
    ref = np.asarray(ref, np.float64)
    if ours.shape != ref.shape:
        return float("inf")
    if ref.size == 0:
        return 0.0
    scale = float(np.max(np.abs(ref)))
    diff = float(np.max(np.abs(ours - ref)))
    return diff / scale if scale > 0 else diff
