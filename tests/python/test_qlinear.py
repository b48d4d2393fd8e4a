"""The 8-bit integer GEMM ops on the int8 kernels (kernels/x86/qgemm.h) against numpy in int64 and float64,
written as the ONNX definitions read: MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv over every
u8 / s8 pairing, zero points per tensor and per column / channel, K below, at and above the 4-byte groups,
rows and columns around the 6 x 64 tile, pads, strides, dilations and groups, at one and two threads, with
the portable kernel (TESSERA_ISA=portable in a child process) as well as the dispatched one; and the
requantized outputs against onnxruntime's within one step."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(23)
NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def _model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def _q(t, shape):
    info = np.iinfo(NP[t])
    return RNG.integers(info.min, info.max + 1, shape).astype(NP[t])


def _requant(acc, f, yz, yt):
    """The int32 sum to f32, times the f32 scale, clamped to the range less the zero point, rounded half to
    even, plus the zero point: what onnxruntime (MLAS) and the reference kernels compute."""
    info = np.iinfo(NP[yt])
    v = acc.astype(np.int32).astype(np.float32) * np.asarray(f, np.float32)
    v = np.clip(v, np.float32(info.min - yz), np.float32(info.max - yz))
    return (np.rint(v).astype(np.int32) + int(yz)).astype(NP[yt])


def _run(model, feeds, threads):
    return tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]


def _matmul_case(at, bt, m, k, n, per_col, qlinear):
    a, b = _q(at, (m, k)), _q(bt, (k, n))
    az = _q(at, ())
    bz = _q(bt, (n,)) if per_col else _q(bt, ())
    acc = (a.astype(np.int64) - int(az)) @ (b.astype(np.int64) - bz.astype(np.int64))
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(az, "az"), numpy_helper.from_array(bz, "bz")]
    if not qlinear:
        node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
        model = _model([node], [helper.make_tensor_value_info("a", at, [m, k])],
                       [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
        return model, {"a": a}, acc.astype(np.int32)
    yt = at
    sa, sb, sy = np.float32(0.02), np.float32(0.013), np.float32(0.37 * np.sqrt(k))
    yz = _q(yt, ())
    inits += [numpy_helper.from_array(np.array(v, np.float32), nm) for nm, v in (("as", sa), ("bs", sb), ("ys", sy))]
    inits.append(numpy_helper.from_array(yz, "yz"))
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = _model([node], [helper.make_tensor_value_info("a", at, [m, k])],
                   [helper.make_tensor_value_info("y", yt, None)], inits)
    f = np.float32(np.float32(sa * sb) / sy)
    return model, {"a": a}, _requant(acc, f, int(yz), yt)


PAIRS = [(TensorProto.UINT8, TensorProto.INT8), (TensorProto.UINT8, TensorProto.UINT8),
         (TensorProto.INT8, TensorProto.INT8), (TensorProto.INT8, TensorProto.UINT8)]


@pytest.mark.parametrize("at,bt", PAIRS)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 3, 17), (6, 4, 16), (7, 5, 65), (13, 64, 64), (197, 96, 130),
                                   (2, 768, 200), (64, 301, 1)])
@pytest.mark.parametrize("qlinear", [False, True])
def test_qmatmul_matches_numpy(at, bt, m, k, n, qlinear):
    model, feeds, want = _matmul_case(at, bt, m, k, n, per_col=not qlinear and n % 2 == 1, qlinear=qlinear)
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, feeds, threads), want)


def _with_pool_after(model):
    """The model with a 1 x 1 MaxPool (the identity on bytes) after its output: a reader that joins an int8
    region, so that layout_nhwc runs a single conv in NHWC (a lone one stays NCHW)."""
    import onnx
    m = onnx.load_from_string(model)
    out = m.graph.output[0].name
    for node in m.graph.node:
        node.output[:] = [o + "_conv" if o == out else o for o in node.output]
    m.graph.node.append(helper.make_node("MaxPool", [out + "_conv"], [out], kernel_shape=[1, 1]))
    return m.SerializeToString()


def _conv_case(xt, wt, n, c, h, w, oc, ks, stride, pad, dil, group, per_oc, qlinear, one_d=False, sym_w=False):
    kh, ph = (1, 0) if one_d else (ks, pad)
    x = _q(xt, (n, c, h, w))
    wts = _q(wt, (oc, c // group, kh, ks))
    xz = _q(xt, ())
    wz = _q(wt, (oc,)) if per_oc else _q(wt, ())
    if sym_w:  # what the quantizers write, and what pack_qconv packs: 0 for s8, 128 for u8
        wz[...] = 128 if wt == TensorProto.UINT8 else 0
    xd = np.pad(x.astype(np.int64) - int(xz), ((0, 0), (0, 0), (ph, ph), (pad, pad)))
    wd = wts.astype(np.int64) - (wz.reshape(-1, 1, 1, 1) if per_oc else int(wz))
    oh = (h + 2 * ph - dil * (kh - 1) - 1) // stride + 1 if not one_d else 1
    ow = (w + 2 * pad - dil * (ks - 1) - 1) // stride + 1
    acc = np.zeros((n, oc, oh, ow), np.int64)
    cg, og = c // group, oc // group
    for g in range(group):
        for i in range(kh):
            for j in range(ks):
                patch = xd[:, g * cg:(g + 1) * cg, i * dil:i * dil + stride * (oh - 1) + 1:stride,
                           j * dil:j * dil + stride * (ow - 1) + 1:stride]
                acc[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wd[g * og:(g + 1) * og, :, i, j])
    attrs = dict(kernel_shape=[ks, ks], strides=[stride, stride], pads=[pad] * 4, dilations=[dil, dil], group=group)
    xshape, yshape = [n, c, h, w], None
    if one_d:  # the same conv over [N, C, W] with H = 1
        attrs = dict(kernel_shape=[ks], strides=[stride], pads=[pad] * 2, dilations=[dil], group=group)
        x, wts, xshape = x[:, :, 0, :], wts[:, :, 0, :], [n, c, w]
    inits = [numpy_helper.from_array(wts, "w"), numpy_helper.from_array(xz, "xz"), numpy_helper.from_array(wz, "wz")]
    if not qlinear:
        node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
        model = _model([node], [helper.make_tensor_value_info("x", xt, xshape)],
                       [helper.make_tensor_value_info("y", TensorProto.INT32, yshape)], inits)
        want = acc.astype(np.int32)
        return model, {"x": x}, want[:, :, 0, :] if one_d else want
    yt = xt
    sx, sy = np.float32(0.05), np.float32(0.21 * np.sqrt(c // group * ks * ks))
    sw = (RNG.uniform(0.005, 0.02, oc) if per_oc else RNG.uniform(0.005, 0.02, ())).astype(np.float32)
    bias = RNG.integers(-5000, 5000, oc).astype(np.int32)
    yz = _q(yt, ())
    inits += [numpy_helper.from_array(np.array(sx), "xs"), numpy_helper.from_array(sw, "ws"),
              numpy_helper.from_array(np.array(sy), "ys"), numpy_helper.from_array(yz, "yz"),
              numpy_helper.from_array(bias, "bias")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y"], **attrs)
    model = _model([node], [helper.make_tensor_value_info("x", xt, xshape)],
                   [helper.make_tensor_value_info("y", yt, yshape)], inits)
    f = (np.float32(sx) * np.atleast_1d(sw) / np.float32(sy)).astype(np.float32)
    acc = acc + bias.reshape(1, -1, 1, 1)
    want = _requant(acc, f.reshape(1, -1, 1, 1) if per_oc else f[0], int(yz), yt)
    return model, {"x": x}, want[:, :, 0, :] if one_d else want


CONVS = [  # n, c, h, w, oc, ks, stride, pad, dil, group
    (1, 3, 17, 19, 8, 3, 1, 1, 1, 1),
    (2, 16, 9, 9, 13, 1, 1, 0, 1, 1),
    (1, 8, 12, 12, 16, 3, 2, 1, 1, 1),
    (1, 12, 10, 11, 12, 3, 1, 2, 2, 3),
    (1, 5, 15, 15, 7, 7, 2, 3, 1, 1),
    (1, 64, 14, 14, 70, 3, 1, 1, 1, 1),
    (1, 8, 8, 8, 8, 3, 1, 1, 1, 8),
]


@pytest.mark.parametrize("xt,wt", PAIRS)
@pytest.mark.parametrize("shape", CONVS)
@pytest.mark.parametrize("qlinear", [False, True])
def test_qconv_matches_numpy(xt, wt, shape, qlinear):
    n, c, h, w, oc, ks, stride, pad, dil, group = shape
    model, feeds, want = _conv_case(xt, wt, n, c, h, w, oc, ks, stride, pad, dil, group,
                                    per_oc=oc % 2 == 0, qlinear=qlinear)
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, feeds, threads), want)


@pytest.mark.parametrize("xt,wt", PAIRS)
@pytest.mark.parametrize("shape", [c for c in CONVS if c[9] == 1] + [(2, 24, 16, 16, 130, 1, 2, 0, 1, 1),
                                                                    (1, 6, 7, 9, 20, 3, 1, 1, 1, 1)])
@pytest.mark.parametrize("per_oc", [False, True])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_qconv_packed_matches_numpy(xt, wt, shape, per_oc, layout, monkeypatch):
    """tessera.QLinearConvPacked (weights whose zero point is 0 once flipped to s8, a pool after it) in both
    layouts: NCHW,
    pack_qconv's (with layout_nhwc off), the transposed GEMM over the padded image with its stores transposed;
    NHWC, layout_nhwc's, every tap read in place (a padded one from a row of zero points; the image copied
    where its channels are not a multiple of 4 or it is s8). Output channels past a 64-wide panel."""
    if layout == "NCHW":
        if shape[1] <= 4:
            pytest.skip("pack_qconv leaves convs over at most 4 channels on the im2col kernel")
        monkeypatch.setenv("TESSERA_DISABLE_PASSES", "layout_nhwc")
    model, feeds, want = _conv_case(xt, wt, *shape, per_oc=per_oc, qlinear=True, sym_w=True)
    model = _with_pool_after(model)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.QLinearConvPacked(" in text and (layout == "NHWC") == ('layout="NHWC"' in text), text
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, feeds, threads), want)
    ref = tessera.InferenceSession(model, tessera.SessionOptions(threads=1, optimization_level=0))
    np.testing.assert_array_equal(ref.run(None, feeds)[0], want)


DEPTHWISE = [  # n, c, h, w, ks, stride, pad, dil
    (1, 16, 9, 9, 3, 1, 1, 1), (2, 17, 8, 11, 3, 2, 1, 1), (1, 96, 14, 14, 3, 2, 1, 1),
    (1, 40, 7, 7, 5, 1, 2, 1), (1, 33, 12, 10, 3, 1, 2, 2), (1, 3, 5, 6, 1, 1, 0, 1), (1, 64, 3, 3, 7, 1, 3, 1),
]


@pytest.mark.parametrize("xt,wt", PAIRS)
@pytest.mark.parametrize("shape", DEPTHWISE)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_qconv_depthwise_matches_numpy(xt, wt, shape, layout, monkeypatch):
    """A depthwise QLinearConv (zero points any, per channel or not): NHWC on the channel-vectorized kernel
    over layout_nhwc's f32 weights (its padding a row of zero points), NCHW (layout_nhwc off) on the plane
    kernel."""
    n, c, h, w, ks, stride, pad, dil = shape
    if layout == "NCHW":
        monkeypatch.setenv("TESSERA_DISABLE_PASSES", "layout_nhwc")
    for per_oc in (False, True):
        model, feeds, want = _conv_case(xt, wt, n, c, h, w, c, ks, stride, pad, dil, c, per_oc=per_oc,
                                        qlinear=True)
        model = _with_pool_after(model)
        text = tessera.InferenceSession(model).graph_text()
        assert (layout == "NHWC") == ('layout="NHWC"' in text), text
        for threads in (1, 2):
            np.testing.assert_array_equal(_run(model, feeds, threads), want)
    if layout == "NHWC":
        ref = tessera.InferenceSession(model, tessera.SessionOptions(threads=1, optimization_level=0))
        np.testing.assert_array_equal(ref.run(None, feeds)[0], want)


@pytest.mark.parametrize("qlinear", [False, True])
def test_qconv_1d_matches_numpy(qlinear):
    model, feeds, want = _conv_case(TensorProto.UINT8, TensorProto.INT8, 2, 6, 1, 40, 10, 5, 2, 2, 3, 1,
                                    per_oc=True, qlinear=qlinear, one_d=True)
    np.testing.assert_array_equal(_run(model, feeds, 2), want)


def _qdq_add_model(shape, ta=TensorProto.UINT8, tb=TensorProto.UINT8, tc=TensorProto.UINT8):
    zero = {TensorProto.UINT8: (np.uint8, 128), TensorProto.INT8: (np.int8, -3)}
    inits = []
    for nm, t, s in (("a", ta, 0.03), ("b", tb, 0.05), ("c", tc, 0.07)):
        dt, z = zero[t]
        inits += [numpy_helper.from_array(np.array(s, np.float32), "s" + nm), numpy_helper.from_array(np.array(z, dt), "z" + nm)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["aq"]),
             helper.make_node("QuantizeLinear", ["y", "sb", "zb"], ["bq"]),
             helper.make_node("DequantizeLinear", ["aq", "sa", "za"], ["ad"]),
             helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["bd"]),
             helper.make_node("Add", ["ad", "bd"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sc", "zc"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "sc", "zc"], ["out"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)], inits)
    feeds = {"x": (RNG.standard_normal(shape) * 3).astype(np.float32),
             "y": (RNG.standard_normal(shape) * 4).astype(np.float32)}
    return model, feeds


@pytest.mark.parametrize("isa", ["portable", "avx2"])
def test_lower_isa_kernels_match_numpy(tmp_path, isa):
    """The same checks on the kernels a CPU without VNNI or AVX-512 runs (the portable tile, the f32
    depthwise path, the AVX2 or portable QLinearAdd loop), in a child process that sets TESSERA_ISA."""
    cases = [_matmul_case(TensorProto.INT8, TensorProto.UINT8, 7, 37, 70, True, False),
             _matmul_case(TensorProto.UINT8, TensorProto.INT8, 9, 64, 33, False, True),
             _conv_case(TensorProto.UINT8, TensorProto.UINT8, *CONVS[3], per_oc=True, qlinear=True),
             _conv_case(TensorProto.INT8, TensorProto.INT8, *CONVS[2], per_oc=False, qlinear=False),
             _conv_case(TensorProto.INT8, TensorProto.UINT8, *CONVS[5], per_oc=True, qlinear=True, sym_w=True),
             _conv_case(TensorProto.UINT8, TensorProto.INT8, *CONVS[6], per_oc=True, qlinear=True)]
    add_model, add_feeds = _qdq_add_model([3, 1001], TensorProto.INT8, TensorProto.UINT8, TensorProto.UINT8)
    unfused = tessera.InferenceSession(add_model, tessera.SessionOptions(optimization_level=0)).run(None, add_feeds)[0]
    cases.append((add_model, add_feeds, unfused))
    for i, (model, feeds, want) in enumerate(cases):
        (tmp_path / f"m{i}.onnx").write_bytes(model)
        np.savez(tmp_path / f"x{i}.npz", **feeds)
        np.save(tmp_path / f"y{i}.npy", want)
    script = (
        "import sys, numpy as np, tessera\n"
        "d = sys.argv[1]\n"
        f"for i in range({len(cases)}):\n"
        "    s = tessera.InferenceSession(f'{d}/m{i}.onnx', tessera.SessionOptions(threads=2))\n"
        "    got = s.run(None, dict(np.load(f'{d}/x{i}.npz')))[0]\n"
        "    np.testing.assert_array_equal(got, np.load(f'{d}/y{i}.npy'), err_msg=f'case {i}')\n")
    env = dict(os.environ, TESSERA_ISA=isa)
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("kind", ["matmul", "conv"])
def test_requantized_bytes_are_onnxruntimes(kind):
    """The requantization is onnxruntime's (f32 product, clamp, round half to even): the same bytes."""
    if kind == "matmul":
        model, feeds, _ = _matmul_case(TensorProto.UINT8, TensorProto.INT8, 128, 768, 96, False, True)
    else:
        model, feeds, _ = _conv_case(TensorProto.UINT8, TensorProto.INT8, 1, 32, 28, 28, 64, 3, 1, 1, 1, 1,
                                     per_oc=True, qlinear=True)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(_run(model, feeds, 2), want)


