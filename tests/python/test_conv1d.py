"""1-D convolutions (audio front ends) run as 2-D convs of height 1 on the tuned kernels (fuse_conv's
rewrite, Reshapes around it), against onnxruntime: strides, dilation, padding, auto_pad, groups (depthwise
and grouped), no bias, a batch, and the activation after it."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(31)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("attrs,cin,cout,k", [
    (dict(pads=[1, 1]), 16, 32, 3),                       # Whisper's first conv
    (dict(strides=[2], pads=[1, 1]), 32, 32, 3),          # and its second
    (dict(strides=[5]), 1, 24, 10),                       # wav2vec's first (one input channel)
    (dict(dilations=[2], pads=[2, 2]), 8, 8, 3),
    (dict(auto_pad="SAME_UPPER"), 12, 20, 4),
    (dict(group=16, pads=[3, 4]), 16, 16, 8),             # depthwise
    (dict(group=4, pads=[1, 1]), 16, 32, 3),              # grouped
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv1d_matches_onnxruntime(attrs, cin, cout, k, bias, threads, tmp_path):
    g = attrs.get("group", 1)
    inits = [numpy_helper.from_array((RNG.standard_normal((cout, cin // g, k)) / np.sqrt(cin // g * k)).astype(np.float32), "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32), "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c"], kernel_shape=[k], **attrs), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, cin, 37])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    x = RNG.standard_normal((2, cin, 37)).astype(np.float32)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-5
    p = tmp_path / "m.onnx"
    p.write_bytes(b)
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if os.path.exists(exe):
        ir = subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True,
                            check=True).stdout.split("FLOPs (estimate)")[1]
        assert "tessera.FusedConv(" in ir and "= Conv(" not in ir


def _ir(b, tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(b)
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if not os.path.exists(exe):
        pytest.skip("no tessera CLI beside the module")
    return subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True,
                          check=True).stdout.split("FLOPs (estimate)")[1]


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)


def _check(b, feeds, threads, tol=1e-5):
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)
    for level in (0, 99):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads, optimization_level=level)).run(
            None, feeds)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert np.abs(g - w).max() / max(np.abs(w).max(), 1e-30) <= tol, level


@pytest.mark.parametrize("threads", [1, 2])
def test_1d_region_runs_as_2d_channels_last(threads, tmp_path):
    """lift_1d: a WaveNet-style block (causal Pad, dilated Conv1d, Split gate of Tanh x Sigmoid, 1x1 residual
    and skip convs summed by Adds, Relu, Softmax over the channels), a PointNet-style max over the points,
    and Transposes to [N, L, C] and back around a MatMul: the whole region 4-D and channels-last (the Pads
    folded into the convs, the Adds and Relus into their epilogues, the edge Transposes the NHWC twins),
    against onnxruntime."""
    c, t = 16, 45
    inits = [_w("w0", 2 * c, c, 2), _w("b0", 2 * c), _w("wr", c, c, 1), _w("br", c), _w("ws", c, c, 1),
             _w("ws2", c, c, 1), _w("wm", c, c), _w("wo", c, c, 1), _w("bo", c),
             numpy_helper.from_array(np.array([0, 0, 4, 0, 0, 0], np.int64), "pads"),
             numpy_helper.from_array(np.array([c, c], np.int64), "split"),
             numpy_helper.from_array(RNG.standard_normal((c, 1)).astype(np.float32), "scale")]
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["xp"], mode="constant"),
        helper.make_node("Conv", ["xp", "w0", "b0"], ["h"], kernel_shape=[2], dilations=[4]),
        helper.make_node("Split", ["h", "split"], ["f", "gt"], axis=1),
        helper.make_node("Tanh", ["f"], ["tf"]),
        helper.make_node("Sigmoid", ["gt"], ["sg"]),
        helper.make_node("Mul", ["tf", "sg"], ["z"]),
        helper.make_node("Conv", ["z", "wr", "br"], ["r"], kernel_shape=[1]),
        helper.make_node("Add", ["x", "r"], ["x1"]),
        helper.make_node("Conv", ["z", "ws"], ["s1"], kernel_shape=[1]),
        helper.make_node("Conv", ["x1", "ws2"], ["s2"], kernel_shape=[1]),
        helper.make_node("Add", ["s1", "s2"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),  # a [C, 1] constant: broadcast per channel
        helper.make_node("Relu", ["ss"], ["rs"]),
        helper.make_node("Transpose", ["rs"], ["tl"], perm=[0, 2, 1]),  # [N, L, C] out of the region
        helper.make_node("MatMul", ["tl", "wm"], ["mm"]),
        helper.make_node("Transpose", ["mm"], ["tc"], perm=[0, 2, 1]),  # and back in
        helper.make_node("Conv", ["tc", "wo", "bo"], ["o"], kernel_shape=[1]),
        helper.make_node("Softmax", ["o"], ["y"], axis=1),
        helper.make_node("ReduceMax", ["o"], ["mx"], axes=[2], keepdims=0),
        helper.make_node("ReduceMean", ["x1"], ["mn"], axes=[2], keepdims=1),
        helper.make_node("ReduceMax", ["x1"], ["mk"], axes=[-1], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, t])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "mx", "mn", "mk")],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    _check(b, {"x": RNG.standard_normal((2, c, t)).astype(np.float32)}, threads)
    ir = _ir(b, tmp_path)
    assert "= Pad(" not in ir and "= Conv(" not in ir and "= Add(" not in ir and "= Relu(" not in ir
    assert ir.count("tessera.FusedConv(") == 5 and 'layout="NHWC"' in ir
    # the graph input's and output's Transposes only (the MatMul's pair became the twins, the Softmax and
    # the Reduces run on them)
    assert ir.count("= Transpose(") <= 2


@pytest.mark.parametrize("pads,value,mode,folded", [
    ([0, 0, 1, 2, 0, 0, 3, 0], None, "constant", True),     # asymmetric: top 1, left 2, bottom 3
    ([0, 0, 0, 1, 0, 0, 0, 1], 0.0, "constant", True),      # an explicit zero
    ([0, 0, 1, 1, 0, 0, 1, 1], 0.5, "constant", False),     # another value: kept
    ([0, 0, 1, 1, 0, 0, 1, 1], None, "reflect", False),     # another mode: kept
    ([0, 1, 0, 0, 0, 0, 0, 0], None, "constant", False),    # channels padded: kept
])
def test_pad_folds_into_the_conv(pads, value, mode, folded, tmp_path):
    inits = [_w("w", 8, 4, 3, 3), numpy_helper.from_array(np.array(pads, np.int64), "p")]
    ins = ["x", "p"]
    if value is not None:
        inits.append(numpy_helper.from_array(np.array(value, np.float32), "v"))
        ins.append("v")
    cin = 4 + pads[1] + pads[5]
    inits[0] = _w("w", 8, cin, 3, 3)
    nodes = [helper.make_node("Pad", ins, ["xp"], mode=mode),
             helper.make_node("Conv", ["xp", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 0, 0, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    _check(b, {"x": RNG.standard_normal((1, 4, 9, 10)).astype(np.float32)}, 1)
    assert ("= Pad(" not in _ir(b, tmp_path)) == folded
