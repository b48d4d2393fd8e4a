"""Reductions whose input has a zero-size axis, against onnxruntime: the reduced axes empty (each op's
identity: 0, -inf / +inf; the mean, which ONNX leaves undefined there, NaN as numpy's, where onnxruntime
writes 0) and, what the tuned kernel (kernels/x86/reduce.h) once divided
by zero on, a kept axis empty, so the output has no elements (found by fuzzing the node tests: ReduceL2 of a
[2, 0, 4] tensor over axis 0 took the process down with SIGFPE)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tessera

RNG = np.random.default_rng(11)
OPS = ["ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceMax", "ReduceMin"]
CASES = [  # input shape, axes
    ((2, 0, 4), [0]),      # a kept axis empty: an empty output
    ((2, 0, 4), [2]),
    ((0, 3), [1]),
    ((3, 0), [0]),
    ((2, 0, 4), [1]),      # the reduced axis empty
    ((2, 0, 4), [0, 1]),
    ((0, 5, 7), [1, 2]),
]


def _model(op: str, shape, axes, keepdims: int) -> bytes:
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,axes", CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_with_an_empty_axis_matches_onnxruntime(op, shape, axes, keepdims):
    b = _model(op, shape, axes, keepdims)
    x = RNG.standard_normal(shape).astype(np.float32)
    try:
        want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    except Exception:  # noqa: BLE001 (onnxruntime refuses some empty max / min reductions)
        want = None
    for threads in (1, 2):
        sess = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
        if want is None:
            with pytest.raises(tessera.Error):
                sess.run(None, {"x": x})
            continue
        got = sess.run(None, {"x": x})[0]
        assert got.shape == want.shape
        if op == "ReduceMean" and any(shape[a] == 0 for a in axes):
            want = np.full(want.shape, np.nan, np.float32)
        np.testing.assert_array_equal(got, want)
