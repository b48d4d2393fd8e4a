"""The decoder ops of segmentation and generative models on their tuned kernels, against onnxruntime:
ConvTranspose (kernels/x86/conv2d.h: one GEMM of every tap's products, then col2im) at the strides, kernels,
paddings, dilations and output paddings exporters write, and Resize of H and W (kernels/x86/resize.h) in
nearest and linear modes under each coordinate transformation; what the fast paths do not take (groups,
cubic, resizing N or C) runs on the reference kernels. And the dead-node pass: a branch nothing reads is not
run."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(21)


def _model(nodes, inits, x_shape, opset=19):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m.SerializeToString()


def _check(b, x, threads, tol=1e-5):
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
    assert got.shape == want.shape
    scale = max(np.nanmax(np.abs(want)), 1e-30)
    assert np.nanmax(np.abs(got - want)) / scale <= tol
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("attrs,cin,cout,k", [
    (dict(strides=[2, 2]), 16, 8, (2, 2)),                                    # UNet's up-convolution
    (dict(strides=[2, 2], pads=[1, 1, 1, 1]), 8, 12, (4, 4)),                 # DCGAN's
    (dict(pads=[1, 1, 1, 1]), 6, 5, (3, 3)),                                  # stride 1
    (dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), 7, 9, (3, 3)),
    (dict(strides=[2, 2], dilations=[2, 2], pads=[2, 1, 2, 1]), 5, 4, (3, 3)),
    (dict(strides=[2, 1], pads=[0, 1, 1, 0]), 4, 6, (2, 3)),                  # asymmetric
    (dict(strides=[3, 3], auto_pad="VALID"), 3, 2, (2, 2)),                   # gaps between windows
    (dict(strides=[2, 2], group=2), 8, 6, (3, 3)),                            # groups: the reference kernel
    (dict(strides=[2, 2], output_shape=[13, 11]), 4, 4, (3, 3)),             # output_shape: the reference
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_matches_onnxruntime(attrs, cin, cout, k, bias, threads):
    g = attrs.get("group", 1)
    inits = [numpy_helper.from_array(RNG.standard_normal((cin, cout // g) + k).astype(np.float32), "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32), "b"))
        ins.append("b")
    b = _model([helper.make_node("ConvTranspose", ins, ["y"], kernel_shape=list(k), **attrs)], inits,
               (2, cin, 6, 7))
    _check(b, RNG.standard_normal((2, cin, 6, 7)).astype(np.float32), threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("attrs,cin,cout,k", [
    (dict(strides=[8], pads=[4, 4]), 12, 6, 16),                               # HiFi-GAN's 8x upsampling
    (dict(strides=[2], pads=[1, 0], output_padding=[1]), 5, 7, 3),
    (dict(strides=[3], dilations=[2], pads=[2, 2]), 4, 3, 3),
    (dict(), 3, 4, 1),                                                        # no attributes but the kernel
])
def test_conv_transpose_1d_matches_onnxruntime(attrs, cin, cout, k, threads):
    """1-D ConvTranspose (a vocoder's upsampling) on the 2-D kernel as height 1."""
    inits = [numpy_helper.from_array(RNG.standard_normal((cin, cout, k)).astype(np.float32), "w"),
             numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32), "b")]
    b = _model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[k], **attrs)], inits,
               (2, cin, 23))
    _check(b, RNG.standard_normal((2, cin, 23)).astype(np.float32), threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode,ctm,extra", [
    ("nearest", "asymmetric", dict(nearest_mode="floor")),          # PyTorch's nearest
    ("nearest", "half_pixel", {}),                                  # round_prefer_floor
    ("nearest", "align_corners", dict(nearest_mode="round_prefer_ceil")),
    ("nearest", "half_pixel", dict(nearest_mode="ceil")),
    ("linear", "half_pixel", {}),                                   # bilinear, align_corners=False
    ("linear", "align_corners", {}),
    ("linear", "pytorch_half_pixel", {}),
    ("linear", "asymmetric", {}),
    ("cubic", "half_pixel", {}),                                    # the reference kernel
])
@pytest.mark.parametrize("scales", [(2.0, 2.0), (0.5, 0.5), (1.5, 3.0), (1.0, 2.0)])
def test_resize_matches_onnxruntime(mode, ctm, extra, scales, threads):
    inits = [numpy_helper.from_array(np.array((1.0, 1.0) + scales, np.float32), "s")]
    b = _model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode,
                                 coordinate_transformation_mode=ctm, **extra)], inits, (2, 3, 8, 10))
    x = RNG.standard_normal((2, 3, 8, 10)).astype(np.float32)
    if mode == "nearest":  # a NaN shows where it is picked (linear: onnxruntime spreads it through 0 * NaN)
        x[0, 1, 3, 4] = np.nan
    _check(b, x, threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode,scales", [("nearest", (2.0, 2.0)), ("linear", (2.0, 3.0)), ("nearest", (1.5, 2.5))])
def test_upsample_opset9_matches_onnxruntime(mode, scales, threads):
    """Upsample (opsets 7-9, older YOLO exports) on the same tuned kernel as Resize."""
    inits = [numpy_helper.from_array(np.array((1.0, 1.0) + scales, np.float32), "s")]
    b = _model([helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)], inits, (2, 3, 8, 10), opset=9)
    _check(b, RNG.standard_normal((2, 3, 8, 10)).astype(np.float32), threads)


@pytest.mark.parametrize("sizes,scales", [((2, 3, 17, 5), None), (None, (2.0, 1.0, 2.0, 2.0)),
                                          (None, (1.0, 2.0, 2.0, 2.0))])
def test_resize_sizes_and_other_axes(sizes, scales):
    """Output sizes instead of scales (fast path), and a resize of N or C (the reference kernel)."""
    if sizes:
        inits = [numpy_helper.from_array(np.array(sizes, np.int64), "z")]
        node = helper.make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear")
    else:
        inits = [numpy_helper.from_array(np.array(scales, np.float32), "s")]
        node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest")
    b = _model([node], inits, (2, 3, 8, 10))
    _check(b, RNG.standard_normal((2, 3, 8, 10)).astype(np.float32), 2)


def test_dead_branches_are_not_run(tmp_path):
    """A node whose result nothing reads, and the chain feeding only it, leave the graph."""
    inits = [numpy_helper.from_array(RNG.standard_normal((4, 4, 2, 2)).astype(np.float32), "w")]
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["dead1"], strides=[2, 2]),
             helper.make_node("Relu", ["dead1"], ["dead2"]),
             helper.make_node("Sigmoid", ["x"], ["y"])]
    b = _model(nodes, inits, (1, 4, 5, 5))
    _check(b, RNG.standard_normal((1, 4, 5, 5)).astype(np.float32), 1)
    p = tmp_path / "m.onnx"
    p.write_bytes(b)
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if not os.path.exists(exe):
        pytest.skip("no tessera command next to the module")
    ir = subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True,
                        check=True).stdout.split("FLOPs (estimate)")[1]
    assert "ConvTranspose(" not in ir and "Relu(" not in ir and "Sigmoid(" in ir


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_matches_onnxruntime(mode, padding_mode, align_corners):
    """GridSample (spatial transformers, flow warps) on the tuned kernel: taps computed once per output pixel
    for all channels; two images, a non-square map, grid points past the edges (padding), against
    onnxruntime at one and two threads."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 5, 17, 23)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 19, 11, 2)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding_mode,
                            align_corners=align_corners)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
                                        helper.make_tensor_value_info("g", TensorProto.FLOAT, list(grid.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    b = m.SerializeToString()
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x, "g": grid})[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x, "g": grid})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