def _qdq_conv_matmul_model(per_channel):
    """x -> Q -> DQ -> Conv(DQ(w), DQ(bias)) -> Q -> DQ -> Flatten-free MatMul(DQ(wm)) via Q / DQ: what
    onnxruntime's quantize_static writes in its default QDQ format (s8 weights, symmetric; u8 activations)."""
    c, oc, h = 16, 24, 10
    w = RNG.integers(-127, 128, (oc, c, 3, 3)).astype(np.int8)
    sw = (RNG.uniform(0.002, 0.01, oc) if per_channel else RNG.uniform(0.002, 0.01, ())).astype(np.float32)
    sx, sy = np.float32(0.02), np.float32(0.05)
    bias_scale = (sx * sw).astype(np.float32)
    bias = RNG.integers(-3000, 3000, oc).astype(np.int32)
    wm = RNG.integers(-127, 128, (h, 12)).astype(np.int8)
    inits = [numpy_helper.from_array(np.array(sx), "sx"), numpy_helper.from_array(np.array(128, np.uint8), "zx"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(sw, "sw"),
             numpy_helper.from_array(np.zeros(sw.shape, np.int8), "zw"),
             numpy_helper.from_array(bias, "b"), numpy_helper.from_array(bias_scale, "sb"),
             numpy_helper.from_array(np.array(sy), "sy"), numpy_helper.from_array(np.array(3, np.uint8), "zy"),
             numpy_helper.from_array(wm, "wm"), numpy_helper.from_array(np.array(0.004, np.float32), "swm"),
             numpy_helper.from_array(np.array(0, np.int8), "zwm"),
             numpy_helper.from_array(np.array(0.2, np.float32), "sz"), numpy_helper.from_array(np.array(128, np.uint8), "zz")]
    axis = {"axis": 0} if per_channel else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wd"], **axis),
             helper.make_node("DequantizeLinear", ["b", "sb"], ["bd"], **axis),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["yc"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["yc", "sy", "zy"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["yd"]),
             helper.make_node("DequantizeLinear", ["wm", "swm", "zwm"], ["wmd"]),
             helper.make_node("MatMul", ["yd", "wmd"], ["ym"]),
             helper.make_node("QuantizeLinear", ["ym", "sz", "zz"], ["zq"]),
             helper.make_node("DequantizeLinear", ["zq", "sz", "zz"], ["z"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    return model, {"x": RNG.standard_normal((1, c, h, h)).astype(np.float32)}


@pytest.mark.parametrize("per_channel", [False, True])
def test_qdq_conv_and_matmul_fuse_and_match_onnxruntime(per_channel):
    """fuse_qdq turns the QDQ Conv and MatMul into QLinearConv and QLinearMatMul (both then packed), as
    onnxruntime's QDQ selectors do; both then sum in integers and requantize alike: the same output."""
    model, feeds = _qdq_conv_matmul_model(per_channel)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.QLinearConvPacked(" in text and "tessera.QLinearMatMulPacked(" in text, text
    assert " Conv(" not in text and " MatMul(" not in text, text
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, feeds, threads), want)


CASTS = [(np.int32, np.float32), (np.float32, np.int32), (np.int64, np.float32), (np.uint8, np.float32),
         (np.float32, np.uint8), (np.float64, np.int64), (np.int32, np.int8), (np.bool_, np.float32),
         (np.float32, np.bool_), (np.int64, np.int32), (np.uint32, np.float64), (np.int8, np.int64)]
TP = {np.dtype(k): v for k, v in [(np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
                                  (np.int8, TensorProto.INT8), (np.uint8, TensorProto.UINT8),
                                  (np.int32, TensorProto.INT32), (np.uint32, TensorProto.UINT32),
                                  (np.int64, TensorProto.INT64), (np.bool_, TensorProto.BOOL)]}


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast_matches_onnxruntime(src, dst):
    """The tuned Cast (x86_cast_bindings.cpp) over the plain numeric types: wrapping, truncation toward
    zero, nonzero as true, large integers to floats in one rounding; n past the threads' grain."""
    n = 70001
    if np.dtype(src).kind == "f":
        x = (RNG.standard_normal(n) * 100).astype(src)
        x[:6] = [0.5, -0.5, 2.99, -2.99, 0.0, -0.0]
    elif src is np.bool_:
        x = RNG.integers(0, 2, n).astype(np.bool_)
    else:
        info = np.iinfo(src)
        x = RNG.integers(info.min, info.max, n, dtype=np.int64 if src is not np.uint32 else np.uint64).astype(src)
    if np.dtype(dst).kind in "iu" and np.dtype(src).kind == "f":  # in range: out of range differs by design
        info = np.iinfo(dst)
        x = np.clip(x, info.min, info.max).astype(src)
    node = helper.make_node("Cast", ["x"], ["y"], to=TP[np.dtype(dst)])
    model = _model([node], [helper.make_tensor_value_info("x", TP[np.dtype(src)], [n])],
                   [helper.make_tensor_value_info("y", TP[np.dtype(dst)], [n])], [])
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, {"x": x}, threads), want)


@pytest.mark.parametrize("n", [1, 17, 70001])
@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros"])
def test_dynamic_quantize_linear_matches_onnxruntime(n, kind):
    """The tuned DynamicQuantizeLinear: the range (with 0), scale, zero point and bytes as onnxruntime's; for
    an all-zero input the scale is 1 / 255 as in ONNX's reference implementation (onnxruntime says 1)."""
    x = (RNG.standard_normal(n) * 3).astype(np.float32)
    x = {"mixed": x, "positive": np.abs(x) + 0.1, "negative": -np.abs(x) - 0.1, "zeros": 0 * x}[kind]
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    model = _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, [n]),
                    helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                    helper.make_tensor_value_info("z", TensorProto.UINT8, [])], [], opset=13)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    if kind == "zeros":
        want[1] = np.array(np.float32(1) / np.float32(255))
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("wtype", [TensorProto.INT8, TensorProto.UINT8])
@pytest.mark.parametrize("m", [1, 16, 97])
def test_dynamic_quantized_linear_layer_packs_and_matches(wtype, m):
    """A linear layer as onnxruntime's quantize_dynamic writes it: DynamicQuantizeLinear, MatMulInteger by
    constant weights (symmetric: zero point 0 for s8, 128 for u8), Cast, the scales' product. pack_qmatmul
    packs the weights once; the result is onnxruntime's exactly (integer sums, then the same float ops)."""
    k, n = 300, 200
    w = (RNG.integers(-127, 128, (k, n)) + (128 if wtype == TensorProto.UINT8 else 0)).astype(NP[wtype])
    wz = np.array(128 if wtype == TensorProto.UINT8 else 0, NP[wtype])
    ws = np.array(0.01, np.float32)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(wz, "wz"), numpy_helper.from_array(ws, "ws")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], inits)
    assert "tessera.MatMulIntegerPacked(" in tessera.InferenceSession(model).graph_text()
    x = RNG.standard_normal((m, k)).astype(np.float32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        np.testing.assert_allclose(_run(model, {"x": x}, threads), want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("types", [(TensorProto.UINT8, TensorProto.UINT8, TensorProto.UINT8),
                                   (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT8),
                                   (TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT8)])
@pytest.mark.parametrize("shape", [[1, 64, 56, 56], [3, 5], [70001]])
def test_qdq_add_fuses_and_matches_unfused(types, shape):
    """Q(Add(DQ(a), DQ(b))) becomes tessera.QLinearAdd; its bytes are those of the three nodes run apart
    (optimization level 0), and within one step of onnxruntime's (which fuses it as well)."""
    model, feeds = _qdq_add_model(shape, *types)
    assert "tessera.QLinearAdd(" in tessera.InferenceSession(model).graph_text()
    unfused = tessera.InferenceSession(model, tessera.SessionOptions(optimization_level=0)).run(None, feeds)[0]
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, feeds, threads), unfused)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert np.max(np.abs(unfused - want)) <= 0.07 * 1.001


