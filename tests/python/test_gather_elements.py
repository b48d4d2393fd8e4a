"""GatherElements on its tuned kernel (kernels/x86/gather_elements.h) against numpy's indexing: every
axis, indices smaller than the data on the other axes (offsets by odometer) and equal (a contiguous run),
negative indices, int64 and int32 indices, 1-, 2-, 4- and 8-byte values, one and two threads; an index out of
range is an error that names the node, never a read outside the data."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tessera

RNG = np.random.default_rng(9)
ETYPES = {np.float32: TensorProto.FLOAT, np.uint8: TensorProto.UINT8, np.float16: TensorProto.FLOAT16,
          np.int64: TensorProto.INT64}


def _model(xs, ishape, et, it, axis):
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", et, list(xs)),
                                        helper.make_tensor_value_info("i", it, list(ishape))],
                          [helper.make_tensor_value_info("y", et, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("dt", list(ETYPES))
@pytest.mark.parametrize("xs,ishape,axis", [((2, 5, 7, 9), (2, 5, 7, 9), 3), ((2, 5, 7, 9), (2, 5, 7, 4), 3),
                                           ((2, 5, 7, 9), (2, 3, 6, 9), 1), ((2, 5, 7, 9), (1, 5, 2, 3), 0),
                                           ((2, 5, 7, 9), (2, 4, 11, 9), -2), ((17,), (40,), 0),
                                           ((3, 1000), (3, 700), 1)])
@pytest.mark.parametrize("itype", [np.int64, np.int32])
def test_gather_elements_matches_numpy(dt, xs, ishape, axis, itype):
    x = (RNG.standard_normal(xs) * 50).astype(dt)
    dim = xs[axis]
    idx = RNG.integers(-dim, dim, ishape).astype(itype)
    grid = list(np.indices(ishape))  # (take_along_axis wants the other dims equal)
    grid[axis] = np.where(idx < 0, idx + dim, idx).astype(np.int64)
    want = x[tuple(grid)]
    model = _model(xs, ishape, ETYPES[dt], TensorProto.INT64 if itype == np.int64 else TensorProto.INT32, axis)
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x, "i": idx})[0]
        np.testing.assert_array_equal(got, want)


def test_gather_elements_index_out_of_range_is_an_error():
    x = RNG.standard_normal((4, 50)).astype(np.float32)
    idx = RNG.integers(0, 50, (4, 50)).astype(np.int64)
    idx[3, 17] = 50
    s = tessera.InferenceSession(_model((4, 50), (4, 50), TensorProto.FLOAT, TensorProto.INT64, 1))
    with pytest.raises(tessera.ExecutionError, match="GatherElements.*index 50 is out of range"):
        s.run(None, {"x": x, "i": idx})
