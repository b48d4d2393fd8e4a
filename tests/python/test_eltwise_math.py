"""Log, Sin, Cos, Softplus, Pow (and Tanh, Neg, HardSigmoid, ThresholdedRelu) on the vector kernels
(kernels/x86/eltwise_impl.h) and in FusedElementwise programs (passes/fuse_elementwise): each alone and
inside a chain, against float64 numpy within eltwise.h's ULP bounds and against onnxruntime, on random data
(never zeros) of odd sizes (1, 15, 17, 1000003 elements), broadcast shapes, special values, 1 and 2 threads."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(23)
SIZES = [1, 15, 17, 1000003]
# eltwise.h's bounds, plus half an ulp: these compare against float64 results rounded by the test
BOUND = {"Log": 1.75, "Sin": 2.0, "Cos": 2.0, "Softplus": 2.5, "Tanh": 6.0, "Pow": 2.0}


def _model(nodes, inputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m.SerializeToString()


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _ulps(got, exact):
    """|got - exact| in ulps of exact rounded to f32 (subnormal ulp below FLT_MIN)."""
    r = np.abs(exact.astype(np.float32)).astype(np.float64)
    tiny = np.finfo(np.float32).tiny
    ulp = np.where(r < tiny, 2.0 ** -149, np.spacing(np.maximum(r, tiny).astype(np.float32)).astype(np.float64))
    with np.errstate(invalid="ignore"):
        d = np.abs(got.astype(np.float64) - exact)
    return np.where(got.astype(np.float64) == exact, 0.0, d / ulp)  # (equal infinities: 0)


def _exact(op, x, e=None):
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        return {"Log": np.log, "Sin": np.sin, "Cos": np.cos, "Tanh": np.tanh, "Neg": np.negative,
                "Softplus": lambda v: np.logaddexp(0.0, v),
                "Pow": lambda v: np.power(v, e.astype(np.float64))}[op](x)


def _inputs(op, n):
    if op == "Log":
        x = np.exp(RNG.uniform(-80, 80, n))
    elif op in ("Sin", "Cos"):
        x = RNG.standard_normal(n) * np.where(RNG.uniform(size=n) < 0.1, 3e4, 10.0)
    elif op == "Softplus":
        x = RNG.standard_normal(n) * 30
    elif op == "Pow":
        x = np.exp(RNG.uniform(-5, 5, n))
    else:
        x = RNG.standard_normal(n) * 3
    x = x.astype(np.float32)
    x[x == 0] = np.float32(0.5)
    return x


def _session(model, threads):
    # the ULP bounds are IEEE's, denormal results included: sessions otherwise flush them (flush_denormals)
    return tessera.InferenceSession(model, tessera.SessionOptions(threads=threads, flush_denormals=False))


def _ort(model, feeds):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("op", ["Log", "Sin", "Cos", "Softplus", "Tanh", "Neg"])
@pytest.mark.parametrize("n", SIZES)
def test_unary_alone(op, n):
    x = _inputs(op, n)
    model = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", [n])])
    for threads in (1, 2):
        got = _session(model, threads).run(None, {"x": x})[0]
        if op == "Neg":
            np.testing.assert_array_equal(got, -x)
        else:
            worst = _ulps(got, _exact(op, x)).max()
            assert worst <= BOUND[op] + 0.5, (op, n, threads, worst)
        np.testing.assert_allclose(got, _ort(model, {"x": x}), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("exponent", [1.7, -0.37, 2.0, 0.5, 3.0, 1.0])
def test_pow_constant_exponent(n, exponent):
    """Pow by a constant: 2, 0.5, 3 and 1 rewritten (Mul / Sqrt / Mul(Mul) / Mul by 1), others the vector pow."""
    x = _inputs("Pow", n)
    model = _model([helper.make_node("Pow", ["x", "e"], ["y"])], [_vi("x", [n])],
                   [numpy_helper.from_array(np.array(exponent, np.float32), "e")])
    e = np.array(exponent, np.float32)
    for threads in (1, 2):
        got = _session(model, threads).run(None, {"x": x})[0]
        worst = _ulps(got, _exact("Pow", x, e)).max()
        assert worst <= BOUND["Pow"] + 0.5, (exponent, n, threads, worst)
        if exponent == 1.0:
            np.testing.assert_array_equal(got, x)
    np.testing.assert_allclose(got, _ort(model, {"x": x}), rtol=2e-6, atol=0)


@pytest.mark.parametrize("xs,es", [((3, 1, 17), (5, 1)), ((4, 33), (33,)), ((2, 3, 1), (1, 1, 15)), ((15,), (15,))])
def test_pow_two_inputs_broadcast(xs, es):
    x = _inputs("Pow", int(np.prod(xs))).reshape(xs)
    e = RNG.uniform(-4, 4, es).astype(np.float32)
    e[e == 0] = 1.5
    model = _model([helper.make_node("Pow", ["x", "e"], ["y"])], [_vi("x", xs), _vi("e", es)])
    got = _session(model, 1).run(None, {"x": x, "e": e})[0]
    worst = _ulps(got, np.power(x.astype(np.float64), e.astype(np.float64))).max()
    assert worst <= BOUND["Pow"] + 0.5, worst
    np.testing.assert_allclose(got, _ort(model, {"x": x, "e": e}), rtol=2e-6, atol=0)


def test_pow_special_values():
    """Negative bases with integral exponents, zeros, infinities, NaN: std::pow's values."""
    x = np.array([-2.0, -2.0, -0.5, 0.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 1.0, 1e-45, 3e38, 2.0, -8.0],
                 np.float32)
    e = np.array([3.0, 2.0, -3.0, -1.0, 3.0, 0.0, -2.0, 3.0, 0.0, np.nan, 0.5, 2.0, -200.0, 1 / 3], np.float32)
    model = _model([helper.make_node("Pow", ["x", "e"], ["y"])], [_vi("x", [14]), _vi("e", [14])])
    got = _session(model, 1).run(None, {"x": x, "e": e})[0]
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), e.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([0.0, -0.0, -1.0, inf, -inf, nan, 1e-45, 1e-40, 1e30, 1e6, 105414.0, 3e38, -3e38, 1.0, 88.0,
                  -104.0, 20.0, -20.0], np.float32)
    for op in ("Log", "Sin", "Cos", "Softplus"):
        model = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", [x.size])])
        got = _session(model, 1).run(None, {"x": x})[0]
        exact = _exact(op, x)
        nan_want = np.isnan(exact)
        assert (np.isnan(got) == nan_want).all(), (op, got)
        assert (_ulps(got[~nan_want], exact[~nan_want]) <= BOUND[op] + 0.5).all(), (op, got, exact)
        if op == "Sin":
            assert np.signbit(got[1]) and not np.signbit(got[0])


