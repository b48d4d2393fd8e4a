"""3-D convolutions (video models' Conv3d) as sums of 2-D NHWC convs (fuse_conv, pack_conv3d,
kernels/x86/conv3d.h) against onnxruntime: a residual block with Relu, strides, a (3, 7, 7) stem, 1x1x1
shortcuts, depthwise and grouped filters, dilation, padding that leaves output planes no tap reaches,
symbolic depth and image size (one session, two clip sizes), and weights fed at run time (the reference
kernel)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(17)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)


def _model(cin, cout, k, attrs, x_dims, residual=False, const_w=True):
    g = attrs.get("group", 1)
    inits = [_w("b", cout)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)]
    if const_w:
        inits.append(_w("w", cout, cin // g, *k))
    else:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [cout, cin // g, *k]))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(k), **attrs)]
    if residual:
        nodes.append(helper.make_node("Add", ["c", "x"], ["a"]))
        nodes.append(helper.make_node("Relu", ["a"], ["y"]))
    else:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _check(sess, b, x, **more):
    feeds = {"x": x, **more}
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = sess.run(None, feeds)[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


CASES = [
    (16, 16, (3, 3, 3), dict(pads=[1] * 6), True),                                   # r3d's block conv
    (8, 16, (3, 3, 3), dict(strides=[2, 2, 2], pads=[1] * 6), False),                # downsampling
    (3, 12, (3, 7, 7), dict(strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3]), False),     # the stem
    (8, 20, (1, 1, 1), dict(strides=[2, 2, 2]), False),                              # the shortcut
    (16, 16, (3, 3, 3), dict(group=16, pads=[1] * 6), True),                         # depthwise (X3D)
    (32, 32, (3, 3, 3), dict(group=8, pads=[1] * 6), False),                         # grouped, 4 a group
    (6, 10, (3, 3, 3), dict(dilations=[2, 1, 1], pads=[2, 1, 1, 2, 1, 1]), False),  # dilated in depth
    (5, 7, (2, 3, 3), dict(pads=[3, 1, 1, 3, 1, 1]), False),                         # planes no tap reaches
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("cin,cout,k,attrs,residual", CASES)
def test_conv3d_matches_onnxruntime(cin, cout, k, attrs, residual, threads):
    shape = [2, cin, 6, 11, 10]
    b = _model(cin, cout, k, attrs, shape, residual)
    x = RNG.standard_normal(shape).astype(np.float32)
    sess = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
    ir = sess.graph_text()
    assert 'layout="NCDHW"' in ir and "= Conv(" not in ir and "Relu(" not in ir, ir
    _check(sess, b, x)


@pytest.mark.parametrize("threads", [1, 2])
def test_conv3d_symbolic_clip_size(threads):
    b = _model(8, 8, (3, 3, 3), dict(pads=[1] * 6), ["N", 8, "T", "H", "W"], residual=True)
    sess = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
    assert 'layout="NCDHW"' in sess.graph_text()
    for shape in [(1, 8, 4, 9, 12), (2, 8, 7, 16, 5)]:
        _check(sess, b, RNG.standard_normal(shape).astype(np.float32))


def test_conv3d_weights_fed_at_run_time():
    b = _model(4, 6, (3, 3, 3), dict(pads=[1] * 6), [1, 4, 3, 5, 6], const_w=False)
    _check(tessera.InferenceSession(b), b, RNG.standard_normal((1, 4, 3, 5, 6)).astype(np.float32),
           w=RNG.standard_normal((6, 4, 3, 3, 3)).astype(np.float32))


def test_conv3d_groups_the_nhwc_kernels_do_not_take():
    """3 channels a group: a 3-D FusedConv left in NCHW (pack_conv3d declines), on the reference kernel."""
    b = _model(6, 6, (3, 3, 3), dict(group=2, pads=[1] * 6), [1, 6, 4, 7, 5], residual=True)
    sess = tessera.InferenceSession(b)
    ir = sess.graph_text()
    assert "tessera.FusedConv(" in ir and 'layout="NCDHW"' not in ir, ir
    _check(sess, b, RNG.standard_normal((1, 6, 4, 7, 5)).astype(np.float32))