def _small_cnn():
    """conv-relu, a residual block, max pool, global average pool, linear: float weights."""
    c = 16
    def w(*s):
        return numpy_helper.from_array((RNG.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32))
    inits = []
    for nm, shape in (("w0", (c, 3, 3, 3)), ("w1", (c, c, 3, 3)), ("w2", (c, c, 3, 3)), ("wd", (c, 1, 3, 3)),
                      ("fc", (10, c))):
        t = w(*shape)
        t.name = nm
        inits.append(t)
    for nm, n in (("b0", c), ("b1", c), ("b2", c), ("bd", c), ("fcb", 10)):
        inits.append(numpy_helper.from_array((RNG.standard_normal(n) * 0.1).astype(np.float32), nm))
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1] * 4, strides=[2, 2]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
             helper.make_node("Conv", ["p0", "w1", "b1"], ["c1"], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd", "bd"], ["cd"], pads=[1] * 4, group=c),
             helper.make_node("Relu", ["cd"], ["rd"]),
             helper.make_node("Conv", ["rd", "w2", "b2"], ["c2"], pads=[1] * 4),
             helper.make_node("Add", ["c2", "p0"], ["s"]),
             helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1)]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 40, 40])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)


def _ort_spread(path, feeds):
    """onnxruntime against itself (all graph optimizations vs none): how far quantization alone moves it."""
    outs = []
    for level in (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        outs.append(ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0])
    return outs[0], float(np.max(np.abs(outs[0] - outs[1])))


