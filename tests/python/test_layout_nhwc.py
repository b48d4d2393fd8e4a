"""The conv passes (fold_batchnorm, fuse_conv, layout_nhwc): a small CNN with every pattern they
rewrite — Conv+BatchNorm+Relu, MaxPool, pointwise / depthwise / strided / dilated convs, a residual
Add, a region value that is also a graph output, a grouped conv the NHWC kernels leave in NCHW —
gives the same outputs optimized (tuned NHWC kernels) as unoptimized (reference kernels, no passes),
and as onnxruntime; `tessera info --ir` shows the rewritten graph."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(11)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)


def _pos(name, n):
    return numpy_helper.from_array((RNG.random(n) + 0.5).astype(np.float32), name)


def small_cnn(n=2, batch_dim=None, spatial_dims=(33, 31)):
    inits = [
        _w("w0", 16, 3, 3, 3), _pos("bn_s", 16), _w("bn_b", 16), _w("bn_m", 16), _pos("bn_v", 16),
        _w("w1", 24, 16, 1, 1), _w("b1", 24),
        _w("wd", 24, 1, 3, 3), _w("bd", 24),
        _w("w2", 16, 24, 1, 1),
        _w("w3", 20, 16, 3, 3), _w("b3", 20),
        _w("wg", 20, 10, 3, 3),  # group 2: stays NCHW
        _w("w4", 70, 20, 1, 1), _w("b4", 70),
        numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c0", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn0"], epsilon=1e-3),
        helper.make_node("Relu", ["bn0"], ["r0"]),
        helper.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p0", "w1", "b1"], ["c1"]),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["c2"], group=24, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
        helper.make_node("Conv", ["r2", "w2"], ["c3"]),
        helper.make_node("Add", ["c3", "p0"], ["a3"]),
        helper.make_node("Conv", ["a3", "w3", "b3"], ["c4"], strides=[2, 2], pads=[2, 1, 1, 2], dilations=[2, 1]),
        helper.make_node("Relu", ["c4"], ["r4"]),
        helper.make_node("Conv", ["r4", "wg"], ["g5"], group=2, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["g5", "w4", "b4"], ["c6"]),
        helper.make_node("GlobalAveragePool", ["c6"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     [batch_dim or n, 3, *spatial_dims])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("a3", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("threads,batch_dim", [(1, None), (2, None), (2, "N")])
def test_passes_keep_numerics(threads, batch_dim):
    m = small_cnn(batch_dim=batch_dim)
    b = m.SerializeToString()
    x = RNG.standard_normal((2, 3, 33, 31)).astype(np.float32)
    fast = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})
    ref = tessera.InferenceSession(b, tessera.SessionOptions(threads=1, optimization_level=0)).run(None, {"x": x})
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for f, r, o in zip(fast, ref, want):
        assert f.shape == o.shape and r.shape == o.shape
        scale = np.abs(o).max()
        assert np.abs(f - o).max() / scale <= 1e-4
        assert np.abs(r - o).max() / scale <= 1e-4


@pytest.mark.parametrize("threads", [1, 2])
def test_dynamic_image_size_runs_in_nhwc(threads):
    """Batch, height and width symbolic (a detector exported with dynamic axes): the region still forms (the
    kernels read the sizes at run time), and one session runs images of two sizes as onnxruntime does."""
    b = small_cnn(batch_dim="N", spatial_dims=("H", "W")).SerializeToString()
    sess = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
    ir = sess.graph_text()
    assert ir.count('layout="NHWC"') == 3 and ir.count("tessera.FusedPwDwConv(") == 1, ir
    ref = ort.InferenceSession(b, providers=["CPUExecutionProvider"])
    for shape in [(1, 3, 33, 31), (2, 3, 20, 45)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        for f, o in zip(sess.run(None, {"x": x}), ref.run(None, {"x": x})):
            assert f.shape == o.shape
            assert np.abs(f - o).max() / np.abs(o).max() <= 1e-4


@pytest.mark.parametrize("opset", [17, 18])
def test_squeeze_excitation_by_reduce_mean_stays_nhwc(opset):
    """timm's squeeze-and-excitation, x.mean((2, 3), keepdim=True) -> 1x1 conv -> Relu -> 1x1 conv ->
    Sigmoid -> Mul: the mean is the NHWC global pool (axes as an attribute, or opset 18's input), so the map
    stays in the region."""
    inits = [_w("w0", 32, 8, 3, 3), _w("w1", 8, 32, 1, 1), _w("b1", 8), _w("w2", 32, 8, 1, 1), _w("b2", 32),
             _w("w3", 16, 32, 1, 1)]
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.array([-1, 2], np.int64), "axes"))
        mean = helper.make_node("ReduceMean", ["c0", "axes"], ["m"], keepdims=1)
    else:
        mean = helper.make_node("ReduceMean", ["c0"], ["m"], axes=[2, 3], keepdims=1)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]), mean,
             helper.make_node("Conv", ["m", "w1", "b1"], ["s1"]), helper.make_node("Relu", ["s1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["s2"]), helper.make_node("Sigmoid", ["s2"], ["g"]),
             helper.make_node("Mul", ["c0", "g"], ["h"]), helper.make_node("Conv", ["h", "w3"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 15, 13])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 15, 13])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    b = m.SerializeToString()
    sess = tessera.InferenceSession(b)
    ir = sess.graph_text()
    assert "ReduceMean(" not in ir and "tessera.NhwcGlobalAveragePool(" in ir, ir
    assert "Transpose(%c0" not in ir, ir  # the map stays NHWC (only the 1 x 1 mean is transposed)
    x = RNG.standard_normal((1, 8, 15, 13)).astype(np.float32)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(sess.run(None, {"x": x})[0] - want).max() / np.abs(want).max() <= 1e-4


def test_ir_after_passes(tmp_path):
    p = tmp_path / "cnn.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if not os.path.exists(exe):
        pytest.skip("no tessera command next to the module")
    out = subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True, check=True).stdout
    ir = out.split("FLOPs (estimate)")[1]
    assert "= BatchNormalization(" not in ir and "= Relu(" not in ir and "= Clip(" not in ir
    # every conv but the grouped one; the expansion, depthwise and projection convs (with the residual Add)
    # are one FusedPwDwConv
    assert ir.count('layout="NHWC"') == 3 and ir.count("tessera.FusedPwDwConv(") == 1
    assert ir.count("proj_channels=16") == 1
    assert ir.count("tessera.NhwcMaxPool(") == 1
    assert ir.count("winograd=4") == 1  # the one 3x3 stride-1 dense conv
    assert ir.count("tessera.NhwcGlobalAveragePool(") == 1 and "= GlobalAveragePool(" not in ir
    # into the region once (x: the first conv is a Winograd one, which reads NHWC), out for a3 (a graph
    # output), around the grouped conv; none before the pool
    assert 'input_layout="NCHW"' not in ir
    assert ir.count("Transpose(") == 4


def _three_by_three_chain(side):
    """Two 3x3 stride-1 convs (Relu between) on a side x side map."""
    inits = [_w("w0", 12, 8, 3, 3), _w("b0", 12), _w("w1", 16, 12, 3, 3)]
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1"], ["y"], pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, side, side])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("side,variant", [(28, "winograd=4"), (14, "winograd=2"), (7, None)])
def test_winograd_tile_size_follows_the_map(side, variant, tmp_path):
    # F(4x4) where it gives 32+ tiles (28 x 28: 49), else F(2x2) where that does (14 x 14: 49 tiles, F(4x4)
    # 16), else direct (7 x 7: 16 tiles of F(2x2)); each against onnxruntime at one and two threads
    m = _three_by_three_chain(side)
    p = tmp_path / "c.onnx"
    p.write_bytes(m.SerializeToString())
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if os.path.exists(exe):
        ir = subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True,
                            check=True).stdout.split("FLOPs (estimate)")[1]
        assert ir.count("winograd=") == (2 if variant else 0)
        if variant:
            assert ir.count(variant) == 2
    x = RNG.standard_normal((1, 8, side, side)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(m.SerializeToString(), tessera.SessionOptions(threads=threads)).run(
            None, {"x": x})[0]
        assert got.shape == want.shape
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


def _check_one_winograd(g, variant, x_shape):
    """The graph's one 3x3 conv runs as Winograd `variant` ("winograd=m", or None: direct), and its output
    matches onnxruntime's at one and two threads."""
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    ir = tessera.InferenceSession(b).graph_text()
    assert ir.count("winograd=") == (1 if variant else 0), ir
    if variant:
        assert variant in ir, ir
    x = RNG.standard_normal(x_shape).astype(np.float32)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
        assert got.shape == want.shape
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


@pytest.mark.parametrize("side,dilation,variant", [(28, 2, "winograd=4"), (16, 2, "winograd=2"), (28, 4, "winograd=2"),
                                                   (28, 12, None)])
def test_dilated_winograd(side, dilation, variant):
    # DeepLab's dilated 3x3 convs as Winograd over the dilation's phases (space-to-batch without the copies):
    # the phases' sub-grids decide the tile (28 / 2 = 14: F(4x4) on 64 tiles; 16 / 2 = 8: 16 tiles of F(4x4),
    # so F(2x2); 28 / 4 = 7: F(2x2)); an atrous rate whose sub-grids are under 4 x 4 stays direct. Against
    # onnxruntime at one and two threads.
    pad = dilation
    inits = [_w("w0", 24, 8, 3, 3), _w("b0", 24)]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[pad] * 4, dilations=[dilation] * 2),
             helper.make_node("Relu", ["c0"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, side, side])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    _check_one_winograd(g, variant, (1, 8, side, side))


