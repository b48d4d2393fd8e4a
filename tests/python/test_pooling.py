"""MaxPool and AveragePool over channels-first tensors of 1, 2 and 3 spatial axes (video models' 3-D pools,
audio models' 1-D ones, a 2-D average pool outside a conv region) on the separable tuned kernel, against
onnxruntime: strides, padding (asymmetric, wider than a stride), dilations, count_include_pad, windows
wholly in the padding's neighbourhood, NaN propagation by MaxPool."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tessera

RNG = np.random.default_rng(41)


def _model(op, shape, attrs, opset=19):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m.SerializeToString()


CASES = [
    ([1, 4, 8, 13, 11], dict(kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1])),  # C3D-like
    ([2, 3, 5, 9, 10], dict(kernel_shape=[1, 3, 3], strides=[1, 2, 2], pads=[0, 1, 0, 0, 2, 1])),
    ([1, 2, 6, 7, 9], dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2])),
    ([1, 3, 7, 8, 8], dict(kernel_shape=[3, 2, 3], strides=[1, 3, 2], dilations=[2, 1, 2], pads=[2, 0, 1, 1, 1, 2])),
    ([2, 5, 37], dict(kernel_shape=[4], strides=[3], pads=[2, 1])),                              # 1-D
    ([1, 6, 11, 12], dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),              # 2-D
    ([1, 2, 9, 10], dict(kernel_shape=[5, 3], strides=[3, 2], pads=[2, 1, 1, 2])),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("op,extra", [("MaxPool", {}), ("AveragePool", {}),
                                      ("AveragePool", dict(count_include_pad=1))])
@pytest.mark.parametrize("shape,attrs", CASES)
def test_pool_matches_onnxruntime(op, extra, shape, attrs, threads):
    if op == "MaxPool" and len(shape) == 4:
        pytest.skip("2-D MaxPool runs on the NHWC kernel (test_layout_nhwc)")
    b = _model(op, shape, {**attrs, **extra})
    x = RNG.standard_normal(shape).astype(np.float32)
    if op == "MaxPool":
        x.flat[::17] = np.nan
    # onnxruntime's MaxPool skips NaN; Tessera's (as its reference kernel) propagates it: a window holding a
    # NaN is where onnxruntime's max of the same input with +inf for NaN is +inf
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": np.nan_to_num(x, nan=np.inf)})[0]
    want = np.where(np.isinf(want), np.nan, want)
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.nanmax(np.abs(got - want)) <= 1e-6 * max(1.0, np.nanmax(np.abs(want)))


CEIL_CASES = [
    ([1, 8, 111, 111], dict(kernel_shape=[3, 3], strides=[2, 2])),                      # SqueezeNet's
    ([1, 8, 28, 28], dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),       # GoogLeNet's branch
    ([1, 4, 14, 15], dict(kernel_shape=[2, 2], strides=[2, 2])),                        # one odd side
    ([1, 3, 13, 11], dict(kernel_shape=[3, 2], strides=[3, 2], pads=[1, 0, 0, 0])),
    ([1, 2, 12, 17], dict(kernel_shape=[3, 3], strides=[2, 3], dilations=[2, 1])),
    ([2, 5, 21], dict(kernel_shape=[4], strides=[3], pads=[1, 0])),                     # 1-D
    ([1, 2, 7, 9, 11], dict(kernel_shape=[2, 3, 2], strides=[2, 2, 2])),                # 3-D
]


@pytest.mark.parametrize("op,extra", [("MaxPool", {}), ("AveragePool", {}),
                                      ("AveragePool", dict(count_include_pad=1))])
@pytest.mark.parametrize("shape,attrs", CEIL_CASES)
def test_ceil_mode_pool_matches_onnxruntime(op, extra, shape, attrs):
    """ceil_mode = 1 (PyTorch's ceil_mode=True) over known sizes: pool_ceil_pads makes it ceil_mode 0 with
    the end pads grown (not for an AveragePool that counts its padding, where the last windows' divisor
    differs), so it runs on the tuned kernels; the values match onnxruntime's either way."""
    b = _model(op, shape, {**attrs, **extra, "ceil_mode": 1})
    x = RNG.standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    sess = tessera.InferenceSession(b)
    ir = sess.graph_text()
    if not (op == "AveragePool" and extra.get("count_include_pad")):  # (that one stays where a pad grows)
        assert "ceil_mode=1" not in ir, ir
    for threads in (1, 2):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=[2, 2], strides=[2, 2]),                       # SegNet's
                                   dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[3, 2], strides=[1, 2], pads=[2, 0, 0, 1], dilations=[2, 1]),
                                   dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)])
def test_max_pool_indices_match_onnxruntime(attrs, storage_order):
    """MaxPool's indices output (SegNet / ENet keep it for MaxUnpool) on the tuned kernel: the first maximum
    of each window, its flat index over the input (row- or column-major), with padding, dilation and ceil
    mode; values and indices equal to onnxruntime's at one and two threads."""
    shape = [2, 3, 13, 10]
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], storage_order=storage_order, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 7
    b = m.SerializeToString()
    x = RNG.standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for threads in (1, 2):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("stride", [40, 1 << 40])
def test_stride_past_the_row_matches(op, stride):
    """A stride longer than the row: at most one output reads it. The tuned kernel split the row into
    `stride` phases first — 4 TiB of them for a fuzzed stride of 2^40. Against onnxruntime."""
    b = _model(op, [1, 2, 32, 32, 32], dict(kernel_shape=[5, 5, 5], strides=[3, 3, stride], dilations=[2, 2, 2]))
    x = RNG.standard_normal((1, 2, 32, 32, 32)).astype(np.float32)
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=2)).run(None, {"x": x})[0]
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