@pytest.mark.parametrize("fmt", ["qdq", "dynamic"])
def test_quantized_with_onnxruntime_tool_matches(tmp_path, fmt):
    """A model quantized by onnxruntime's own tool, as users do: static QDQ (u8 activations, per-channel s8
    weights) of a small CNN with a depthwise conv, a residual Add and a max pool; dynamic int8 of the same.
    Every conv, add and matmul runs in integers (the graph keeps no float Conv); the output is onnxruntime's
    within 1e-4 of its range (here: exactly), or within twice what quantization alone moves onnxruntime (its
    optimized against its unoptimized run) where a rounding flips."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    src.write_bytes(_small_cnn())
    feeds = {"x": RNG.standard_normal((1, 3, 40, 40)).astype(np.float32)}
    if fmt == "qdq":
        class Reader(CalibrationDataReader):
            def __init__(self):
                self.d = [{"x": RNG.standard_normal((1, 3, 40, 40)).astype(np.float32)} for _ in range(3)]

            def get_next(self):
                return self.d.pop() if self.d else None
        quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    else:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
    text = tessera.InferenceSession(str(dst)).graph_text()
    if fmt == "qdq":
        assert " Conv(" not in text and "tessera.QLinearAdd(" in text and "QLinearConvPacked(" in text, text
        # one int8 region, channels-last from the stem (which reads the NCHW image) to the pool: no Transpose
        assert "Transpose(" not in text and 'input_layout="NCHW"' in text and "NhwcMaxPool(" in text, text
        assert "NhwcGlobalAveragePool(" in text, text
    want, spread = _ort_spread(str(dst), feeds)
    for threads in (1, 2):
        got = tessera.InferenceSession(str(dst), tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        assert np.max(np.abs(got - want)) <= max(2 * spread, 1e-4 * np.max(np.abs(want))), (got, want, spread)
    if fmt == "qdq":  # the NHWC region computes the NCHW graph's bytes
        os.environ["TESSERA_DISABLE_PASSES"] = "layout_nhwc"
        try:
            nchw = tessera.InferenceSession(str(dst)).run(None, feeds)[0]
        finally:
            del os.environ["TESSERA_DISABLE_PASSES"]
        np.testing.assert_array_equal(got, nchw)


@pytest.mark.parametrize("dtype", [TensorProto.UINT8, TensorProto.INT8])
@pytest.mark.parametrize("geom", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                  dict(kernel_shape=[2, 3], strides=[1, 3], pads=[0, 1, 1, 2], dilations=[2, 1]),
                                  dict(kernel_shape=[3], strides=[2], pads=[1, 1]),
                                  dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2])])
def test_maxpool_8bit_matches_onnxruntime(dtype, geom):
    """MaxPool over u8 / s8 (a QDQ model's pool after fuse_qdq) on the separable kernel, against onnxruntime."""
    rank = len(geom["kernel_shape"])
    shape = [2, 5] + [17, 19, 6][:rank]
    x = _q(dtype, shape)
    model = _model([helper.make_node("MaxPool", ["x"], ["y"], **geom)], [helper.make_tensor_value_info("x", dtype, shape)],
                   [helper.make_tensor_value_info("y", dtype, None)], [], opset=13)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, {"x": x}, threads), want)