@pytest.mark.parametrize("side,cg,variant", [(28, 16, "winograd=4"), (7, 16, "winograd=4"), (3, 8, "winograd=4"),
                                             (2, 16, "winograd=2"), (1, 16, None), (14, 4, None)])
def test_grouped_winograd(side, cg, variant, tmp_path):
    # RegNet's and ResNeXt's grouped 3x3 convs (a pointwise conv before, Relu between): Winograd with the
    # tile of fewer points wherever it halves the multiplies (F(4x4) from 3 x 3 maps, F(2x2) at 2 x 2, none
    # at 1 x 1) and the groups have 8 inputs or more; on full-width FMA cores only from 32 tiles (the two
    # images' 28 x 28 maps; the smaller ones run direct). Against onnxruntime at one and two threads.
    if "fma512-full" in tessera.kernel_isa().split() and side < 28:
        variant = None
    groups = 3
    c = cg * groups
    inits = [_w("w0", c, 8, 1, 1), _w("b0", c), _w("w1", 2 * c, cg, 3, 3), _w("b1", 2 * c)]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"]), helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["y"], pads=[1, 1, 1, 1], group=groups)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, side, side])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    _check_one_winograd(g, variant, (2, 8, side, side))


@pytest.mark.parametrize("threads", [1, 2])
def test_stem_conv_reads_nchw(threads):
    """A first conv of 3 channels, stride 2, asymmetric padding, Clip, then a pointwise conv: the stem reads
    the image in NCHW (no Transpose into the region) where the kernel applies, and the outputs match."""
    inits = [_w("w0", 20, 3, 3, 3), _w("b0", 20), _w("w1", 12, 20, 1, 1),
             numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], strides=[2, 2], pads=[1, 0, 1, 1]),
             helper.make_node("Clip", ["c0", "lo", "hi"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 37, 29])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    x = RNG.standard_normal((2, 3, 37, 29)).astype(np.float32)
    s = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
    ir = s.graph_text()
    if "avx512f" in tessera.kernel_isa().split():
        assert 'input_layout="NCHW"' in ir and ir.count("Transpose(") == 1  # the output's only
    got = s.run(None, {"x": x})[0]
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("project,batch", [(True, 1), (True, 2), (False, 1)])
def test_stem_depthwise_fusion(threads, project, batch):
    """A stem conv (3 channels, stride 2, Clip) read only by a depthwise conv (Clip), with or without a
    projection after it: one FusedPwDwConv reads the NCHW image where the stem kernel applies (no FusedConv
    left), and the outputs match onnxruntime's."""
    inits = [_w("w0", 32, 3, 3, 3), _w("b0", 32), _w("wd", 32, 1, 3, 3), _w("bd", 32), _w("wp", 16, 32, 1, 1),
             numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c0", "lo", "hi"], ["r0"]),
             helper.make_node("Conv", ["r0", "wd", "bd"], ["c1"], group=32, pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c1", "lo", "hi"], ["r1" if project else "y"])]
    if project:
        nodes.append(helper.make_node("Conv", ["r1", "wp"], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 45, 37])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    x = RNG.standard_normal((batch, 3, 45, 37)).astype(np.float32)
    s = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
    ir = s.graph_text()
    if "avx512f" in tessera.kernel_isa().split():
        assert ir.count("FusedPwDwConv(") == 1 and "FusedConv(" not in ir, ir
        assert 'pw_input_layout="NCHW"' in ir, ir
    got = s.run(None, {"x": x})[0]
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


def _optimized_ir(model_bytes, tmp_path):
    """The graph after the passes (`tessera info --ir`), or None without the tessera command."""
    p = tmp_path / "ir.onnx"
    p.write_bytes(model_bytes)
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if not os.path.exists(exe):
        return None
    out = subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True, check=True).stdout
    return out.split("FLOPs (estimate)")[1]


def inverted_residuals():
    """Expansion (pointwise) convs feeding depthwise convs, as fuse_pw_dw rewrites them: no activation on the
    expansion and a 5x5 stride-2 depthwise; Relu and a dilated 3x3; an expansion whose output is also read
    elsewhere (stays two FusedConvs)."""
    inits = [_w("e1", 32, 8, 1, 1), _w("eb1", 32), _w("d1", 32, 1, 5, 5), _w("db1", 32),
             _w("e2", 48, 32, 1, 1), _w("d2", 48, 1, 3, 3),
             _w("e3", 24, 48, 1, 1), _w("eb3", 24), _w("d3", 24, 1, 3, 3)]
    nodes = [
        helper.make_node("Conv", ["x", "e1", "eb1"], ["t1"]),
        helper.make_node("Conv", ["t1", "d1", "db1"], ["c1"], group=32, strides=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "e2"], ["t2"]),
        helper.make_node("Relu", ["t2"], ["u2"]),
        helper.make_node("Conv", ["u2", "d2"], ["c2"], group=48, dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["c2", "e3", "eb3"], ["t3"]),
        helper.make_node("Conv", ["t3", "d3"], ["c3"], group=24, pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c3", "t3"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 23, 19])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("threads", [1, 2])
def test_pointwise_depthwise_fusion(threads, tmp_path):
    m = inverted_residuals()
    b = m.SerializeToString()
    x = RNG.standard_normal((2, 8, 23, 19)).astype(np.float32)
    fast = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert fast.shape == want.shape
    assert np.abs(fast - want).max() / np.abs(want).max() <= 1e-4
    ir = _optimized_ir(b, tmp_path)
    if ir is not None:
        assert ir.count("tessera.FusedPwDwConv(") == 2  # the third expansion is also read by the Add


def projected_blocks():
    """Whole inverted-residual blocks, as fuse_pw_dw rewrites them (expansion, depthwise and projection in one
    node): a depthwise conv and its projection without an expansion (a depthwise-separable conv, MobileNetV2's
    first block); a stride-1 block whose projection adds the block's input; a stride-2 block whose projection (70
    channels: past a 64-wide panel) ends in Relu, its output also a graph output and read by a third block;
    that block's projection feeds a depthwise conv, so it stays the expansion of the pair after it."""
    inits = [_w("d0", 16, 1, 3, 3), _w("db0", 16), _w("p0", 16, 16, 1, 1),
             _w("e1", 64, 16, 1, 1), _w("eb1", 64), _w("d1", 64, 1, 3, 3), _w("db1", 64),
             _w("p1", 16, 64, 1, 1), _w("pb1", 16),
             _w("e2", 48, 16, 1, 1), _w("d2", 48, 1, 3, 3), _w("p2", 70, 48, 1, 1), _w("pb2", 70),
             _w("e3", 40, 70, 1, 1), _w("d3", 40, 1, 3, 3), _w("p3", 24, 40, 1, 1),
             _w("d4", 24, 1, 3, 3), _w("db4", 24),
             numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi")]
    nodes = [
        helper.make_node("Conv", ["x", "d0", "db0"], ["c0"], group=16, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c0", "lo", "hi"], ["v0"]),
        helper.make_node("Conv", ["v0", "p0"], ["x0"]),
        helper.make_node("Conv", ["x0", "e1", "eb1"], ["t1"]),
        helper.make_node("Clip", ["t1", "lo", "hi"], ["u1"]),
        helper.make_node("Conv", ["u1", "d1", "db1"], ["c1"], group=64, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["v1"]),
        helper.make_node("Conv", ["v1", "p1", "pb1"], ["q1"]),
        helper.make_node("Add", ["q1", "x0"], ["y1"]),
        helper.make_node("Conv", ["y1", "e2"], ["t2"]),
        helper.make_node("Relu", ["t2"], ["u2"]),
        helper.make_node("Conv", ["u2", "d2"], ["c2"], group=48, strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c2", "p2", "pb2"], ["q2"]),
        helper.make_node("Relu", ["q2"], ["y2"]),
        helper.make_node("Conv", ["y2", "e3"], ["t3"]),
        helper.make_node("Conv", ["t3", "d3"], ["c3"], group=40, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c3", "p3"], ["q3"]),
        helper.make_node("Conv", ["q3", "d4", "db4"], ["y3"], group=24, pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 29, 27])],
                          [helper.make_tensor_value_info("y2", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y3", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch", [1, 2])
def test_projection_fusion(threads, batch, tmp_path):
    m = projected_blocks()
    b = m.SerializeToString()
    x = RNG.standard_normal((batch, 16, 29, 27)).astype(np.float32)
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g_, w_ in zip(got, want):
        assert g_.shape == w_.shape
        assert np.abs(g_ - w_).max() / np.abs(w_).max() <= 1e-4
    ir = _optimized_ir(b, tmp_path)
    if ir is not None:
        # blocks 0 to 2 with their projections; block 3's pair without its projection, which is the expansion
        # of the last pair
        assert ir.count("tessera.FusedPwDwConv(") == 5 and ir.count("proj_channels=") == 3
        assert 'proj_activation="Relu"' in ir


_PWDW = dict(channels=6, kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])


def _assert_node_fails(n, inits, xshape, level):
    """A model of node n over input x fails with an error naming the node (at creation or at run)."""
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xshape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("tessera", 1)])
    m.ir_version = 8
    with pytest.raises(Exception, match="node"):
        s = tessera.InferenceSession(m.SerializeToString(), tessera.SessionOptions(threads=1,
                                                                                   optimization_level=level))
        s.run(None, {"x": np.ones(xshape, np.float32)})


@pytest.mark.parametrize("attrs,w1size,w2size,xshape", [
    (_PWDW, 5, 54, (1, 5, 5, 4)),                                  # packed pointwise size (16 x 4)
    (_PWDW, 64, 50, (1, 5, 5, 4)),                                 # depthwise size (6 x 9)
    (dict(_PWDW, channels=0), 64, 54, (1, 5, 5, 4)),
    (dict(_PWDW, kernel_shape=[3]), 64, 54, (1, 5, 5, 4)),
    (dict(_PWDW, pads=[0, 0, 0, 0], kernel_shape=[7, 7]), 64, 6 * 49, (1, 5, 5, 4)),  # empty output
    (_PWDW, 64, 54, (5, 5, 4)),                                     # rank
])
@pytest.mark.parametrize("level", [0, 99])
def test_bad_pw_dw_nodes_fail_cleanly(attrs, w1size, w2size, xshape, level):
    inits = [numpy_helper.from_array(np.ones(w1size, np.float32), "w1"),
             numpy_helper.from_array(np.ones(w2size, np.float32), "w2")]
    n = helper.make_node("FusedPwDwConv", ["x", "w1", "", "w2"], ["y"], domain="tessera", **attrs)
    _assert_node_fails(n, inits, xshape, level)


_PROJ = dict(_PWDW, proj_channels=5)


@pytest.mark.parametrize("attrs,w3size,extra,xshape", [
    (_PROJ, 80, [], (1, 5, 5, 4)),                                   # packed projection size (16 x 6)
    (dict(_PROJ, proj_channels=0), 96, [], (1, 5, 5, 4)),
    (_PROJ, 96, [("b3", (4,))], (1, 5, 5, 4)),                       # projection bias length
    (_PROJ, 96, [("b3", (5,)), ("r3", (1, 5, 5, 6))], (1, 5, 5, 4)),  # residual shape
    (dict(_PROJ, proj_activation="Tanh"), 96, [], (1, 5, 5, 4)),
    (_PROJ, 0, [("b3", (5,))], (1, 5, 5, 4)),                        # a projection bias without weights
])
@pytest.mark.parametrize("level", [0, 99])
def test_bad_projection_nodes_fail_cleanly(attrs, w3size, extra, xshape, level):
    inits = [numpy_helper.from_array(np.ones(64, np.float32), "w1"),
             numpy_helper.from_array(np.ones(54, np.float32), "w2")]
    if w3size:
        inits.append(numpy_helper.from_array(np.ones(w3size, np.float32), "w3"))
    inits += [numpy_helper.from_array(np.ones(s, np.float32), name) for name, s in extra]
    names = {i.name for i in inits}
    ins = ["x", "w1", "", "w2", ""] + [n if n in names else "" for n in ("w3", "b3", "r3")]
    n = helper.make_node("FusedPwDwConv", ins, ["y"], domain="tessera", **attrs)
    _assert_node_fails(n, inits, xshape, level)


def _tessera_node_model(op, attrs, inits, xshape):
    n = helper.make_node(op, ["x"] + [i.name for i in inits], ["y"], domain="tessera", **attrs)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xshape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("tessera", 1)])
    m.ir_version = 8
    return m.SerializeToString()


_CONV = dict(kernel_shape=[3, 3], strides=[1, 1], dilations=[1, 1], pads=[1, 1, 1, 1], group=1, layout="NHWC",
             weight_shape=[8, 4, 3, 3])
_W_OK = 16 * 36  # 8 output channels pad to one 16-wide panel, K = 36


@pytest.mark.parametrize("op,attrs,wsize,xshape", [
    ("FusedConv", _CONV, 100, (1, 5, 5, 4)),                                   # packed size
    ("FusedConv", dict(_CONV, strides=[2, 2], winograd=4), _W_OK, (1, 5, 5, 4)),  # Winograd needs stride 1
    ("FusedConv", dict(_CONV, winograd=3), _W_OK, (1, 5, 5, 4)),                 # no F(3x3)
    ("FusedConv", dict(_CONV, strides=[0, 1]), _W_OK, (1, 5, 5, 4)),
    ("FusedConv", dict(_CONV, pads=[-1, 0, 0, 0]), _W_OK, (1, 5, 5, 4)),
    ("FusedConv", dict(_CONV, weight_shape=[8, 4]), _W_OK, (1, 5, 5, 4)),
    ("FusedConv", dict(_CONV, weight_shape=[8, 3, 3, 3]), _W_OK, (1, 5, 5, 4)),  # channels
    ("FusedConv", dict(_CONV, pads=[0, 0, 0, 0], kernel_shape=[9, 9], weight_shape=[8, 4, 9, 9]),
     16 * 4 * 81, (1, 5, 5, 4)),                                                # empty output
    ("FusedConv", _CONV, _W_OK, (1, 5, 5)),                                     # rank
    ("FusedConv", dict(_CONV, input_layout="NCHW", winograd=4), _W_OK, (1, 4, 5, 5)),  # NCHW input: direct
    ("FusedConv", dict(_CONV, input_layout="NCHW"), _W_OK, (1, 5, 5, 4)),       # channels (NCHW: 5)
    ("NhwcMaxPool", dict(kernel_shape=[3]), None, (1, 5, 5, 4)),
    ("NhwcMaxPool", dict(kernel_shape=[7, 7]), None, (1, 5, 5, 4)),
    ("NhwcMaxPool", dict(kernel_shape=[3, 3], strides=[-1, 1]), None, (1, 5, 5, 4)),
    ("NhwcMaxPool", dict(kernel_shape=[3, 3]), None, (5, 5, 4)),
    ("NhwcGlobalAveragePool", {}, None, (5, 4)),
    ("NhwcAveragePool", dict(kernel_shape=[3]), None, (1, 5, 5, 4)),
    ("NhwcAveragePool", dict(kernel_shape=[7, 7]), None, (1, 5, 5, 4)),
    ("NhwcAveragePool", dict(kernel_shape=[3, 3], pads=[0, -1, 0, 0]), None, (1, 5, 5, 4)),
    ("NhwcAveragePool", dict(kernel_shape=[3, 3]), None, (5, 5, 4)),
])
@pytest.mark.parametrize("level", [0, 99])
def test_bad_nhwc_nodes_fail_cleanly(op, attrs, wsize, xshape, level):
    inits = [numpy_helper.from_array(np.ones(wsize, np.float32), "w")] if wsize else []
    with pytest.raises(Exception, match="node"):
        s = tessera.InferenceSession(_tessera_node_model(op, attrs, inits, xshape),
                                     tessera.SessionOptions(threads=1, optimization_level=level))
        s.run(None, {"x": np.ones(xshape, np.float32)})


_GEMM = dict(K=4, N=8, kc=256, nr=64)
_GEMM_W = 256 * 64  # one K block of one 64-wide panel


@pytest.mark.parametrize("attrs,extra,xshape", [
    (dict(_GEMM, activation="Bogus"), [], (3, 4)),
    (dict(_GEMM, activation="Gelu"), [("bias", (7,))], (3, 4)),            # bias length
    (dict(_GEMM, activation="GeluTanh"), [("bias", (8,)), ("res", (2, 8))], (3, 4)),  # residual cannot broadcast
])
@pytest.mark.parametrize("level", [0, 99])
def test_bad_fused_gemm_nodes_fail_cleanly(attrs, extra, xshape, level):
    inits = [numpy_helper.from_array(np.ones(_GEMM_W, np.float32), "w")]
    inits += [numpy_helper.from_array(np.ones(s, np.float32), name) for name, s in extra]
    with pytest.raises(Exception, match="node"):
        s = tessera.InferenceSession(_tessera_node_model("FusedGemm", attrs, inits, xshape),
                                     tessera.SessionOptions(threads=1, optimization_level=level))
        s.run(None, {"x": np.ones(xshape, np.float32)})


def test_good_nhwc_nodes_run():
    w = numpy_helper.from_array(np.ones(_W_OK, np.float32), "w")
    x = np.ones((1, 5, 5, 4), np.float32)
    for level in (0, 99):
        so = tessera.SessionOptions(threads=1, optimization_level=level)
        (y,) = tessera.InferenceSession(_tessera_node_model("FusedConv", _CONV, [w], x.shape), so).run(None, {"x": x})
        assert y.shape == (1, 5, 5, 8) and y[0, 2, 2, 0] == 36 and y[0, 0, 0, 0] == 16
        # the input in NCHW (a stem conv: 36 taps), and over 5 x 5 windows (100 taps: a Transpose first)
        xc = np.ones((1, 4, 5, 5), np.float32)
        (y,) = tessera.InferenceSession(_tessera_node_model("FusedConv", dict(_CONV, input_layout="NCHW"), [w],
                                                            xc.shape), so).run(None, {"x": xc})
        assert y.shape == (1, 5, 5, 8) and y[0, 2, 2, 0] == 36 and y[0, 0, 0, 0] == 16
        w5 = numpy_helper.from_array(np.ones(16 * 100, np.float32), "w")
        attrs5 = dict(_CONV, input_layout="NCHW", kernel_shape=[5, 5], pads=[2, 2, 2, 2], weight_shape=[8, 4, 5, 5])
        (y,) = tessera.InferenceSession(_tessera_node_model("FusedConv", attrs5, [w5], xc.shape),
                                        so).run(None, {"x": xc})
        assert y.shape == (1, 5, 5, 8) and y[0, 2, 2, 0] == 100 and y[0, 0, 0, 0] == 36
        (y,) = tessera.InferenceSession(_tessera_node_model("NhwcMaxPool", dict(kernel_shape=[3, 3]), [], x.shape),
                                        so).run(None, {"x": x})
        assert y.shape == (1, 3, 3, 4)
        (y,) = tessera.InferenceSession(_tessera_node_model("NhwcGlobalAveragePool", {}, [], x.shape),
                                        so).run(None, {"x": x})
        assert y.shape == (1, 4, 1, 1) and np.all(y == 1)
        # padding counted (a corner window: 4 of 9 taps inside) or not
        for include, corner in ((0, 1.0), (1, 4 / 9)):
            attrs = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=include)
            (y,) = tessera.InferenceSession(_tessera_node_model("NhwcAveragePool", attrs, [], x.shape),
                                            so).run(None, {"x": x})
            assert y.shape == (1, 5, 5, 4) and np.allclose(y[0, 0, 0], corner) and np.allclose(y[0, 2, 2], 1)


