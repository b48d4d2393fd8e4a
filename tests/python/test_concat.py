"""Concat through a session, the tuned f32 kernel included (x86_concat_bindings.cpp): outputs large
enough to be split between two threads, every axis position, an empty input, and a non-f32 Concat that
stays on the reference kernel; Tile of any element type (x86_tile_bindings.cpp). A copy must be exact."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import tessera

CASES = [
    # (input shapes, axis, dtype): a KV cache growing by one step, axis 0 (one row), three inputs with an
    # empty one along the last axis, a negative axis
    ([(2, 3, 200, 70), (2, 3, 1, 70)], 2, np.float32),
    ([(300, 250), (5, 250)], 0, np.float32),
    ([(40, 50, 0), (40, 50, 300), (40, 50, 7)], 2, np.float32),
    ([(7, 900, 11), (7, 13, 11)], -2, np.float32),
    ([(64, 300), (64, 200)], 1, np.int64),
]


def _model(shapes, axis, dtype):
    et = TP.FLOAT if dtype == np.float32 else TP.INT64
    names = [f"x{i}" for i in range(len(shapes))]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    g = helper.make_graph([helper.make_node("Concat", names, ["y"], axis=axis)], "concat",
                          [helper.make_tensor_value_info(n, et, list(s)) for n, s in zip(names, shapes)],
                          [helper.make_tensor_value_info("y", et, out)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_concat_matches_numpy(case, threads):
    shapes, axis, dtype = CASES[case]
    rng = np.random.default_rng(case)
    feeds = {f"x{i}": (rng.standard_normal(s) * 100).astype(dtype) for i, s in enumerate(shapes)}
    sess = tessera.InferenceSession(_model(shapes, axis, dtype), threads=threads)
    (y,) = sess.run(None, feeds)
    want = np.concatenate(list(feeds.values()), axis=axis)
    assert y.dtype == want.dtype and y.shape == want.shape
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16, np.uint8])
@pytest.mark.parametrize("shape,reps", [((3, 5), (2, 3)), ((2, 1, 4, 3), (1, 3, 2, 1)), ((7,), (4,)),
                                        ((2, 3, 4), (2, 0, 1)), ((1, 8, 1, 16), (1, 1, 4, 1)), ((4, 6), (1, 1))])
def test_tile_matches_numpy(dtype, shape, reps):
    """Tile on the tuned copy kernel (innermost runs copied whole, outer repeats replayed from the output) for
    several element types, repeats of 0 and 1, ranks 1-4: exactly numpy's tile."""
    x = (np.random.default_rng(9).standard_normal(shape) * 10).astype(dtype)
    ttype = {np.float32: TP.FLOAT, np.int64: TP.INT64, np.bool_: TP.BOOL, np.float16: TP.FLOAT16,
             np.uint8: TP.UINT8}[dtype]
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", ttype, list(shape))],
                          [helper.make_tensor_value_info("y", ttype, None)],
                          [numpy_helper.from_array(np.array(reps, np.int64), "r")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    for threads in (1, 2):
        got = tessera.InferenceSession(m.SerializeToString(), tessera.SessionOptions(threads=threads)).run(
            None, {"x": x})[0]
        np.testing.assert_array_equal(got, np.tile(x, reps))