@pytest.mark.parametrize("dtype", [TensorProto.UINT8, TensorProto.INT8])
def test_qdq_maxpool_runs_on_bytes(dtype):
    """Q(MaxPool(DQ(x))) with one scale and zero point becomes MaxPool(x) on the bytes, as onnxruntime drops
    the pair: the same output as the nodes run apart."""
    dt, z = (np.uint8, 128) if dtype == TensorProto.UINT8 else (np.int8, -3)
    inits = [numpy_helper.from_array(np.array(0.04, np.float32), "s"), numpy_helper.from_array(np.array(z, dt), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("MaxPool", ["d"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"]),
             helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 21, 20])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    text = tessera.InferenceSession(model).graph_text()
    assert "8[1,8,11,10] = MaxPool(" in text, text
    feeds = {"x": (RNG.standard_normal((1, 8, 21, 20)) * 3).astype(np.float32)}
    unfused = tessera.InferenceSession(model, tessera.SessionOptions(optimization_level=0)).run(None, feeds)[0]
    np.testing.assert_array_equal(_run(model, feeds, 2), unfused)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(unfused, want)


@pytest.mark.parametrize("dtype", [TensorProto.UINT8, TensorProto.INT8])
@pytest.mark.parametrize("geom", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                  dict(kernel_shape=[2, 3], strides=[1, 3], pads=[0, 1, 1, 2], dilations=[2, 1])])
def test_int8_region_maxpool_and_add(dtype, geom):
    """An int8 region's ops between convs: MaxPool on NHWC bytes (tessera.NhwcMaxPool), a quantized residual
    Add of two region values, the per-tensor DequantizeLinear where it leaves: the bytes of the NCHW graph."""
    dt = NP[dtype]
    c = 20
    x = _q(dtype, (1, c, 13, 15))
    w1, w2 = _q(TensorProto.INT8, (c, c, 3, 3)), _q(TensorProto.INT8, (c, c, 1, 1))
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(_q(dtype, ()), "z"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.9, np.float32), "ys"), numpy_helper.from_array(_q(dtype, ()), "yz"),
             numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    q = ["s", "z"]
    nodes = [helper.make_node("QLinearConv", ["x", *q, "w1", "ws", "wz", "ys", "yz"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c1"], ["p"], **geom),
             helper.make_node("QLinearConv", ["p", "ys", "yz", "w2", "ws", "wz", *q], ["c2"]),
             helper.make_node("DequantizeLinear", ["p", "ys", "yz"], ["pd"]),
             helper.make_node("DequantizeLinear", ["c2", *q], ["cd"]),
             helper.make_node("Add", ["pd", "cd"], ["a"]),
             helper.make_node("QuantizeLinear", ["a", *q], ["aq"]),
             helper.make_node("QLinearConv", ["aq", *q, "w2", "ws", "wz", "ys", "yz"], ["c3"]),
             helper.make_node("DequantizeLinear", ["c3", "ys", "yz"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", dtype, [1, c, 13, 15])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    text = tessera.InferenceSession(model).graph_text()
    assert "NhwcMaxPool(" in text and "tessera.QLinearAdd(" in text and text.count("Transpose(") == 2, text
    os.environ["TESSERA_DISABLE_PASSES"] = "layout_nhwc"
    try:
        nchw = tessera.InferenceSession(model).run(None, {"x": x})[0]
    finally:
        del os.environ["TESSERA_DISABLE_PASSES"]
    assert len(np.unique(nchw)) > 10
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, {"x": x}, threads), nchw)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(nchw, want, atol=0.9 + 1e-6)  # within a step of ys


def _qdq_unary_model(op_nodes, shape, dtype=TensorProto.UINT8):
    """x (float) -> Q -> DQ -> op_nodes (reading "d", writing "f") -> Q -> DQ -> y, per-tensor scales."""
    dt = NP[dtype]
    zi, zo = (128, 100) if dtype == TensorProto.UINT8 else (3, -7)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "si"), numpy_helper.from_array(np.array(zi, dt), "zi"),
             numpy_helper.from_array(np.array(0.021, np.float32), "so"), numpy_helper.from_array(np.array(zo, dt), "zo"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"), numpy_helper.from_array(np.array(3.0, np.float32), "three")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "si", "zi"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "si", "zi"], ["d"]), *op_nodes,
             helper.make_node("QuantizeLinear", ["f", "so", "zo"], ["fq"]),
             helper.make_node("DequantizeLinear", ["fq", "so", "zo"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits, opset=17)


UNARY_CHAINS = {
    # SiLU as QDQ models write it: the sigmoid quantized on its own, then x * sigmoid(x)
    "silu": [helper.make_node("Sigmoid", ["d"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "so", "zo"], ["sq"]),
             helper.make_node("DequantizeLinear", ["sq", "so", "zo"], ["sd"]),
             helper.make_node("Mul", ["d", "sd"], ["f"])],
    "hardswish": [helper.make_node("HardSwish", ["d"], ["f"])],
    "tanh_scaled": [helper.make_node("Tanh", ["d"], ["t"]), helper.make_node("Mul", ["t", "three"], ["u"]),
                    helper.make_node("Add", ["u", "half"], ["f"])],
    "gelu_erf": [helper.make_node("Div", ["d", "three"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
                 helper.make_node("Add", ["e", "half"], ["b"]), helper.make_node("Mul", ["d", "b"], ["f"])],
    "requantize": [helper.make_node("Identity", ["d"], ["f"])],
}


@pytest.mark.parametrize("chain", list(UNARY_CHAINS))
@pytest.mark.parametrize("dtype", [TensorProto.UINT8, TensorProto.INT8])
def test_quantized_elementwise_chain_is_a_table(chain, dtype):
    """Q(f(DQ(x))) with one 8-bit source becomes tessera.QLookup over a table of f's 256 values: no float op
    left, and every output byte what the chain run as written gives (the table is made on the reference
    kernels, the unfused run uses the tuned ones: a step apart at most, where a value sits on a half), and
    onnxruntime's (running the graph as written) within a step."""
    model = _qdq_unary_model(UNARY_CHAINS[chain], [2, 8, 9, 13], dtype)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.QLookup(" in text and text.count("QuantizeLinear(") == 1, text  # (the input's)
    for op in ("Sigmoid(", "HardSwish(", "Tanh(", "Erf(", " Mul("):
        assert op not in text, text
    x = (RNG.standard_normal((2, 8, 9, 13)) * 3).astype(np.float32)
    unfused = tessera.InferenceSession(model, tessera.SessionOptions(optimization_level=0)).run(None, {"x": x})[0]
    so = ort.SessionOptions()  # onnxruntime running the graph as written (its fusions round elsewhere)
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert len(np.unique(unfused)) > 20
    for threads in (1, 2):
        got = _run(model, {"x": x}, threads)
        assert np.max(np.abs(got - unfused)) <= 0.021 + 1e-6 and np.mean(got != unfused) < 0.01
        assert np.max(np.abs(got - want)) <= 0.021 + 1e-6


def test_qlookup_kernels_match_reference():
    """The VBMI lookup (4 registers of table, two vpermi2b and a blend) and the scalar one against numpy, on
    every byte, ragged lengths, both input types."""
    for dtype in (TensorProto.UINT8, TensorProto.INT8):
        table = RNG.integers(0, 256, 256).astype(np.uint8)
        for n in (1, 63, 64, 65, 200, 4099):
            x = _q(dtype, (n,))
            m = helper.make_model(helper.make_graph([helper.make_node("QLookup", ["x", "t"], ["y"], domain="tessera")],
                                                    "g", [helper.make_tensor_value_info("x", dtype, [n])],
                                                    [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                                                    [numpy_helper.from_array(table, "t")]),
                                  opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("tessera", 1)])
            m.ir_version = 8
            want = table[x.view(np.uint8)]
            for threads in (1, 2):
                np.testing.assert_array_equal(_run(m.SerializeToString(), {"x": x}, threads), want)


@pytest.mark.parametrize("op", ["Reshape", "Transpose", "Split", "Flatten", "Slice"])
def test_qdq_data_movement_runs_on_bytes(op):
    """Q(op(DQ(x))) with the same scale and zero point, for an op that only moves values, becomes the op on
    the bytes (as onnxruntime drops the pair): no float round trip, the same output."""
    inits = [numpy_helper.from_array(np.array(0.04, np.float32), "s"), numpy_helper.from_array(np.array(131, np.uint8), "z"),
             numpy_helper.from_array(np.array([4, 45, 6], np.int64), "shape"),
             numpy_helper.from_array(np.array([1, 3], np.int64), "st"), numpy_helper.from_array(np.array([3, 7], np.int64), "en"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "ax")]
    outs = ["p"]
    mid = {"Reshape": helper.make_node("Reshape", ["d", "shape"], ["p"]),
           "Transpose": helper.make_node("Transpose", ["d"], ["p"], perm=[0, 3, 1, 2]),
           "Split": helper.make_node("Split", ["d"], ["p", "p2"], axis=1, num_outputs=2),
           "Flatten": helper.make_node("Flatten", ["d"], ["p"], axis=2),
           "Slice": helper.make_node("Slice", ["d", "st", "en", "ax"], ["p"])}[op]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]), mid,
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"]),
             helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"])]
    if op == "Split":
        nodes += [helper.make_node("QuantizeLinear", ["p2", "s", "z"], ["pq2"]),
                  helper.make_node("DequantizeLinear", ["pq2", "s", "z"], ["y2"])]
        outs.append("y2")
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6, 5, 9])],
                   [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for y in ["y"] + outs[1:]], inits,
                   opset=18)
    text = tessera.InferenceSession(model).graph_text()
    assert text.count("QuantizeLinear(") == 1, text
    feeds = {"x": (RNG.standard_normal((4, 6, 5, 9)) * 3).astype(np.float32)}
    unfused = tessera.InferenceSession(model, tessera.SessionOptions(optimization_level=0)).run(None, feeds)
    got = tessera.InferenceSession(model, tessera.SessionOptions(threads=2)).run(None, feeds)
    for a, b in zip(got, unfused):
        np.testing.assert_array_equal(a, b)


def test_qdq_concat_of_different_scales_requantizes_by_table():
    """Q(Concat(DQ(a), DQ(b))) where a's scale is not the output's: a requantized by its table, b (the
    output's scale) as it is, the Concat on the bytes; the bytes of the chain run as written."""
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "sa"), numpy_helper.from_array(np.array(120, np.uint8), "za"),
             numpy_helper.from_array(np.array(0.03, np.float32), "sb"), numpy_helper.from_array(np.array(128, np.uint8), "zb")]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["da"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["db"]),
             helper.make_node("Concat", ["da", "db"], ["c"], axis=1),
             helper.make_node("QuantizeLinear", ["c", "sb", "zb"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 5, 7, 7]),
                           helper.make_tensor_value_info("b", TensorProto.UINT8, [1, 3, 7, 7])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.QLookup(" in text and "QuantizeLinear(" not in text, text
    feeds = {"a": _q(TensorProto.UINT8, (1, 5, 7, 7)), "b": _q(TensorProto.UINT8, (1, 3, 7, 7))}
    unfused = tessera.InferenceSession(model, tessera.SessionOptions(optimization_level=0)).run(None, feeds)[0]
    np.testing.assert_array_equal(_run(model, feeds, 2), unfused)
    np.testing.assert_array_equal(ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0],
                                  unfused)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_])