@pytest.mark.parametrize("attrs,indices", [
    (dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), False),
    (dict(kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0], dilations=[2, 1]), False),
    (dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), False),  # reference kernel
    (dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), True),  # indices: reference kernel
])
def test_nchw_max_pool(attrs, indices):
    outs = ["y", "i"] if indices else ["y"]
    n = helper.make_node("MaxPool", ["x"], outs, **attrs)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 13, 11])],
                          [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "i" else TensorProto.FLOAT, None)
                           for o in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    x = RNG.standard_normal((2, 5, 13, 11)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    o = ort.InferenceSession(b, providers=["CPUExecutionProvider"])
    # NaN propagates (Tessera's rule): windows holding the NaN give NaN, the rest what onnxruntime gives
    want = o.run(None, {"x": np.where(np.isnan(x), -np.inf, x).astype(np.float32)})
    hit = o.run(None, {"x": np.isnan(x).astype(np.float32)})[0] > 0
    want[0] = np.where(hit, np.float32(np.nan), want[0])
    for level in (0, 99):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=2, optimization_level=level)).run(None, {"x": x})
        np.testing.assert_array_equal(got[0], want[0])
        if indices:
            ok = ~hit  # indices of NaN windows may differ by tie-breaking rules
            np.testing.assert_array_equal(got[1][ok], want[1][ok])


