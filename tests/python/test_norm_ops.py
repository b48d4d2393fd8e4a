"""MeanVarianceNormalization, LpNormalization, TopK, ArgMax / ArgMin and CumSum on their tuned kernels
(kernels/x86/norm.h, reduce.h) against onnxruntime and a float64 numpy reference: every axis (negative ones
too), reduced axes that alternate with kept ones, lengths around the 16-lane loops and primes, ties, NaN and
-0 where the op orders them, one and two threads, and the loops a CPU without AVX-512 (TESSERA_ISA=avx2) or
without AVX2 (portable) runs, in child processes.

Tolerances: MVN and LpNorm compute in double (within a few float ulps of float64 numpy; onnxruntime computes
in float: 1e-4). CumSum sums in double as the reference: within 1e-6 relative of float64 numpy's running
sum (onnxruntime's float sums drift: 1e-4 of the row's magnitude). TopK, ArgMax / ArgMin: exact."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(9)
F = TensorProto.FLOAT


def _model(node, x_shape, outs, inits=(), opset=18):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, list(x_shape))],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def _data(shape, ties=False):
    if ties:
        return RNG.integers(-4, 5, shape).astype(np.float32)
    x = (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    x[x == 0] = 0.25
    return x


def _run(model, x, threads=1):
    return tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})


def _ort(model, x):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})


MVN = [((1, 256, 7, 9), None), ((2, 3, 5, 4), None), ((2, 3, 5, 4), [2, 3]), ((3, 17), [1]), ((3, 17), [0]),
       ((2, 3, 4, 5), [1, 3]), ((5, 16, 16), [-1]), ((2, 15, 17, 16), [0, 1, 2, 3]), ((40, 37), [0])]


@pytest.mark.parametrize("shape,axes", MVN)
def test_mvn(shape, axes):
    x = _data(shape)
    attrs = {} if axes is None else {"axes": axes}
    model = _model(helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs), shape, [("y", F)])
    ax = tuple(a % len(shape) for a in (axes if axes is not None else [0, 2, 3]))
    xd = x.astype(np.float64)
    mean = xd.mean(axis=ax, keepdims=True)
    want = (xd - mean) / (np.sqrt(((xd - mean) ** 2).mean(axis=ax, keepdims=True)) + 1e-9)
    for threads in (1, 2):
        got = _run(model, x, threads)[0]
        assert got.shape == x.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=4e-6, atol=4e-6)
    np.testing.assert_allclose(got, _ort(model, x)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,axis", [((1, 256, 7, 9), 1), ((3, 17), 0), ((3, 17), -1), ((2, 16, 15), 1),
                                        ((4, 1030), 1), ((5, 3, 2, 7), -3)])
@pytest.mark.parametrize("p", [1, 2])
def test_lp_norm(shape, axis, p):
    x = _data(shape)
    model = _model(helper.make_node("LpNormalization", ["x"], ["y"], axis=axis, p=p), shape, [("y", F)])
    xd = x.astype(np.float64)
    norm = np.abs(xd).sum(axis=axis, keepdims=True) if p == 1 else np.sqrt((xd * xd).sum(axis=axis, keepdims=True))
    for threads in (1, 2):
        got = _run(model, x, threads)[0]
        np.testing.assert_allclose(got, xd / norm, rtol=4e-6, atol=1e-7)
    np.testing.assert_allclose(got, _ort(model, x)[0], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape,axis", [((1, 300, 512), 1), ((2, 5, 3), 0), ((2, 5, 3), -1), ((4, 7, 1030), 1),
                                        ((3, 17, 15), -2)])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(shape, axis, exclusive, reverse):
    x = _data(shape)
    node = helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)
    model = _model(node, shape, [("y", F)], [numpy_helper.from_array(np.array(axis, np.int64), "a")])
    xd = np.flip(x.astype(np.float64), axis) if reverse else x.astype(np.float64)
    want = np.cumsum(xd, axis=axis)
    if exclusive:
        want = want - xd
    if reverse:
        want = np.flip(want, axis)
    for threads in (1, 2):
        got = _run(model, x, threads)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, _ort(model, x)[0], rtol=0, atol=1e-4 * scale)


def _topk_want(x, k, axis, largest):
    """Stable order by value (NaN above every number), ties to the lower index, float64-free."""
    xm = np.moveaxis(x, axis, -1)
    key = np.where(np.isnan(xm), np.inf, xm).astype(np.float64)
    nan = np.isnan(xm)
    if largest:  # lexsort: last key is primary
        order = np.lexsort((np.broadcast_to(np.arange(xm.shape[-1]), xm.shape), -key, ~nan), axis=-1)
    else:
        order = np.lexsort((np.broadcast_to(np.arange(xm.shape[-1]), xm.shape), key, nan), axis=-1)
    idx = order[..., :k]
    vals = np.take_along_axis(xm, idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis).astype(np.int64)


@pytest.mark.parametrize("shape,axis", [((2, 10007), -1), ((5, 37, 3), 1), ((5, 37, 3), -3), ((1, 100000), 1)])
@pytest.mark.parametrize("k", [1, 16, 37])
@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("ties", [False, True])
def test_topk(shape, axis, k, largest, ties):
    x = _data(shape, ties)
    k = min(k, shape[axis])
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    model = _model(node, shape, [("v", F), ("i", TensorProto.INT64)],
                   [numpy_helper.from_array(np.array([k], np.int64), "k")])
    wv, wi = _topk_want(x, k, axis, largest)
    for threads in (1, 2):
        v, i = _run(model, x, threads)
        np.testing.assert_array_equal(i, wi)
        np.testing.assert_array_equal(v, wv)
    ov, oi = _ort(model, x)
    np.testing.assert_array_equal(v, ov)
    if not ties:
        np.testing.assert_array_equal(i, oi)


def test_topk_nan_and_signed_zero():
    x = _data((3, 64), ties=True)
    x[0, 3], x[0, 40], x[1, 6], x[1, 7], x[1, 8], x[2, 10:60] = np.nan, np.nan, -0.0, 0.0, -0.0, np.nan
    for largest in (1, 0):
        for k in (1, 2, 5, 20, 64):
            node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)
            model = _model(node, x.shape, [("v", F), ("i", TensorProto.INT64)],
                           [numpy_helper.from_array(np.array([k], np.int64), "k")])
            v, i = _run(model, x)
            wv, wi = _topk_want(x, k, 1, largest)
            np.testing.assert_array_equal(i, wi)
            np.testing.assert_array_equal(v.view(np.int32), wv.view(np.int32))  # -0 stays -0, NaN bits kept


def test_topk_bad_k():
    x = _data((3, 5))
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)
    model = _model(node, x.shape, [("v", F), ("i", TensorProto.INT64)],
                   [numpy_helper.from_array(np.array([6], np.int64), "k")])
    with pytest.raises(Exception, match="out of range"):
        _run(model, x)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("shape,axis", [((1, 256, 7, 9), 1), ((3, 17, 33), 1), ((5, 4), 0), ((2, 3, 1030), -2)])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("ties", [False, True])
def test_arg_extreme_columns(op, shape, axis, keepdims, ties):
    x = _data(shape, ties)
    model = _model(helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims), shape,
                   [("y", TensorProto.INT64)])
    want = (np.argmax if op == "ArgMax" else np.argmin)(x, axis=axis)  # the first extreme, as ONNX
    if keepdims:
        want = np.expand_dims(want, axis)
    for threads in (1, 2):
        np.testing.assert_array_equal(_run(model, x, threads)[0], want)
    np.testing.assert_array_equal(_ort(model, x)[0], want)


def test_arg_extreme_last_index_and_nan():
    x = _data((4, 33, 20), ties=True)
    x[1, 5, 3] = x[2, 30, 7] = np.nan
    for op in ("ArgMax", "ArgMin"):
        model = _model(helper.make_node(op, ["x"], ["y"], axis=1, select_last_index=1), x.shape,
                       [("y", TensorProto.INT64)])
        got = _run(model, x)[0]
        f = np.argmax if op == "ArgMax" else np.argmin
        want = x.shape[1] - 1 - f(x[:, ::-1, :], axis=1, keepdims=True)  # the last extreme
        nan = np.isnan(x).any(axis=1, keepdims=True)
        want = np.where(nan, np.argmax(np.isnan(x), axis=1, keepdims=True), want)  # a NaN: its first index
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("isa", ["avx2", "portable"])
def test_narrower_isas(tmp_path, isa):
    """The same kernels on the loops a CPU without AVX-512 (or AVX2) runs, in a child process."""
    x = _data((2, 37, 33))
    models = {
        "mvn": _model(helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 2]), x.shape, [("y", F)]),
        "lp": _model(helper.make_node("LpNormalization", ["x"], ["y"], axis=1), x.shape, [("y", F)]),
        "cumsum": _model(helper.make_node("CumSum", ["x", "a"], ["y"]), x.shape, [("y", F)],
                         [numpy_helper.from_array(np.array(1, np.int64), "a")]),
        "argmin": _model(helper.make_node("ArgMin", ["x"], ["y"], axis=1), x.shape, [("y", TensorProto.INT64)]),
        "topk": _model(helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1), x.shape,
                       [("v", F), ("i", TensorProto.INT64)], [numpy_helper.from_array(np.array([5], np.int64), "k")]),
    }
    np.save(tmp_path / "x.npy", x)
    for name, m in models.items():
        (tmp_path / f"{name}.onnx").write_bytes(m)
        for j, w in enumerate(_run(m, x)):
            np.save(tmp_path / f"{name}{j}.npy", w)
    script = ("import sys, numpy as np, tessera\n"
              "d = sys.argv[1]\n"
              "x = np.load(f'{d}/x.npy')\n"
              "for n in ['mvn', 'lp', 'cumsum', 'argmin', 'topk']:\n"
              "    got = tessera.InferenceSession(f'{d}/{n}.onnx', tessera.SessionOptions(threads=2)).run(None, {'x': x})\n"
              "    for j, g in enumerate(got):\n"
              "        np.testing.assert_allclose(g, np.load(f'{d}/{n}{j}.npy'), rtol=4e-6, atol=1e-6)\n")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=dict(os.environ, TESSERA_ISA=isa),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
