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