def _ir_of(model, tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(model.SerializeToString())
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if not os.path.exists(exe):
        pytest.skip("no tessera command next to the module")
    out = subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True, check=True).stdout
    return out.split("FLOPs (estimate)")[1]


def _arch_model(name):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    try:
        import arch_models
    finally:
        sys.path.pop(0)
    return arch_models.BUILDERS[name](small=True)


def test_region_grows_through_silu_and_squeeze_excitation(tmp_path):
    """EfficientNet's blocks stay in NHWC from end to end: SiLU (Mul(x, Sigmoid(x))) is a conv epilogue, so the
    expansion and depthwise convs fuse; the squeeze-and-excitation's Sigmoid and per-channel Mul run on the
    NHWC twins (the only Transposes left reorder each SE's pooled [1, C, 1, 1] vector)."""
    ir = _ir_of(_arch_model("efficientnet_b0"), tmp_path)
    blocks = ir.count("tessera.NhwcGlobalAveragePool(") - 1  # the head's pool
    assert blocks == 5
    assert ir.count("tessera.FusedPwDwConv(") == blocks and ir.count('activation="Silu"') >= 3 * blocks
    assert ir.count("= Sigmoid(") == blocks and ir.count("= Mul(") == blocks  # the SE gates, on NHWC
    assert "float32[1,1,1," in ir.split("= Sigmoid(")[0].rsplit("\n", 1)[-1]
    assert ir.count("= Transpose(") == blocks