@pytest.mark.parametrize("shape,perm", [((1, 3, 17, 19), (0, 2, 3, 1)), ((1, 28, 5, 2, 58), (0, 1, 2, 4, 3)),
                                        ((33, 65), (1, 0)), ((2, 3, 4, 5), (3, 1, 0, 2)), ((1, 40, 40, 16), (0, 3, 1, 2))])
def test_transpose_bytes_matches_numpy(dtype, shape, perm):
    """Transpose over 1-byte values on the tiled kernel (an int8 region's channel shuffles and boundaries)."""
    x = (RNG.integers(0, 256, shape).astype(np.uint8).view(np.int8) if dtype == np.int8 else
         RNG.integers(0, 2, shape).astype(np.bool_) if dtype == np.bool_ else RNG.integers(0, 256, shape).astype(np.uint8))
    et = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.bool_: TensorProto.BOOL}[dtype]
    model = _model([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))],
                   [helper.make_tensor_value_info("x", et, list(shape))], [helper.make_tensor_value_info("y", et, None)], [])
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, {"x": x}, threads), np.transpose(x, perm))


@pytest.mark.parametrize("xt,wt", PAIRS)
@pytest.mark.parametrize("shape", [(1, 32, 9, 9, 48, 3, 1, 1, 1, 4), (1, 64, 8, 8, 64, 1, 1, 0, 1, 4),
                                   (2, 48, 10, 11, 96, 3, 2, 1, 1, 3), (1, 128, 7, 7, 256, 3, 1, 2, 2, 8)])
