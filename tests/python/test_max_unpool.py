"""MaxUnpool on its tuned scatter (kernels/x86/pool_indices.h) against numpy and onnxruntime: after a MaxPool
with indices (SegNet / ENet), with given indices (repeated ones keep the last value) of 1-, 4- and 8-byte
values, an output_shape equal to the natural one (tuned) or larger (the reference keeps each index's coordinates), one
and three spatial axes; an index out of range is an error naming the node."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tessera

RNG = np.random.default_rng(31)
TYPES = {np.float32: TensorProto.FLOAT, np.uint8: TensorProto.UINT8, np.int64: TensorProto.INT64}


def _unpool(xs, et, k, s, out_shape=None):
    ins = ["x", "i"] + (["o"] if out_shape is not None else [])
    node = helper.make_node("MaxUnpool", ins, ["y"], kernel_shape=[k] * (len(xs) - 2), strides=[s] * (len(xs) - 2))
    inputs = [helper.make_tensor_value_info("x", et, list(xs)), helper.make_tensor_value_info("i", TensorProto.INT64, list(xs))]
    inits = [helper.make_tensor("o", TensorProto.INT64, [len(out_shape)], out_shape)] if out_shape is not None else []
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", et, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    return m.SerializeToString()


def test_max_pool_then_unpool_matches_onnxruntime():
    x = RNG.standard_normal((2, 5, 16, 22)).astype(np.float32)
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    b = m.SerializeToString()
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", list(TYPES))
@pytest.mark.parametrize("xs,k,s", [((1, 3, 4, 5), 2, 2), ((2, 2, 3, 3, 2), 3, 2), ((1, 1, 1, 1), 1, 1)])
def test_max_unpool_given_indices(dt, xs, k, s):
    nat = list(xs[:2]) + [(d - 1) * s + k for d in xs[2:]]
    total = int(np.prod(nat))
    x = (RNG.standard_normal(xs) * 40).astype(dt)
    idx = RNG.integers(0, total, xs).astype(np.int64)
    idx.flat[-1] = idx.flat[0]  # a repeated index: the last value stays
    want = np.zeros(total, dt)
    for j in range(x.size):
        want[idx.flat[j]] = x.flat[j]
    want = want.reshape(nat)
    got = tessera.InferenceSession(_unpool(xs, TYPES[dt], k, s)).run(None, {"x": x, "i": idx})[0]
    np.testing.assert_array_equal(got, want)
    got = tessera.InferenceSession(_unpool(xs, TYPES[dt], k, s, nat)).run(None, {"x": x, "i": idx})[0]
    np.testing.assert_array_equal(got, want)


def test_max_unpool_larger_output_shape_keeps_coordinates():
    # (the ONNX backend tests' reading: an index is a place in the natural output, kept at the same
    # coordinates in the larger one; onnxruntime reads it as flat over the larger one instead)
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    idx = RNG.permutation(2 * 6 * 6)[:18].reshape(1, 2, 3, 3).astype(np.int64)
    want = np.zeros((1, 2, 7, 7), np.float32)
    for j in range(x.size):
        c, r, q = np.unravel_index(idx.flat[j], (2, 6, 6))
        want[0, c, r, q] = x.flat[j]
    b = _unpool(x.shape, TensorProto.FLOAT, 2, 2, [1, 2, 7, 7])
    np.testing.assert_array_equal(tessera.InferenceSession(b).run(None, {"x": x, "i": idx})[0], want)


def test_max_unpool_index_out_of_range_is_an_error():
    x = RNG.standard_normal((1, 1, 2, 2)).astype(np.float32)
    idx = np.array([0, 1, 2, 16], np.int64).reshape(1, 1, 2, 2)
    s = tessera.InferenceSession(_unpool(x.shape, TensorProto.FLOAT, 2, 2))
    with pytest.raises(tessera.InvalidArgument, match="MaxUnpool.*index 16 is out of range"):
        s.run(None, {"x": x, "i": idx})