def test_transposes_to_channels_last_fold_into_the_layout(tmp_path):
    """ConvNeXt's Permute / LayerNorm / Linear / Permute back: the Transposes disappear (the NHWC twin is the
    permuted tensor), LayerNorm and the Linears read the convs' NHWC outputs in place, and the layer scale and
    residual Add run on the twins."""
    ir = _ir_of(_arch_model("convnext_tiny"), tmp_path)
    assert ir.count("= Transpose(") == 1 + 2  # the image into the region; the pooled head's LayerNorm2d
    assert ir.count("= LayerNormalization(") >= 8 and ir.count("tessera.FusedGemm(") >= 10


def test_densenet_blocks_stay_channels_last(tmp_path):
    """DenseNet's pre-activation layers: a BatchNormalization no conv feeds becomes a per-channel Mul + Add
    (fused with its Relu), Concat of the growing feature maps joins the twins along the channels-last axis,
    and the transitions' AveragePool runs on NHWC: no Transpose but the image's and the pooled head's."""
    ir = _ir_of(_arch_model("densenet121"), tmp_path)
    assert "= BatchNormalization(" not in ir and "= AveragePool(" not in ir
    assert ir.count("tessera.NhwcAveragePool(") == 3 and ir.count("= Concat(") >= 8
    assert all("axis=3" in line for line in ir.splitlines() if "= Concat(" in line)
    assert ir.count("= Transpose(") <= 1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[2, 2], strides=[2, 2]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 2], count_include_pad=1),
    dict(kernel_shape=[3, 2], strides=[1, 2], pads=[0, 1, 1, 0], dilations=[2, 1]),
])
def test_average_pool_and_batchnorm_in_the_region(threads, attrs):
    """Conv -> BN -> Relu -> AveragePool -> Concat with a second branch -> BN: the standalone BatchNorms as
    Mul + Add, the pool and the Concat in NHWC, against onnxruntime and the unoptimized graph."""
    c = 12
    inits = [_w("w0", c, 3, 3, 3), _pos("s", c), _w("b", c), _w("m", c), _pos("v", c), _w("w1", 8, c, 1, 1),
             _pos("s2", c + 8), _w("b2", c + 8), _w("m2", c + 8), _pos("v2", c + 8)]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("BatchNormalization", ["r0", "s", "b", "m", "v"], ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("AveragePool", ["r1"], ["p"], **attrs),
        helper.make_node("Conv", ["p", "w1"], ["c1"]),
        helper.make_node("Concat", ["p", "c1"], ["cat"], axis=-3),
        helper.make_node("BatchNormalization", ["cat", "s2", "b2", "m2", "v2"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 17, 15])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    _matches_at_both_levels(m, RNG.standard_normal((2, 3, 17, 15)).astype(np.float32), threads)


def _matches_at_both_levels(m, x, threads):
    """Model m (input "x") against onnxruntime, optimized and as imported."""
    b = m.SerializeToString()
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for level in (0, 99):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads, optimization_level=level)).run(
            None, {"x": x})[0]
        assert got.shape == want.shape
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-5, level