def test_qconv_grouped_nhwc_matches_numpy(xt, wt, shape):
    """A grouped QLinearConv (ResNeXt's, RegNet's: each group a multiple of 4 channels) in an int8 region: each
    group's weights packed on their own, one task space over every group's panels, each group's channels read
    in place at its offset in the pixel; per-channel scales and biases at the group's columns."""
    for per_oc in (False, True):
        model, feeds, want = _conv_case(xt, wt, *shape, per_oc=per_oc, qlinear=True, sym_w=True)
        model = _with_pool_after(model)
        text = tessera.InferenceSession(model).graph_text()
        assert 'layout="NHWC"' in text and f"group={shape[9]}" in text, text
        for threads in (1, 2):
            np.testing.assert_array_equal(_run(model, feeds, threads), want)
    ref = tessera.InferenceSession(model, tessera.SessionOptions(threads=1, optimization_level=0))
    np.testing.assert_array_equal(ref.run(None, feeds)[0], want)


def _mbconv_cnn():
    """EfficientNet's block as PyTorch exports it: conv-SiLU, depthwise-SiLU, squeeze-and-excitation (global
    pool, 1x1 conv, SiLU, 1x1 conv, sigmoid, scaling), projection, residual; float weights."""
    c, e, r = 16, 48, 8
    def w(nm, *s):
        t = numpy_helper.from_array((RNG.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32))
        t.name = nm
        return t
    def b(nm, n):
        return numpy_helper.from_array((RNG.standard_normal(n) * 0.1).astype(np.float32), nm)
    inits = [w("w0", c, 3, 3, 3), b("b0", c), w("we", e, c, 1, 1), b("be", e), w("wd", e, 1, 3, 3), b("bd", e),
             w("ws1", r, e, 1, 1), b("bs1", r), w("ws2", e, r, 1, 1), b("bs2", e), w("wp", c, e, 1, 1), b("bp", c)]
    def silu(x, y):
        return [helper.make_node("Sigmoid", [x], [y + "_s"]), helper.make_node("Mul", [x, y + "_s"], [y])]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1] * 4, strides=[2, 2]), *silu("c0", "a0"),
             helper.make_node("Conv", ["a0", "we", "be"], ["ce"]), *silu("ce", "ae"),
             helper.make_node("Conv", ["ae", "wd", "bd"], ["cd"], pads=[1] * 4, group=e), *silu("cd", "ad"),
             helper.make_node("GlobalAveragePool", ["ad"], ["g"]),
             helper.make_node("Conv", ["g", "ws1", "bs1"], ["s1"]), *silu("s1", "as1"),
             helper.make_node("Conv", ["as1", "ws2", "bs2"], ["s2"]), helper.make_node("Sigmoid", ["s2"], ["sg"]),
             helper.make_node("Mul", ["ad", "sg"], ["se"]),
             helper.make_node("Conv", ["se", "wp", "bp"], ["cp"]), helper.make_node("Add", ["cp", "a0"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, 48])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