def _chain(kind):
    """A chain around each new op (so it joins a program): the op's input and output both computed."""
    c = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)
    if kind == "log":  # log(|x| + 1) * 0.5 - x
        nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Add", ["a", "one"], ["b"]),
                 helper.make_node("Log", ["b"], ["l"]), helper.make_node("Mul", ["l", "h"], ["m"]),
                 helper.make_node("Sub", ["m", "x"], ["y"])]
        return nodes, [c("one", 1.0), c("h", 0.5)], "Log("
    if kind == "sincos":  # rotary-like: x * cos(x * f) + sin(x * f) with f a row
        nodes = [helper.make_node("Mul", ["x", "f"], ["t"]), helper.make_node("Cos", ["t"], ["cs"]),
                 helper.make_node("Sin", ["t"], ["sn"]), helper.make_node("Mul", ["x", "cs"], ["p"]),
                 helper.make_node("Add", ["p", "sn"], ["y"])]
        return nodes, [c("f", RNG.uniform(0.5, 20, 17))], "Sin("
    if kind == "softplus":  # softplus(x * 2) - 1
        nodes = [helper.make_node("Mul", ["x", "two"], ["t"]), helper.make_node("Softplus", ["t"], ["s"]),
                 helper.make_node("Sub", ["s", "one"], ["y"])]
        return nodes, [c("two", 2.0), c("one", 1.0)], "Softplus("
    if kind == "pow":  # (|x| + 0.1) ^ 1.7 * 3
        nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Add", ["a", "p1"], ["b"]),
                 helper.make_node("Pow", ["b", "e"], ["p"]), helper.make_node("Mul", ["p", "three"], ["y"])]
        return nodes, [c("p1", 0.1), c("e", 1.7), c("three", 3.0)], "Pow("
    if kind == "hardsigmoid":
        nodes = [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)]
        return nodes, [], "HardSigmoid("
    if kind == "hardsigmoid_default":  # beta 1/2: one instruction
        return [helper.make_node("HardSigmoid", ["x"], ["y"])], [], "HardSigmoid("
    if kind == "hardsigmoid_alpha0":  # alpha 0: a constant (the Mul / Add / Relu / Min form)
        return [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.0, beta=0.7)], [], "HardSigmoid("
    if kind == "thresholded":  # ThresholdedRelu(x * 2, 0.7) + x
        nodes = [helper.make_node("Mul", ["x", "two"], ["t"]), helper.make_node("ThresholdedRelu", ["t"], ["r"],
                                                                                alpha=0.7),
                 helper.make_node("Add", ["r", "x"], ["y"])]
        return nodes, [c("two", 2.0)], "ThresholdedRelu("
    nodes = [helper.make_node("ThresholdedRelu", ["x"], ["y"], alpha=0.25)]  # alone
    return nodes, [], "ThresholdedRelu("


@pytest.mark.parametrize("kind", ["log", "sincos", "softplus", "pow", "hardsigmoid", "hardsigmoid_default",
                                  "hardsigmoid_alpha0", "thresholded", "thresholded_alone"])
@pytest.mark.parametrize("rows", [1, 15, 58824])  # x 17: 17, 255 and 1000008 elements
def test_chains_fuse(kind, rows):
    nodes, inits, op = _chain(kind)
    model = _model(nodes, [_vi("x", [rows, 17])], inits)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.FusedElementwise(" in text and op not in text, text
    x = (RNG.standard_normal((rows, 17)) * 3).astype(np.float32)
    x[x == 0] = 0.25
    want = _ort(model, {"x": x})
    for threads in (1, 2):
        got = _session(model, threads).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=3e-6, atol=3e-6)


@pytest.mark.parametrize("level", [0, 99])  # the reference kernel, and the fused program's instruction
@pytest.mark.parametrize("alpha,beta", [(0.2, 0.5), (0.3, 0.4), (0.0, 0.7)])
def test_hardsigmoid_keeps_nan(level, alpha, beta):
    """max(0, min(1, alpha * x + beta)) as the spec's numpy clip: NaN stays NaN, infinities saturate."""
    model = _model([helper.make_node("HardSigmoid", ["x"], ["y"], alpha=alpha, beta=beta)], [_vi("x", [2, 9])],
                   [])
    x = np.array([[np.nan, -np.inf, np.inf, -3.0, -0.5, 0.0, 0.5, 3.0, np.nan]] * 2, np.float32)
    with np.errstate(invalid="ignore"):  # alpha 0: 0 * inf is NaN, in the spec's numpy as here
        want = np.clip(np.float32(alpha) * x + np.float32(beta), 0, 1)
    got = tessera.InferenceSession(model, tessera.SessionOptions(threads=1, optimization_level=level)).run(
        None, {"x": x})[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-6, atol=1e-7)