def test_grouped_convs_run_channels_last(tmp_path):
    """ResNeXt's grouped 3x3 convs (2 to 16 channels a group in the small variant) join the NHWC region: one
    Transpose, the image's, and every conv NHWC."""
    ir = _ir_of(_arch_model("resnext50"), tmp_path)
    assert ir.count("= Transpose(") == 1
    convs = [line for line in ir.splitlines() if "tessera.FusedConv(" in line]
    assert len([c for c in convs if "group=8" in c]) == 4
    assert all('layout="NHWC"' in c for c in convs)


def test_channel_shuffle_and_split_stay_channels_last(tmp_path):
    """ShuffleNetV2: the chunk (Split of channels) and the channel shuffle (Reshape / Transpose / Reshape)
    of region values run on the NHWC twins, where fuse_channel_shuffle makes each Concat, shuffle and Split
    one ChannelShuffle over the channels axis; the head's ReduceMean over the spatial axes runs on the twin
    too (axes 1, 2): no Transpose at all."""
    ir = _ir_of(_arch_model("shufflenet_v2"), tmp_path)
    shuffles = [line for line in ir.splitlines() if "= tessera.ChannelShuffle(" in line]
    assert len(shuffles) == 4 and all("axis=3, groups=2" in line for line in shuffles)
    assert ir.count("= Transpose(") == 0
    assert any("ReduceMean(" in line and "keepdims=0" in line for line in ir.splitlines())
    assert "= Split(" not in ir and "= Concat(" not in ir


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_split_and_concat_of_region_values_on_any_axis(axis):
    """Split and Concat of conv outputs along channels, rows or columns (the twins' axes 3, 1, 2), a split
    given by sizes, against onnxruntime at two threads."""
    inits = [_w("w0", 8, 3, 3, 3), numpy_helper.from_array(np.array([3, 5], np.int64), "sz"), _w("w1", 6, 8, 1, 1)]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Split", ["c0", "sz"], ["a", "b"], axis=axis),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Sigmoid", ["b"], ["sb"]),
        helper.make_node("Concat", ["sb", "ra"], ["cat"], axis=axis),
        helper.make_node("Conv", ["cat", "w1"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=2)).run(None, {"x": x})[0]
    assert got.shape == want.shape and np.abs(got - want).max() / np.abs(want).max() <= 1e-5