def test_quantized_mbconv_block_runs_in_one_int8_region(tmp_path):
    """An EfficientNet block quantized by onnxruntime's tool (static QDQ): its SiLUs and sigmoid become
    lookup tables, its convs (dense, pointwise, depthwise) NHWC int8 ones in one region; the output is
    onnxruntime's within what quantization alone moves onnxruntime."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    src.write_bytes(_mbconv_cnn())

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.d = [{"x": RNG.standard_normal((1, 3, 48, 48)).astype(np.float32)} for _ in range(3)]

        def get_next(self):
            return self.d.pop() if self.d else None
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    text = tessera.InferenceSession(str(dst)).graph_text()
    assert "tessera.QLookup(" in text and "Sigmoid(" not in text and " Conv(" not in text, text
    assert text.count('layout="NHWC"') >= 5, text
    feeds = {"x": RNG.standard_normal((1, 3, 48, 48)).astype(np.float32)}
    want, spread = _ort_spread(str(dst), feeds)
    for threads in (1, 2):
        got = tessera.InferenceSession(str(dst), tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        assert np.max(np.abs(got - want)) <= max(2 * spread, 1e-4 * np.max(np.abs(want))), (got, want, spread)


def _ms_model(node, inputs, out_type, inits):
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", out_type, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m.SerializeToString()


def _contrib_case(op, dtype):
    """One com.microsoft quantized op with random bytes and per-tensor parameters: (model, feeds, output
    type)."""
    dt = NP[dtype]
    s = lambda v, nm: numpy_helper.from_array(np.array(v, np.float32), nm)  # noqa: E731
    z = lambda v, nm: numpy_helper.from_array(np.array(v, dt), nm)  # noqa: E731
    zs = (131, 120, 125) if dtype == TensorProto.UINT8 else (3, -4, 1)
    x = _q(dtype, (2, 6, 7, 5))
    vi = lambda nm, sh: helper.make_tensor_value_info(nm, dtype, sh)  # noqa: E731
    params = [s(0.05, "as"), z(zs[0], "az"), s(0.03, "bs"), z(zs[1], "bz"), s(0.07, "cs"), z(zs[2], "cz")]
    if op in ("QLinearAdd", "QLinearMul"):
        b = _q(dtype, (6, 1, 5))  # broadcast
        node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain="com.microsoft")
        return _ms_model(node, [vi("a", [2, 6, 7, 5]), vi("b", [6, 1, 5])], dtype, params), {"a": x, "b": b}, dtype
    if op in ("QLinearSigmoid", "QLinearLeakyRelu"):
        node = helper.make_node(op, ["a", "as", "az", "cs", "cz"], ["y"], domain="com.microsoft",
                                **({"alpha": 0.2} if op == "QLinearLeakyRelu" else {}))
        return _ms_model(node, [vi("a", [2, 6, 7, 5])], dtype, params), {"a": x}, dtype
    if op.startswith("QLinearGlobalAveragePool"):
        node = helper.make_node("QLinearGlobalAveragePool", ["a", "as", "az", "cs", "cz"], ["y"], domain="com.microsoft",
                                channels_last=int(op.endswith("nhwc")))
        return _ms_model(node, [vi("a", [2, 6, 7, 5])], dtype, params), {"a": x}, dtype
    if op == "QLinearConcat":
        b = _q(dtype, (2, 3, 7, 5))
        node = helper.make_node(op, ["cs", "cz", "a", "as", "az", "b", "bs", "bz"], ["y"], domain="com.microsoft", axis=1)
        return _ms_model(node, [vi("a", [2, 6, 7, 5]), vi("b", [2, 3, 7, 5])], dtype, params), {"a": x, "b": b}, dtype
    if op.startswith("QGemm"):
        a = _q(dtype, (5, 12))
        w = _q(TensorProto.INT8, (8, 12))
        ws = RNG.uniform(0.01, 0.03, 8).astype(np.float32)
        bias = RNG.integers(-300, 300, 8).astype(np.int32)
        inits = params + [numpy_helper.from_array(w, "w"), numpy_helper.from_array(ws, "ws"),
                          numpy_helper.from_array(np.zeros(8, np.int8), "wz"), numpy_helper.from_array(bias, "bias")]
        quant_out = op.endswith("q")
        ins = ["a", "as", "az", "w", "ws", "wz", "bias"] + (["cs", "cz"] if quant_out else [])
        node = helper.make_node("QGemm", ins, ["y"], domain="com.microsoft", transB=1, alpha=1.0)
        return (_ms_model(node, [vi("a", [5, 12])], dtype if quant_out else TensorProto.FLOAT, inits), {"a": a},
                dtype if quant_out else TensorProto.FLOAT)
    raise AssertionError(op)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
                                "QLinearGlobalAveragePool", "QLinearGlobalAveragePool_nhwc", "QLinearConcat",
                                "QGemm", "QGemm_q"])
@pytest.mark.parametrize("dtype", [TensorProto.UINT8, TensorProto.INT8])
def test_contrib_quantized_ops_match_onnxruntime(op, dtype):
    """onnxruntime's quantized contrib ops (the QOperator format's) expanded at import into the QDQ nodes that
    define them: at every optimization level, onnxruntime's bytes within one step (its kernels round some
    sums in other orders), most of them equal."""
    if op == "QLinearGlobalAveragePool_nhwc" and dtype == TensorProto.INT8:
        pytest.skip("onnxruntime has no int8 channels-last QLinearGlobalAveragePool")
    model, feeds, yt = _contrib_case(op, dtype)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for level in (0, 99):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=2, optimization_level=level)).run(
            None, feeds)[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        if yt == TensorProto.FLOAT:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            continue
        d = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert d.max() <= 1 and np.mean(d) < 0.05, (op, d.max(), np.mean(d))


@pytest.mark.parametrize("model_fn", ["_small_cnn", "_mbconv_cnn"])
def test_qoperator_models_from_onnxruntimes_tool_run(tmp_path, model_fn):
    """Models quantized by onnxruntime's tool in the QOperator format (QLinearConv, com.microsoft QLinearAdd,
    QLinearSigmoid, QLinearMul, QLinearGlobalAveragePool, QGemm): they load, run in one NHWC int8 region with
    lookup tables, and give onnxruntime's output (equal here; a step of its QLinearAdd allowed for)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    src.write_bytes(globals()[model_fn]())
    shape = (1, 3, 40, 40) if model_fn == "_small_cnn" else (1, 3, 48, 48)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.d = [{"x": RNG.standard_normal(shape).astype(np.float32)} for _ in range(3)]

        def get_next(self):
            return self.d.pop() if self.d else None
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    import onnx
    assert any(n.domain == "com.microsoft" for n in onnx.load(str(dst)).graph.node)
    text = tessera.InferenceSession(str(dst)).graph_text()
    assert "QLinearConvPacked(" in text and 'layout="NHWC"' in text, text
    if model_fn == "_mbconv_cnn":
        assert "tessera.QLookup(" in text and "Sigmoid(" not in text, text
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}
    want = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(str(dst), tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        assert np.max(np.abs(got - want)) <= 0.02 * np.max(np.abs(want)), (got, want)  # (here: equal)


def test_lone_int8_conv_stays_nchw():
    """An int8 conv whose input comes from outside an int8 region and whose result no region op reads (a
    partly quantized model's isolated conv) stays NCHW: its two Transposes would cost more than NHWC saves."""
    model, feeds, want = _conv_case(TensorProto.UINT8, TensorProto.INT8, *CONVS[5], per_oc=True, qlinear=True,
                                    sym_w=True)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.QLinearConvPacked(" in text and 'layout="NHWC"' not in text and "Transpose(" not in text, text
    np.testing.assert_array_equal(_run(model, feeds, 2), want)