def bottleneck_block(batch):
    """A ResNet bottleneck's pointwise convs over a 13 x 11 map (143 pixels a batch item): 256 -> 1024 with bias
    and Relu, 1024 -> 256 plus the residual and Relu — both become Strassen FusedGemms over the NHWC input (their
    2^18 weights enough on full-width FMA cores too; the first a FusedGemm over B split for AMX where f32
    GEMMs take it) — and a 256 -> 256 one feeding a depthwise conv, which stays a FusedConv for fuse_pw_dw."""
    inits = [_w("w1", 256, 256, 3, 3), _w("w2", 1024, 256, 1, 1), _w("b2", 1024), _w("w3", 256, 1024, 1, 1),
             _w("b3", 256), _w("w4", 256, 256, 1, 1), _w("wd", 256, 1, 3, 3)]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
        helper.make_node("Add", ["c3", "r1"], ["a3"]),
        helper.make_node("Relu", ["a3"], ["y3"]),
        helper.make_node("Conv", ["y3", "w4"], ["c4"]),
        helper.make_node("Conv", ["c4", "wd"], ["y"], group=256, pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 256, 13, 11])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y3", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("batch", [1, "N"])
def test_pointwise_convs_take_strassen(batch, tmp_path):
    b = bottleneck_block(batch)
    ir = _optimized_ir(b, tmp_path)
    if ir is not None:
        # where f32 GEMMs take AMX the 256 -> 1024 conv's B is split for it instead (512+ output channels)
        split = 1 if "amx-bf16" in tessera.kernel_isa().split() else 0
        assert ir.count("tessera.FusedGemm(") == 2 and ir.count("strassen=1") == 2 - split, ir
        assert ir.count("split=1") == split, ir
        assert ir.count("tessera.FusedPwDwConv(") == 1, ir
    ref = ort.InferenceSession(b, providers=["CPUExecutionProvider"])
    for n in ([1] if batch == 1 else [1, 3]):
        x = RNG.standard_normal((n, 256, 13, 11)).astype(np.float32)
        want = ref.run(None, {"x": x})
        for threads in (1, 2):
            got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, {"x": x})
            for g, w in zip(got, want):
                assert g.shape == w.shape and np.abs(g - w).max() / np.abs(w).max() <= 1e-5


@pytest.mark.parametrize("attrs,wshape,group", [
    (dict(pads=[1, 1, 1, 1]), (16, 8, 3, 3), 1),
    (dict(strides=[2, 2], pads=[1, 0, 2, 1], dilations=[1, 2]), (12, 8, 3, 3), 1),
    (dict(pads=[1, 1, 1, 1]), (8, 1, 3, 3), 8),                    # depthwise
    (dict(auto_pad="VALID"), (6, 4, 5, 3), 2),                     # grouped, VALID
])
def test_conv_with_runtime_weights(attrs, wshape, group):
    """A Conv whose weights (and bias) are graph inputs — dynamic filters, hypernetworks — runs on the NCHW
    im2col kernel, not the reference (137x onnxruntime's time there); two images, against onnxruntime. A
    weight that does not fit the input is a clear error, not a crash."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], group=group, **attrs)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 13, 11]),
                                       helper.make_tensor_value_info("w", TensorProto.FLOAT, None),
                                       helper.make_tensor_value_info("b", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    b = m.SerializeToString()
    feeds = {"x": RNG.standard_normal((2, 8, 13, 11)).astype(np.float32),
             "w": RNG.standard_normal(wshape).astype(np.float32),
             "b": RNG.standard_normal(wshape[0]).astype(np.float32)}
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        assert got.shape == want.shape
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-5
    bad = dict(feeds, w=RNG.standard_normal((wshape[0], wshape[1] + 1) + wshape[2:]).astype(np.float32))
    with pytest.raises(Exception, match="weights|channels|group|shape"):
        tessera.InferenceSession(b).run(None, bad)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode,ctm,nearest_mode,scales,sizes", [
    ("linear", "pytorch_half_pixel", None, [1, 1, 2, 2], None),        # HRNet's / FPNs' 2x bilinear
    ("linear", "half_pixel", None, [1, 1, 1.5, 0.75], None),            # up one axis, down the other
    ("linear", "align_corners", None, None, [2, 6, 16, 5]),             # sizes (with scales whose product is
                                                                        # fractional, onnxruntime's align_corners
                                                                        # departs from the spec's lengths)
    ("nearest", "asymmetric", "floor", [1, 1, 2, 2], None),             # U-Net's / YOLO's nearest 2x
    ("nearest", "half_pixel", "round_prefer_ceil", [1, 1, 0.5, 3], None),
])
def test_resize_between_convs_runs_channels_last(threads, mode, ctm, nearest_mode, scales, sizes, tmp_path):
    """A Resize of H and W between two convs runs on the NHWC twins (its scales / sizes permuted) instead of
    going through two Transposes, against onnxruntime and the unoptimized graph."""
    c = 6
    inits = [_w("w0", c, 3, 3, 3), _w("w1", 4, c, 3, 3),
             numpy_helper.from_array(np.array(scales or [], np.float32), "scales")]
    ins = ["r0", "", "scales"]
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        ins = ["r0", "", "", "sizes"]
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    if nearest_mode:
        attrs["nearest_mode"] = nearest_mode
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Resize", ins, ["up"], **attrs),
        helper.make_node("Conv", ["up", "w1"], ["y"], pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 11, 9])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    _matches_at_both_levels(m, RNG.standard_normal((2, 3, 11, 9)).astype(np.float32), threads)
    ir = _ir_of(m, tmp_path)
    assert ir.count("= Transpose(") == 2  # the image's into the region and the result's out of it
    assert ir.count("= Resize(") == 1
