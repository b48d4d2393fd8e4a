"""Graph passes seen from the outside: each rewrite fires on the pattern an exporter writes (checked in the
optimized graph text), and the optimized model matches both the unoptimized one and onnxruntime."""
from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from model_inputs import rel_err

RNG = np.random.default_rng(11)


def _c(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def _model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    onnx.checker.check_model(m)
    return m.SerializeToString()


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def gelu_erf():
    """PyTorch's exact GELU after a linear layer: MatMul + bias, then x * 0.5 * (1 + erf(x / sqrt 2))."""
    w = RNG.standard_normal((16, 48)).astype(np.float32) * 0.3
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"]), helper.make_node("Add", ["b", "h0"], ["h"]),
             helper.make_node("Div", ["h", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["h", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), _c("b", RNG.standard_normal(48)), _c("sqrt2", math.sqrt(2)),
             _c("one", 1.0), _c("half", 0.5)]
    return _model(nodes, [_f("x", ["batch", "seq", 16])], [_f("y", ["batch", "seq", 48])], inits)


def gelu_tanh():
    """GPT-2's tanh GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x^3 as Mul(Mul(x, x), x)."""
    nodes = [helper.make_node("Mul", ["x", "x"], ["x2"]), helper.make_node("Mul", ["x2", "x"], ["x3"]),
             helper.make_node("Mul", ["x3", "k"], ["kx3"]), helper.make_node("Add", ["x", "kx3"], ["s"]),
             helper.make_node("Mul", ["s", "c"], ["cs"]), helper.make_node("Tanh", ["cs"], ["t"]),
             helper.make_node("Add", ["t", "one"], ["a"]), helper.make_node("Mul", ["x", "half"], ["hx"]),
             helper.make_node("Mul", ["hx", "a"], ["y"])]
    inits = [_c("k", 0.044715), _c("c", math.sqrt(2 / math.pi)), _c("one", 1.0), _c("half", 0.5)]
    return _model(nodes, [_f("x", [2, 7, 96])], [_f("y", [2, 7, 96])], inits)


def broadcast_chain():
    """Residual + per-channel scale and bias, a Sigmoid gate, two inputs of different ranks, and a branch
    whose value is also a graph output (which must stay)."""
    nodes = [helper.make_node("Mul", ["x", "scale"], ["s"]), helper.make_node("Add", ["s", "bias"], ["t"]),
             helper.make_node("Sigmoid", ["t"], ["g"]), helper.make_node("Mul", ["g", "r"], ["u"]),
             helper.make_node("Sub", ["u", "x"], ["y"]), helper.make_node("Abs", ["t"], ["z"])]
    inits = [_c("scale", RNG.standard_normal(33)), _c("bias", RNG.standard_normal((5, 1, 33)))]
    return _model(nodes, [_f("x", [5, 4, 33]), _f("r", [4, 1])], [_f("y", [5, 4, 33]), _f("z", [5, 4, 33])],
                  inits)


def _check_vs_ort(model, dims=3, feeds=None, tol=1e-5):
    """The optimized and the unoptimized session against onnxruntime, at one and two threads."""
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    if feeds is None:
        feeds = {}
        for a in ref.get_inputs():
            shape = [d if isinstance(d, int) else dims for d in a.shape]
            feeds[a.name] = (RNG.standard_normal(shape) * 3).astype(np.float32)
    want = ref.run(None, feeds)
    for opts in (tessera.SessionOptions(), tessera.SessionOptions(threads=2),
                 tessera.SessionOptions(optimization_level=0)):
        got = tessera.InferenceSession(model, opts).run(None, feeds)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert rel_err(g, w) < tol


@pytest.mark.parametrize("build", [gelu_erf, gelu_tanh, broadcast_chain])
def test_fuse_elementwise(build):
    model = build()
    text = tessera.InferenceSession(model).graph_text()
    if build is gelu_erf:  # bias and GELU both in the GEMM epilogue (fuse_gelu, then fuse_gemm)
        assert 'tessera.FusedGemm(' in text and 'activation="Gelu"' in text, text
        assert "FusedElementwise(" not in text, text
    elif build is gelu_tanh:  # a GELU after no GEMM: one Gelu node
        assert text.count("Gelu(") == 1 and 'approximate="tanh"' in text, text
    else:
        # t feeds two consumers (the gate and Abs), so it is materialized: two groups, and the Abs of it alone
        # a one-instruction program (no tuned kernel of its own).
        assert text.count("tessera.FusedElementwise(") == 3 and "Abs(" not in text, text
    assert text.count("Erf(") + text.count("Tanh(") + text.count("Sigmoid(") + text.count(" Mul(") == 0, text
    _check_vs_ort(model)


@pytest.mark.parametrize("kind", ["leaky", "prelu", "conv_leaky", "mish", "mish_chain"])
def test_leaky_relu_and_prelu_stream_as_programs(kind):
    """LeakyRelu and PRelu of a constant slope (per channel) become x + (1 - a) * Relu(-x), Mish (the op or
    YOLOv4's Softplus / Tanh / Mul) x (1 - 2 / (e (e + 2) + 2)); each runs as one FusedElementwise, on its own
    or after an NHWC conv (Darknet's conv + LeakyRelu(0.1))."""
    opset = 18 if kind == "mish" else 17
    if kind == "leaky":
        nodes = [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)]
        inits, shape = [], [2, 8, 5, 7]
    elif kind == "mish":
        nodes = [helper.make_node("Mish", ["x"], ["y"])]
        inits, shape = [], [2, 8, 5, 7]
    elif kind == "mish_chain":  # YOLOv4's export: Mul(x, Tanh(Softplus(x)))
        nodes = [helper.make_node("Softplus", ["x"], ["sp"]), helper.make_node("Tanh", ["sp"], ["t"]),
                 helper.make_node("Mul", ["x", "t"], ["y"])]
        inits, shape = [], [2, 8, 5, 7]
    elif kind == "prelu":
        nodes = [helper.make_node("PRelu", ["x", "slope"], ["y"])]
        inits, shape = [_c("slope", RNG.uniform(-0.5, 0.5, (8, 1, 1)))], [2, 8, 5, 7]
    else:
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                 helper.make_node("LeakyRelu", ["c"], ["l"], alpha=0.1),
                 helper.make_node("Conv", ["l", "w2"], ["y"], kernel_shape=[1, 1])]
        inits = [_c("w", RNG.standard_normal((16, 8, 3, 3)) * 0.2), _c("b", RNG.standard_normal(16)),
                 _c("w2", RNG.standard_normal((8, 16, 1, 1)) * 0.3)]
        shape = [1, 8, 9, 11]
    y_shape = [shape[0], 8] + shape[2:]
    model = _model(nodes, [_f("x", shape)], [_f("y", y_shape)], inits, opset=opset)
    text = tessera.InferenceSession(model).graph_text()
    for op in ("LeakyRelu(", "PRelu(", "Mish(", "Softplus(", "Tanh("):
        assert op not in text, text
    assert "tessera.FusedElementwise(" in text, text
    _check_vs_ort(model)
    if kind.startswith("mish"):  # finite where exp overflows, 0 far below zero
        x = np.zeros(shape, np.float32)
        x.flat[:10] = [-100, -20, -5, -1, 0, 1, 5, 20, 90, 1e30]
        got = tessera.InferenceSession(model).run(None, {"x": x})[0].flat[:10]
        xd = x.flat[:10].astype(np.float64)
        want = xd * np.tanh(np.logaddexp(0, xd))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


_LONE = {"Sqrt": np.sqrt, "Abs": np.abs, "Neg": np.negative, "Floor": np.floor, "Ceil": np.ceil,
         "Round": np.round, "Reciprocal": lambda x: np.float32(1) / x, "Max": np.maximum, "Min": np.minimum}


@pytest.mark.parametrize("op", list(_LONE))
@pytest.mark.parametrize("bcast", [False, True])
def test_lone_program_ops_stream(op, bcast):
    """Sqrt, Abs, Neg, Floor, Ceil, Round, Reciprocal and two-input Max / Min alone (no tuned kernel of their own)
    become one-instruction programs: vectorized, numpy's values bit for bit — NaN propagated (Max / Min too),
    signed zeros, infinities, Round's halves to even, Max / Min against a broadcast scalar or row."""
    binary = op in ("Max", "Min")
    if bcast and not binary:
        pytest.skip("unary")
    shape, bshape = [2, 8, 5, 7], ([1] if bcast else [2, 8, 5, 7])
    ins = [_f("x", shape)] + ([_f("b", bshape)] if binary else [])
    model = _model([helper.make_node(op, ["x", "b"] if binary else ["x"], ["y"])], ins, [_f("y", shape)], [],
                   opset=17)
    text = tessera.InferenceSession(model).graph_text()
    assert "tessera.FusedElementwise(" in text and " " + op + "(" not in text, text
    x = (RNG.standard_normal(shape) * 3).astype(np.float32)
    x.flat[:9] = [-0.0, 0.0, np.inf, -np.inf, np.nan, 2.5, -2.5, 0.5, 1.5]
    feeds = {"x": x}
    if binary:
        b = (RNG.standard_normal(bshape) * 3).astype(np.float32)
        if not bcast:
            b.flat[:12] = [0.0, -0.0, 1.0, np.inf, 3.0, np.nan, -2.5, 0.5, 1.5, np.nan, 0.0, -0.0]
        feeds["b"] = b
    with np.errstate(all="ignore"):
        want = _LONE[op](*feeds.values()).astype(np.float32)
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        np.testing.assert_array_equal(got, want)
        if op not in ("Max", "Min"):  # (signed zeros: numpy's maximum of 0 and -0 is either)
            assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


def test_rounding_and_extremes_join_programs():
    """Max / Min / Floor / Round join a chain's program (ReLU6 written as Min(Max(x, 0), 6), a quantize-like
    Round(x / s) * s): one FusedElementwise, numpy's values; the Reciprocal of the per-channel scale, which the
    chain broadcasts, is a program of its own (not recomputed per element)."""
    nodes = [helper.make_node("Mul", ["x", "two"], ["a"]), helper.make_node("Max", ["a", "zero"], ["m"]),
             helper.make_node("Min", ["m", "six"], ["c"]), helper.make_node("Reciprocal", ["s"], ["rs"]),
             helper.make_node("Mul", ["c", "rs"], ["q"]), helper.make_node("Round", ["q"], ["r"]),
             helper.make_node("Floor", ["r"], ["f"]), helper.make_node("Mul", ["f", "s"], ["y"])]
    inits = [_c("two", 2.0), _c("zero", 0.0), _c("six", 6.0)]
    model = _model(nodes, [_f("x", [4, 6, 9]), _f("s", [9])], [_f("y", [4, 6, 9])], inits, opset=17)
    text = tessera.InferenceSession(model).graph_text()
    assert text.count("tessera.FusedElementwise(") == 2 and "Max(" not in text and "Round(" not in text, text
    assert "tessera.FusedElementwise(%s)" in text, text
    x = (RNG.standard_normal((4, 6, 9)) * 4).astype(np.float32)
    sc = RNG.uniform(0.1, 0.5, 9).astype(np.float32)
    want = np.floor(np.round(np.minimum(np.maximum(x * np.float32(2), 0), 6) * (np.float32(1) / sc))) * sc
    got = tessera.InferenceSession(model).run(None, {"x": x, "s": sc})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,attrs", [("Elu", {}), ("Elu", dict(alpha=0.3)), ("Selu", {}),
                                      ("Selu", dict(alpha=1.2, gamma=0.9)), ("Celu", {}), ("Celu", dict(alpha=2.5))])
def test_elu_family_streams_as_programs(op, attrs):
    """Elu, Selu and Celu become Relu(x) - a Relu(1 - e^x) (Celu: e^(x / a); Selu scaled by gamma): one
    FusedElementwise, against onnxruntime, including values far below zero, near it and large."""
    model = _model([helper.make_node(op, ["x"], ["y"], **attrs)], [_f("x", [2, 8, 5, 7])], [_f("y", [2, 8, 5, 7])],
                   [], opset=17)
    text = tessera.InferenceSession(model).graph_text()
    assert op + "(" not in text and "tessera.FusedElementwise(" in text, text
    _check_vs_ort(model)
    x = RNG.standard_normal((2, 8, 5, 7)).astype(np.float32)
    x.flat[:9] = [-100, -20, -1, -1e-3, 0, 1e-3, 1, 20, 80]
    got = tessera.InferenceSession(model).run(None, {"x": x})[0]
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ["pow", "mul", "no_affine", "opset18", "d_read_outside"])
def test_decomposed_layer_norm_fuses(variant):
    """LayerNorm as exporters before opset 17 write it (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div,
    Mul gamma, Add beta) becomes one LayerNormalization; where an intermediate is read outside, it stays."""
    opset = 18 if variant == "opset18" else 14
    inits = [_c("eps", 1e-5), _c("two", 2.0), _c("gamma", RNG.uniform(0.5, 1.5, 24)), _c("beta", RNG.standard_normal(24))]
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.array([-1], np.int64), "axes"))
        mean = lambda i, o: helper.make_node("ReduceMean", [i, "axes"], [o])
    else:
        mean = lambda i, o: helper.make_node("ReduceMean", [i], [o], axes=[-1])
    sq = (helper.make_node("Mul", ["d", "d"], ["sq"]) if variant == "mul"
          else helper.make_node("Pow", ["d", "two"], ["sq"]))
    nodes = [mean("x", "m"), helper.make_node("Sub", ["x", "m"], ["d"]), sq, mean("sq", "v"),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"])]
    outputs = [_f("y", [3, 5, 24])]
    if variant == "no_affine":
        nodes.append(helper.make_node("Relu", ["n"], ["y"]))
    else:
        nodes += [helper.make_node("Mul", ["n", "gamma"], ["ng"]), helper.make_node("Add", ["ng", "beta"], ["y"])]
    if variant == "d_read_outside":
        outputs.append(_f("d", [3, 5, 24]))
    model = _model(nodes, [_f("x", [3, 5, 24])], outputs, inits, opset=opset)
    text = tessera.InferenceSession(model).graph_text()
    if variant == "d_read_outside":
        assert "LayerNormalization(" not in text, text
    else:
        assert "LayerNormalization(" in text and "ReduceMean(" not in text and "Sqrt(" not in text, text
    _check_vs_ort(model)


@pytest.mark.parametrize("variant", ["t5", "div", "rsqrt_pow", "mul_sq_opset18", "x_residual", "s_read_outside"])
def test_decomposed_rms_norm_fuses(variant):
    """RMSNorm as T5 / LLaMA exports write it (Pow(x, 2) or Mul(x, x), ReduceMean, Add eps, then
    x * Reciprocal(Sqrt), x / Sqrt or x * Pow(., -0.5), times a weight) becomes one RMSNormalization; x may be
    read elsewhere (the residual stream), an intermediate read outside keeps the pattern unfused."""
    opset = 18 if variant == "mul_sq_opset18" else 14
    n = 40
    inits = [_c("eps", 1e-6), _c("two", 2.0), _c("mhalf", -0.5), _c("w", RNG.uniform(0.5, 1.5, n))]
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.array([-1], np.int64), "axes"))
        mean = helper.make_node("ReduceMean", ["sq", "axes"], ["ms"])
    else:
        mean = helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1])
    sq = (helper.make_node("Mul", ["x", "x"], ["sq"]) if variant == "mul_sq_opset18"
          else helper.make_node("Pow", ["x", "two"], ["sq"]))
    nodes = [sq, mean, helper.make_node("Add", ["ms", "eps"], ["ve"])]
    if variant == "div":
        nodes += [helper.make_node("Sqrt", ["ve"], ["s"]), helper.make_node("Div", ["x", "s"], ["nx"])]
    elif variant == "rsqrt_pow":
        nodes += [helper.make_node("Pow", ["ve", "mhalf"], ["r"]), helper.make_node("Mul", ["r", "x"], ["nx"])]
    else:
        nodes += [helper.make_node("Sqrt", ["ve"], ["s"]), helper.make_node("Reciprocal", ["s"], ["r"]),
                  helper.make_node("Mul", ["x", "r"], ["nx"])]
    nodes.append(helper.make_node("Mul", ["w", "nx"], ["y"]))
    outputs = [_f("y", [3, 5, n])]
    if variant == "x_residual":  # x also feeds the residual add after the norm
        nodes.append(helper.make_node("Add", ["x", "y"], ["z"]))
        outputs.append(_f("z", [3, 5, n]))
    if variant == "s_read_outside":
        outputs.append(_f("s", [3, 5, 1]))
    model = _model(nodes, [_f("x", [3, 5, n])], outputs, inits, opset=opset)
    text = tessera.InferenceSession(model).graph_text()
    if variant == "s_read_outside":
        assert "RMSNormalization(" not in text, text
    else:
        assert "RMSNormalization(" in text and "ReduceMean(" not in text and "Sqrt(" not in text, text
        assert "Pow(" not in text and "Reciprocal(" not in text, text
    _check_vs_ort(model)


@pytest.mark.parametrize("ir_version,fused", [(3, True), (7, False)])
def test_initializers_listed_as_inputs(ir_version, fused):
    """Before IR version 4 initializers were listed among the graph inputs too and were constants (the ONNX
    model zoo's older CNNs): the conv is fused and prepacked. From IR 4 such an initializer is an overridable
    default, so it stays a run-time operand."""
    w = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [_f("x", [1, 3, 16, 16]), _f("w", [8, 3, 3, 3])], [_f("y", [1, 8, 16, 16])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)])
    m.ir_version = ir_version
    model = m.SerializeToString()
    text = tessera.InferenceSession(model).graph_text()
    assert ("tessera.FusedConv(" in text) == fused, text
    _check_vs_ort(model, feeds={"x": RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)})


def _unary_model(nodes, inits, outputs=("y",)):
    return _model(nodes, [_f("x", [3, 5, 40])], [_f(o, [3, 5, 40]) for o in outputs], inits)


def gelu_variants():
    """The GELU formulas in other association and operand orders, Pow for the cube, Mul by 1/sqrt 2."""
    n = helper.make_node
    erf_mul = _unary_model([n("Mul", ["x", "half"], ["hx"]), n("Mul", ["inv_sqrt2", "x"], ["d"]), n("Erf", ["d"], ["e"]),
                            n("Add", ["one", "e"], ["a"]), n("Mul", ["a", "hx"], ["y"])],
                           [_c("half", 0.5), _c("inv_sqrt2", 1 / math.sqrt(2)), _c("one", 1.0)])
    erf_nested = _unary_model([n("Div", ["x", "sqrt2"], ["d"]), n("Erf", ["d"], ["e"]), n("Add", ["e", "one"], ["a"]),
                               n("Mul", ["a", "half"], ["ha"]), n("Mul", ["x", "ha"], ["y"])],
                              [_c("half", 0.5), _c("sqrt2", math.sqrt(2)), _c("one", 1.0)])
    tanh_pow = _unary_model([n("Pow", ["x", "three"], ["x3"]), n("Mul", ["k", "x3"], ["kx3"]), n("Add", ["kx3", "x"], ["s"]),
                             n("Mul", ["c", "s"], ["cs"]), n("Tanh", ["cs"], ["t"]), n("Add", ["one", "t"], ["a"]),
                             n("Mul", ["a", "x"], ["xa"]), n("Mul", ["half", "xa"], ["y"])],
                            [_c("three", 3.0), _c("k", 0.044715), _c("c", math.sqrt(2 / math.pi)), _c("one", 1.0),
                             _c("half", 0.5)])
    return [erf_mul, erf_nested, tanh_pow]


def gelu_lookalikes():
    """Near misses that must stay as they are: a different constant, an intermediate that is also an output."""
    n = helper.make_node
    wrong_k = _unary_model([n("Mul", ["x", "x"], ["x2"]), n("Mul", ["x2", "x"], ["x3"]), n("Mul", ["x3", "k"], ["kx3"]),
                            n("Add", ["x", "kx3"], ["s"]), n("Mul", ["s", "c"], ["cs"]), n("Tanh", ["cs"], ["t"]),
                            n("Add", ["t", "one"], ["a"]), n("Mul", ["x", "half"], ["hx"]), n("Mul", ["hx", "a"], ["y"])],
                           [_c("k", 0.05), _c("c", math.sqrt(2 / math.pi)), _c("one", 1.0), _c("half", 0.5)])
    shared = _unary_model([n("Div", ["x", "sqrt2"], ["d"]), n("Erf", ["d"], ["e"]), n("Add", ["e", "one"], ["a"]),
                           n("Mul", ["x", "a"], ["m"]), n("Mul", ["m", "half"], ["y"])],
                          [_c("half", 0.5), _c("sqrt2", math.sqrt(2)), _c("one", 1.0)], outputs=("y", "e"))
    return [wrong_k, shared]


@pytest.mark.parametrize("i", range(3))
def test_fuse_gelu_forms(i):
    model = gelu_variants()[i]
    text = tessera.InferenceSession(model, tessera.SessionOptions(optimization_level=1)).graph_text()
    assert text.count("Gelu(") == 1 and "FusedElementwise(" not in text, text
    _check_vs_ort(model)


@pytest.mark.parametrize("i", range(2))
def test_fuse_gelu_leaves_lookalikes(i):
    model = gelu_lookalikes()[i]
    text = tessera.InferenceSession(model).graph_text()
    assert "Gelu(" not in text, text
    _check_vs_ort(model)


def residual_block(res_shape):
    """A transformer's o-projection: MatMul + bias, then the residual stream added, then ReLU."""
    w = RNG.standard_normal((24, 40)).astype(np.float32) * 0.3
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"]), helper.make_node("Add", ["h0", "b"], ["h"]),
             helper.make_node("Add", ["r", "h"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), _c("b", RNG.standard_normal(40))]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "g", [_f("x", ["batch", "seq", 24]), _f("r", res_shape)], [out], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()


@pytest.mark.parametrize("r_shape,fused", [(["batch", "seq", 40], True), (["a", "b", 40], True),
                                            ([1, 40], False)])
def test_fuse_gemm_residual(r_shape, fused):
    model = residual_block(r_shape)
    text = tessera.InferenceSession(model).graph_text()
    assert ('activation="Relu"' in text and text.count(" Add(") == 0) == fused, text
    x = RNG.standard_normal((2, 5, 24)).astype(np.float32)
    # the residual the same shape as the product (the epilogue), broadcasting, and widening the output
    for r in ([2, 5, 40], [1, 1, 40]) if len(r_shape) == 3 else ([1, 40],):
        _check_vs_ort(model, feeds={"x": x, "r": RNG.standard_normal(r).astype(np.float32)})
    if r_shape[0] == "a":  # its own dims: may widen the product (onnxruntime holds "batch" to one size)
        _check_vs_ort(model, feeds={"x": x[:1], "r": RNG.standard_normal((3, 5, 40)).astype(np.float32)})


def attention_block(scale_op="Div", with_mask=True, opset=17):
    """BERT-style self-attention core: Q K^T / sqrt(d) + mask -> Softmax -> . V, heads split by Reshape/Transpose."""
    b, l, h, d = 2, 11, 4, 8
    nodes = [helper.make_node("Reshape", ["q", "shp"], ["q4"]), helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["k", "shp"], ["k4"]), helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["v", "shp"], ["v4"]), helper.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["qh", "kt"], ["s"]),
             helper.make_node(scale_op, ["s", "c"], ["ss"])]
    last = "ss"
    inputs = [_f("q", [b, l, h * d]), _f("k", [b, l, h * d]), _f("v", [b, l, h * d])]
    if with_mask:
        nodes.append(helper.make_node("Add", ["ss", "mask"], ["sm"]))
        inputs.append(_f("mask", [b, 1, 1, l]))
        last = "sm"
    nodes += [helper.make_node("Softmax", [last], ["p"], axis=-1), helper.make_node("MatMul", ["p", "vh"], ["o"])]
    c = math.sqrt(d) if scale_op == "Div" else 1 / math.sqrt(d)
    inits = [numpy_helper.from_array(np.array([b, l, h, d], np.int64), "shp"), _c("c", c)]
    return _model(nodes, inputs, [_f("o", [b, h, l, d])], inits, opset=opset)


def causal_attention_block():
    """GPT-2's export: scores / sqrt(d), then Where(Not(Trilu(ones)), -inf-ish, scores) before Softmax."""
    b, h, l, d = 1, 3, 9, 8
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Div", ["s", "c"], ["ss"]),
             helper.make_node("Trilu", ["ones"], ["lower"], upper=0), helper.make_node("Not", ["lower"], ["future"]),
             helper.make_node("Where", ["future", "neg", "ss"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["o"])]
    inputs = [_f("q", [b, h, l, d]), _f("kt", [b, h, d, l]), _f("v", [b, h, l, d])]
    inits = [_c("c", math.sqrt(d)), _c("neg", -3.4e38),
             numpy_helper.from_array(np.ones((l, l), np.bool_), "ones")]
    return _model(nodes, inputs, [_f("o", [b, h, l, d])], inits)


def vit_attention_block():
    """torchvision's MultiheadAttention export: [L, B*H, D] heads, Q scaled before the MatMul, Transposes
    around the core (the result transposed back and reshaped to [L, B, E])."""
    l, bh, d = 13, 4, 8
    n = helper.make_node
    nodes = [n("Transpose", ["q"], ["qt"], perm=[1, 0, 2]), n("Div", ["qt", "c"], ["qs"]),
             n("Transpose", ["k"], ["kt"], perm=[1, 2, 0]), n("Transpose", ["v"], ["vt"], perm=[1, 0, 2]),
             n("MatMul", ["qs", "kt"], ["s"]), n("Softmax", ["s"], ["p"], axis=-1), n("MatMul", ["p", "vt"], ["o"]),
             n("Transpose", ["o"], ["ot"], perm=[1, 0, 2]), n("Reshape", ["ot", "shp"], ["y"])]
    inits = [_c("c", math.sqrt(d)), numpy_helper.from_array(np.array([l, 1, bh * d], np.int64), "shp")]
    return _model(nodes, [_f("q", [l, bh, d]), _f("k", [l, bh, d]), _f("v", [l, bh, d])], [_f("y", [l, 1, bh * d])],
                  inits)


def sdpa_attention_block():
    """PyTorch 2's scaled_dot_product_attention export: Q and the transposed K each scaled by sqrt(scale)."""
    b, h, l, d = 2, 3, 11, 8
    n = helper.make_node
    nodes = [n("Mul", ["q", "c"], ["qs"]), n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             n("Mul", ["kt", "c"], ["ks"]), n("MatMul", ["qs", "ks"], ["s"]), n("Softmax", ["s"], ["p"], axis=-1),
             n("MatMul", ["p", "v"], ["o"])]
    return _model(nodes, [_f(x, [b, h, l, d]) for x in "qkv"], [_f("o", [b, h, l, d])],
                  [_c("c", math.sqrt(1 / math.sqrt(d)))])


def vit_qkv_attention_block(extra_reader):
    """torchvision's in-projection split: q, k, v Sliced off one [L, B, 3E] tensor along its last axis, each
    Reshaped to [L, B*H, D] heads (the Slices' outputs may be views read in place: runtime strided_ok), one
    also read by Shape; with extra_reader, q also feeds an Add (so it must stay a contiguous copy)."""
    l, b, h, d = 13, 2, 3, 8
    e = h * d
    n = helper.make_node
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = [n("Slice", ["qkv", "s0", "s1", "ax"], ["q"]), n("Slice", ["qkv", "s1", "s2", "ax"], ["k"]),
             n("Slice", ["qkv", "s2", "s3", "ax"], ["v"]), n("Shape", ["v"], ["vshape"]),
             n("Reshape", ["q", "shp"], ["q3"]), n("Reshape", ["k", "shp"], ["k3"]), n("Reshape", ["v", "shp"], ["v3"]),
             n("Transpose", ["q3"], ["qt"], perm=[1, 0, 2]), n("Div", ["qt", "c"], ["qs"]),
             n("Transpose", ["k3"], ["kt"], perm=[1, 2, 0]), n("Transpose", ["v3"], ["vt"], perm=[1, 0, 2]),
             n("MatMul", ["qs", "kt"], ["s"]), n("Softmax", ["s"], ["p"], axis=-1), n("MatMul", ["p", "vt"], ["o"]),
             n("Transpose", ["o"], ["y"], perm=[1, 0, 2])]
    outputs = [_f("y", [l, b * h, d]), helper.make_tensor_value_info("vshape", TensorProto.INT64, [3])]
    if extra_reader:
        nodes.append(n("Add", ["q", "q"], ["q2"]))
        outputs.append(_f("q2", [l, b, e]))
    inits = [_c("c", math.sqrt(d)), i64("s0", [0]), i64("s1", [e]), i64("s2", [2 * e]), i64("s3", [3 * e]),
             i64("ax", [-1]), i64("shp", [l, b * h, d])]
    return _model(nodes, [_f("qkv", [l, b, 3 * e])], outputs, inits)


@pytest.mark.parametrize("extra_reader", [False, True])
def test_attention_reads_sliced_qkv_in_place(extra_reader):
    model = vit_qkv_attention_block(extra_reader)
    text = tessera.InferenceSession(model).graph_text()
    assert text.count("tessera.FusedAttention(") == 1, text
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = {"qkv": RNG.standard_normal((13, 2, 72)).astype(np.float32)}
    want = ref.run(None, feeds)
    for threads in (1, 2):
        sess = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads))
        for _ in range(3):  # the recording run, then planned runs (views into the arena)
            got = sess.run(None, feeds)
            assert rel_err(got[0], want[0]) < 1e-5
            np.testing.assert_array_equal(got[1], want[1])
            if extra_reader:
                np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("scale_op,with_mask", [("Div", True), ("Mul", False), ("causal", False), ("vit", False),
                                                ("sdpa", False), ("opset12", True)])
def test_fuse_attention(scale_op, with_mask):
    """(opset12: BERT exported at opset 12, whose Softmax flattens from axis -1: the last axis alone.)"""
    model = {"causal": causal_attention_block, "vit": vit_attention_block, "sdpa": sdpa_attention_block,
             "opset12": lambda: attention_block("Div", True, opset=12)}.get(
        scale_op, lambda: attention_block(scale_op, with_mask))()
    sess = tessera.InferenceSession(model)
    text = sess.graph_text()
    assert text.count("tessera.FusedAttention(") == 1, text
    assert "Softmax(" not in text
    if scale_op != "causal":  # the head split / merge Transposes and Q's (and K's) scaling folded in
        assert "Transpose(" not in text and "Div(" not in text, text
    if scale_op in ("vit", "sdpa"):
        assert " Mul(" not in text, text
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = {a.name: RNG.standard_normal([d for d in a.shape]).astype(np.float32) for a in ref.get_inputs()}
    if with_mask:
        feeds["mask"] = np.where(RNG.random(feeds["mask"].shape) < 0.3, -1e4, 0).astype(np.float32)
    want = ref.run(None, feeds)[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        assert rel_err(got, want) < 1e-5


def _shape_arith_model():
    """y = Reshape(x * 2, [-1, seq]) with the shape computed from Shape(x) at run time, plus a data-dependent
    branch: z = ConstantOfShape(Shape(NonZero(x > 0))) — its length depends on x's values, not its shape."""
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["seq"], axis=0),
             helper.make_node("Unsqueeze", ["seq", "zero_ax"], ["seq1"]),
             helper.make_node("Concat", ["minus1", "seq1"], ["shp"], axis=0),
             helper.make_node("Mul", ["x", "two"], ["x2"]), helper.make_node("Reshape", ["x2", "shp"], ["y"]),
             helper.make_node("Greater", ["x", "zerof"], ["pos"]), helper.make_node("NonZero", ["pos"], ["nz"]),
             helper.make_node("Shape", ["nz"], ["nzs"]), helper.make_node("Gather", ["nzs", "one"], ["count"], axis=0),
             helper.make_node("Unsqueeze", ["count", "zero_ax"], ["count1"]),
             helper.make_node("ConstantOfShape", ["count1"], ["z"],
                              value=numpy_helper.from_array(np.array([7], np.int64)))]
    inits = [i64("one", 1), i64("zero_ax", [0]), i64("minus1", [-1]), _c("two", 2.0), _c("zerof", 0.0)]
    g = helper.make_graph(nodes, "g", [_f("x", ["batch", "seq"])],
                          [_f("y", None), helper.make_tensor_value_info("z", TensorProto.INT64, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()


def test_shape_only_nodes_are_cached_per_shape_but_not_data():
    model = _shape_arith_model()
    sess = tessera.InferenceSession(model)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for shape in [(2, 5), (2, 5), (2, 5), (3, 4), (2, 5)]:
        x = RNG.standard_normal(shape).astype(np.float32)  # a different count of positives each time
        want = ref.run(None, {"x": x})
        got = sess.run(None, {"x": x})
        for g, w in zip(got, want):
            assert g.shape == w.shape and np.array_equal(g, w)


def test_gemm_with_unknown_rank_input_is_fused_and_keeps_gemm_rules():
    """A Gemm whose A has unknown rank (Reshape to a run-time shape) fuses; a run-time A of rank != 2 is still
    an error, as for Gemm."""
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["a"]), helper.make_node("Gemm", ["a", "w", "b"], ["y"])]
    g = helper.make_graph(nodes, "g", [_f("x", [2, 6]), helper.make_tensor_value_info("shape", TensorProto.INT64, [None])],
                          [_f("y", None)], [numpy_helper.from_array(w, "w"), _c("b", RNG.standard_normal(4))])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess = tessera.InferenceSession(model)
    assert "tessera.FusedGemm(" in sess.graph_text()
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x, "shape": np.array([2, 6])})
    got = sess.run(None, {"x": x, "shape": np.array([2, 6])})
    assert rel_err(got[0], want[0]) < 1e-6
    with pytest.raises(tessera.Error, match="rank 2"):
        sess.run(None, {"x": x, "shape": np.array([1, 2, 6])})


def _static_shape_arith_model(dims):
    """The exporters' shape arithmetic around a Reshape (Shape -> Gather -> Unsqueeze -> Concat, Size, and a
    Shape with start / end) over an input of dims `dims`, then a MatMul by a constant 512 x 512 with a bias."""
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "zero_ax"], ["b1"]),
             helper.make_node("Shape", ["x"], ["tail"], start=-1),
             helper.make_node("Concat", ["b1", "minus1", "tail"], ["shp"], axis=0),
             helper.make_node("Reshape", ["x", "shp"], ["a"]), helper.make_node("MatMul", ["a", "w"], ["t"]),
             helper.make_node("Add", ["t", "bias"], ["y"]), helper.make_node("Size", ["x"], ["size"]),
             helper.make_node("Mul", ["size", "two"], ["n"])]
    w = (RNG.standard_normal((512, 512)) / np.sqrt(512)).astype(np.float32)
    inits = [i64("zero", 0), i64("zero_ax", [0]), i64("minus1", [-1]), i64("two", 2), numpy_helper.from_array(w, "w"),
             _c("bias", RNG.standard_normal(512))]
    g = helper.make_graph(nodes, "g", [_f("x", dims)],
                          [_f("y", None), helper.make_tensor_value_info("n", TensorProto.INT64, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()


@pytest.mark.parametrize("dims", [[2, 100, 512], ["batch", 100, 512]])
def test_static_shapes_fold_and_large_gemms_take_strassen(dims):
    """With every dim known, Shape / Size fold to constants, the Reshape's output gets a static shape and the
    200-row GEMM by a 512 x 512 constant takes one level of Strassen-Winograd (fuse_gemm); with a symbolic
    batch the shape arithmetic stays and the rows (at least 100) are too few for it. Where f32 GEMMs take
    AMX (kernel_isa "amx-bf16") both split B for it instead (A may have 32+ rows)."""
    model = _static_shape_arith_model(dims)
    text = tessera.InferenceSession(model).graph_text()
    static = dims[0] == 2
    amx = "amx-bf16" in tessera.kernel_isa().split()
    assert ("= Shape(" not in text) == static and ("= Size(" not in text) == static
    assert ("strassen=1" in text) == (static and not amx), text
    assert ("split=1" in text) == amx, text
    x = RNG.standard_normal((2, 100, 512)).astype(np.float32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})
        assert got[1] == want[1]
        assert got[0].shape == want[0].shape and rel_err(got[0], want[0]) < 1e-5


def _symbolic_batch_model():
    """ViT's patch-embedding shape arithmetic over a symbolic batch: x [batch, 2, 100, 512] reshaped to
    [batch, 2 * 100, 512] by Shape -> Gather -> Mul -> Unsqueeze -> Concat, a class token expanded to
    [batch, 1, 512] through PyTorch's Where(Equal(shape, -1), 1, shape), concatenated, then a MatMul by a
    constant 512 x 512."""
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    mk = helper.make_node
    nodes = [mk("Shape", ["x"], ["s"]),
             mk("Gather", ["s", "i0"], ["b"], axis=0), mk("Gather", ["s", "i1"], ["h"], axis=0),
             mk("Gather", ["s", "i2"], ["w"], axis=0), mk("Gather", ["s", "i3"], ["c"], axis=0),
             mk("Mul", ["h", "w"], ["hw"]), mk("Cast", ["hw"], ["hw64"], to=7),
             mk("Unsqueeze", ["b", "ax0"], ["b1"]), mk("Unsqueeze", ["hw64", "ax0"], ["hw1"]),
             mk("Unsqueeze", ["c", "ax0"], ["c1"]), mk("Concat", ["b1", "hw1", "c1"], ["shp"], axis=0),
             mk("Reshape", ["x", "shp"], ["patches"]),
             mk("Concat", ["b1", "m1", "m1"], ["want"], axis=0), mk("Equal", ["want", "m1x3"], ["eq"]),
             mk("Where", ["eq", "ones3", "want"], ["eshape"]), mk("Expand", ["token", "eshape"], ["tok"]),
             mk("Concat", ["tok", "patches"], ["seq"], axis=1), mk("MatMul", ["seq", "wt"], ["y"])]
    wt = (RNG.standard_normal((512, 512)) / np.sqrt(512)).astype(np.float32)
    inits = [i64("i0", 0), i64("i1", 1), i64("i2", 2), i64("i3", 3), i64("ax0", [0]), i64("m1", [-1]),
             i64("m1x3", [-1, -1, -1]), i64("ones3", [1, 1, 1]), numpy_helper.from_array(wt, "wt"),
             numpy_helper.from_array(RNG.standard_normal((1, 1, 512)).astype(np.float32), "token")]
    g = helper.make_graph(nodes, "g", [_f("x", ["batch", 2, 100, 512])], [_f("y", None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()


def test_shape_values_carry_symbolic_dims():
    """The shape arithmetic's known parts fold and its symbolic batch stays a symbol: the MatMul's A is
    [batch, 201, 512], so its 201+ rows take Strassen-Winograd (or, where f32 GEMMs take AMX, B split for
    it); batches 1 and 3 against onnxruntime."""
    model = _symbolic_batch_model()
    text = tessera.InferenceSession(model).graph_text()
    chosen = "split=1" if "amx-bf16" in tessera.kernel_isa().split() else "strassen=1"
    assert "float32[batch,201,512] = tessera.FusedGemm(" in text and chosen in text, text
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = RNG.standard_normal((batch, 2, 100, 512)).astype(np.float32)
        want = ref.run(None, {"x": x})[0]
        for threads in (1, 2):
            got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
            assert got.shape == want.shape and rel_err(got, want) < 1e-5


def _decode_step_model():
    """A decoder step as PyTorch exports it: x [batch, 1, 512] plus a position embedding gathered at
    Range(past_len, past_len + 1), then a 512 x 1024 MatMul with bias and Relu, and a classifier-style
    Gemm [batch, 1024] x [1024, 300]^T."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((512, 1024)).astype(np.float32) * 0.05
    w2 = rng.standard_normal((300, 1024)).astype(np.float32) * 0.05
    pos = rng.standard_normal((64, 512)).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["past"], ["ps"]),
        helper.make_node("Gather", ["ps", "two"], ["plen"], axis=0),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "one"], ["seq"], axis=0),
        helper.make_node("Add", ["plen", "seq"], ["end"]),
        helper.make_node("Range", ["plen", "end", "one"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "zero1"], ["ri"]),
        helper.make_node("Gather", ["pos", "ri"], ["pe"], axis=0),
        helper.make_node("Add", ["x", "pe"], ["h"]),
        helper.make_node("MatMul", ["h", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["mb"]),
        helper.make_node("Relu", ["mb"], ["y"]),
        helper.make_node("Reshape", ["y", "flat"], ["y2"]),
        helper.make_node("Gemm", ["y2", "w2"], ["logits"], transB=1),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(pos, "pos"),
             numpy_helper.from_array(rng.standard_normal(1024).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array([0], np.int64), "zero1"),
             numpy_helper.from_array(np.array([-1, 1024], np.int64), "flat")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 512]),
              helper.make_tensor_value_info("past", TensorProto.FLOAT, ["batch", 4, "past_len", 8])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 300])]
    return _model(nodes, inputs, outputs, inits)


def test_decode_step_gemvs_take_coded_weights(monkeypatch):
    """Range(past_len, past_len + 1) has one element (affine shape values), so the MatMul's A is
    [batch, 1, 512]: one row per batch item, and both GEMMs take coded weights where the CPU has
    AVX-512 VBMI (TESSERA_CODED=1: the model's 3.5 MB would otherwise stay in the L3 and keep f32); batches 1 and
    3 (the row-group kernel) against onnxruntime at 1 and 2 threads."""
    model = _decode_step_model()
    assert "coded=1" not in tessera.InferenceSession(model).graph_text()  # small enough to stay cached
    monkeypatch.setenv("TESSERA_CODED", "1")
    text = tessera.InferenceSession(model).graph_text()
    assert "float32[batch,1,1024] = tessera.FusedGemm(" in text, text
    coded = "avx512vbmi" in tessera.kernel_isa().split()
    assert text.count("coded=1") == (2 if coded else 0), text
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for batch, past in ((1, 5), (3, 9)):
        feeds = {"x": RNG.standard_normal((batch, 1, 512)).astype(np.float32),
                 "past": RNG.standard_normal((batch, 4, past, 8)).astype(np.float32)}
        want = ref.run(None, feeds)[0]
        for threads in (1, 2):
            got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
            assert got.shape == want.shape and rel_err(got, want) < 1e-5


def test_reshape_keeps_a_lone_symbol_and_codes_only_rows_per_item(monkeypatch):
    """Reshape(-1, K) of [batch, 1, K] is [batch, K] (the known dims' products agree), of [seq, batch, K]
    stays unknown (seq x batch rows): only the first GEMM takes coded weights (one row per batch item); the
    second, whose rows may be many (ViT's attention output), keeps f32 panels. Both against onnxruntime."""
    monkeypatch.setenv("TESSERA_CODED", "1")
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["x2"]),
             helper.make_node("Gemm", ["x2", "w"], ["y"], transB=1),
             helper.make_node("Reshape", ["s", "flat"], ["s2"]),
             helper.make_node("Gemm", ["s2", "w"], ["z"], transB=1)]
    inits = [numpy_helper.from_array(rng.standard_normal((300, 512)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([-1, 512], np.int64), "flat")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 512]),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, [5, "batch", 512])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 300]),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, 300])]
    model = _model(nodes, inputs, outputs, inits)
    text = tessera.InferenceSession(model).graph_text()
    assert "%y: float32[batch,300] = tessera.FusedGemm(" in text, text
    coded = "avx512vbmi" in tessera.kernel_isa().split()
    lines = [ln for ln in text.splitlines() if "tessera.FusedGemm(" in ln]
    assert len(lines) == 2, text
    assert ("coded=1" in next(ln for ln in lines if "%y:" in ln)) == coded, text
    assert "coded=1" not in next(ln for ln in lines if "%z:" in ln), text
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        feeds = {"x": rng.standard_normal((batch, 1, 512)).astype(np.float32),
                 "s": rng.standard_normal((5, batch, 512)).astype(np.float32)}
        for w, o in zip(ref.run(None, feeds), tessera.InferenceSession(model).run(None, feeds)):
            assert w.shape == o.shape and rel_err(o, w) < 1e-5


def test_affine_shape_values():
    """Shape values affine in a symbol: (past_len + 4) - past_len folds to 4, so the Reshape's target is
    constant; Range(past_len + 2, past_len + 5) has 3 elements; batch * 6 stays unknown but computes."""
    nodes = [
        helper.make_node("Shape", ["past"], ["ps"]),
        helper.make_node("Gather", ["ps", "two"], ["plen"], axis=0),
        helper.make_node("Add", ["plen", "four"], ["p4"]),
        helper.make_node("Sub", ["p4", "plen"], ["d"]),
        helper.make_node("Unsqueeze", ["d", "zero1"], ["d1"]),
        helper.make_node("Concat", ["d1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
        helper.make_node("Add", ["plen", "two"], ["s"]),
        helper.make_node("Add", ["plen", "five"], ["e"]),
        helper.make_node("Range", ["s", "e", "one"], ["r"]),
        helper.make_node("Gather", ["ps", "zero"], ["b"], axis=0),
        helper.make_node("Mul", ["b", "six"], ["b6"]),
        helper.make_node("Unsqueeze", ["b6", "zero1"], ["b61"]),
        helper.make_node("Concat", ["b61", "minus1"], ["fshape"], axis=0),
        helper.make_node("Reshape", ["past", "fshape"], ["flat"]),
    ]
    ints = {"two": 2, "four": 4, "five": 5, "one": 1, "zero": 0, "six": 6}
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
    inits += [numpy_helper.from_array(np.array([0], np.int64), "zero1"),
              numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 6]),
              helper.make_tensor_value_info("past", TensorProto.FLOAT, ["batch", 2, "past_len", 3])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("r", TensorProto.INT64, None),
               helper.make_tensor_value_info("flat", TensorProto.FLOAT, None)]
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    text = tessera.InferenceSession(model).graph_text()
    assert "%y: float32[4,12] = Reshape(" in text, text
    assert "%r: int64[3] = Range(" in text, text
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for batch, past in ((1, 5), (2, 7)):
        feeds = {"x": RNG.standard_normal((8, 6)).astype(np.float32),
                 "past": RNG.standard_normal((batch, 2, past, 3)).astype(np.float32)}
        want = ref.run(None, feeds)
        got = tessera.InferenceSession(model).run(None, feeds)
        for w, o in zip(want, got):
            assert w.shape == o.shape and np.array_equal(w, o)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceMax",
                                "ReduceMin"])
@pytest.mark.parametrize("axes,keepdims", [(None, 0), ([2, 3], 1), ([1], 0), ([-1], 1), ([0, 2], 1), ([], 1)])
def test_reductions_match_onnxruntime(op, axes, keepdims):
    """The float32 reductions over one contiguous run of axes (the tuned kernel) and the others (the reference:
    [0, 2], an empty list with noop_with_empty_axes) against onnxruntime, at 1 and 2 threads."""
    noop = 1 if axes == [] else 0
    inputs = ["x"] + ([] if axes is None else ["axes"])
    opset = 13 if op == "ReduceSum" else 18
    node = helper.make_node(op, inputs, ["y"], keepdims=keepdims, noop_with_empty_axes=noop)
    inits = [] if axes is None else [numpy_helper.from_array(np.array(axes, np.int64), "axes")]
    g = helper.make_graph([node], "g", [_f("x", [2, 24, 33, 37])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9).SerializeToString()
    x = np.random.default_rng(7).standard_normal((2, 24, 33, 37)).astype(np.float32)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    want = ref.run(None, {"x": x})[0]
    # a sum's rounding is relative to the sum of the magnitudes, not to the (possibly cancelled) result: sums
    # and means are held to 1e-5 of the same reduction of |x|
    scale = np.abs(ref.run(None, {"x": np.abs(x)})[0]) if op in ("ReduceSum", "ReduceMean") else np.abs(want)
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
        assert got.shape == want.shape
        err = np.abs(got.astype(np.float64) - want).max() / max(float(scale.max()), 1e-30)
        assert err < 1e-5, (op, axes, err)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 24, 33, 37), (1, 3, 7), (2, 5, 3, 4, 6), (3, 17, 1, 1)])
def test_global_pools_match_onnxruntime(op, shape):
    """GlobalAveragePool / GlobalMaxPool over NCHW (and 1-d, 3-d spatial) through the tuned reduction, against
    onnxruntime at 1 and 2 threads; a NaN in a plane comes out as NaN in the max, as numpy's does."""
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "g", [_f("x", list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    x = RNG.standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
        assert got.shape == want.shape and rel_err(got, want) < 1e-5, (op, shape, rel_err(got, want))
    if op == "GlobalMaxPool":
        x.reshape(-1)[0] = np.nan
        got = tessera.InferenceSession(model).run(None, {"x": x})[0]
        assert np.isnan(got.reshape(-1)[0]) and not np.isnan(got.reshape(-1)[1:]).any()


@pytest.mark.parametrize("exponent,becomes", [(2.0, "Mul"), (0.5, "Sqrt"), (3.0, "Mul"), (1.0, "Mul"),
                                               (1.7, "pow")])
def test_pow_by_two_or_a_half_joins_the_elementwise_group(exponent, becomes):
    """RMSNorm's Pow(x, 2) (and a Pow by 0.5, 3, 1) becomes Mul(x, x) (Sqrt(x), Mul(Mul(x, x), x), Mul(x, 1))
    and fuses with what follows; other f32 exponents join as the programs' pow instruction."""
    n = helper.make_node
    model = _unary_model([n("Pow", ["x", "e"], ["p"]), n("Add", ["p", "one"], ["y"])],
                         [_c("e", exponent), _c("one", 1.0)])
    text = tessera.InferenceSession(model).graph_text()
    assert "Pow(" not in text and text.count("tessera.FusedElementwise(") == 1, text
    assert ("program=[24," in text) == (becomes == "pow"), text  # 24: pow's op code (core/ew_program.def)
    x = np.abs(RNG.standard_normal((3, 5, 40))).astype(np.float32) + 0.1  # Sqrt and Pow(., 0.5) want x >= 0
    _check_vs_ort(model, feeds={"x": x})


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("b_shape,m_shape", [
    ((3, 7, 7), (6, 1, 7, 7)),        # Swin's scores + [heads, L, L] bias + [windows, 1, L, L] mask
    ((1, 3, 1, 7), (6, 1, 7, 1)),     # row and column broadcasts that no single view fits
    ((6, 1, 7, 1), (1, 3, 1, 7)),
])
def test_elementwise_group_with_inputs_no_single_view_fits(b_shape, m_shape, threads):
    """A fused elementwise group whose inputs broadcast in ways no one [outer, inner] view takes: the leading
    dims are looped over, each input's block at its broadcast offset; against onnxruntime."""
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Add", ["s", "m"], ["t"]),
             helper.make_node("Sigmoid", ["t"], ["y"])]
    b = _model(nodes, [_f("x", [6, 3, 7, 7]), _f("m", list(m_shape))], [_f("y", [6, 3, 7, 7])],
               [_c("b", RNG.standard_normal(b_shape))])
    feeds = {"x": RNG.standard_normal((6, 3, 7, 7)).astype(np.float32),
             "m": RNG.standard_normal(m_shape).astype(np.float32)}
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
    assert got.shape == want.shape and rel_err(got, want) <= 1e-6


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("keepdims,last", [(1, 0), (0, 0), (1, 1)])
def test_arg_extreme_last_axis_matches_onnxruntime(op, keepdims, last):
    """ArgMax / ArgMin over the last axis (a greedy decoder's token choice) on the tuned kernel: ties among
    small integers (first or, with select_last_index, last), rows of a vocabulary's length; onnxruntime's
    indices at one and two threads."""
    x = RNG.integers(-20, 20, (3, 5, 5003)).astype(np.float32)
    model = _model([helper.make_node(op, ["x"], ["y"], axis=-1, keepdims=keepdims, select_last_index=last)],
                   [_f("x", [3, 5, 5003])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, [3, 5, 1] if keepdims else [3, 5])], [],
                   opset=13)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("qtype", [TensorProto.UINT8, TensorProto.INT8])
@pytest.mark.parametrize("with_zp", [True, False])
@pytest.mark.parametrize("n", [7, 64, 1003, 70001])
def test_quantize_dequantize_per_tensor_match_onnxruntime(qtype, with_zp, n):
    """QuantizeLinear and DequantizeLinear with one scale (a QDQ model's activations) on the tuned kernels:
    ties to even, clamping, infinities, lengths with and without a vector tail, two threads past the grain;
    onnxruntime's bytes and floats exactly — but a NaN, which quantizes to the zero point (the reference's
    round(NaN) = 0, plus the zero point; onnxruntime's gives 0)."""
    np_q = np.uint8 if qtype == TensorProto.UINT8 else np.int8
    scale = np.float32(0.05)
    x = (RNG.standard_normal(n) * 4).astype(np.float32)
    x[:8] = [0.025, 0.075, -0.025, 1e9, -1e9, np.inf, -np.inf, np.nan][: min(8, n)] if n >= 8 else x[:8]
    zp = [numpy_helper.from_array(np.array(3 if qtype == TensorProto.UINT8 else -5, np_q), "z")] if with_zp else []
    zin = ["z"] if with_zp else []
    if not with_zp and qtype == TensorProto.INT8:
        pytest.skip("without a zero point QuantizeLinear makes uint8")
    q = _model([helper.make_node("QuantizeLinear", ["x", "s"] + zin, ["y"])], [_f("x", [n])],
               [helper.make_tensor_value_info("y", qtype, [n])], [_c("s", scale)] + zp, opset=13)
    d = _model([helper.make_node("DequantizeLinear", ["x", "s"] + zin, ["y"])],
               [helper.make_tensor_value_info("x", qtype, [n])], [_f("y", [n])], [_c("s", scale)] + zp, opset=13)
    xq = np.random.default_rng(n).integers(np.iinfo(np_q).min, np.iinfo(np_q).max + 1, n).astype(np_q)
    for model, feed in ((q, x), (d, xq)):
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": feed})[0]
        if model is q:
            want[np.isnan(x)] = 3 if with_zp and qtype == TensorProto.UINT8 else -5 if with_zp else 0
        for threads in (1, 2):
            got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"x": feed})[0]
            np.testing.assert_array_equal(got, want)


def _split_gemm_model(trans_b, rows=0):
    """[batch, seq, 384] x a 384 x 200 constant (MatMul, or Gemm with transB over [rows, 384]: a rank-2 A of
    one symbolic dim is taken for a batch of GEMVs) + bias + a residual, then Gelu: the epilogue the AMX
    path's blocks finish."""
    w = (RNG.standard_normal((200, 384) if trans_b else (384, 200)) / np.sqrt(384)).astype(np.float32)
    bias = RNG.standard_normal(200).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")]
    if trans_b:
        nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["p"], transB=1)]
        ins = [_f("x", [rows, 384]), _f("r", [rows, 200])]
    else:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["p"])]
        ins = [_f("x", ["batch", "seq", 384]), _f("r", ["batch", "seq", 200])]
    nodes += [helper.make_node("Add", ["p", "r"], ["s"]), helper.make_node("Gelu", ["s"], ["y"])]
    g = helper.make_graph(nodes, "g", ins, [_f("y", None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9).SerializeToString()


@pytest.mark.parametrize("trans_b", [False, True])
def test_amx_split_gemm_matches_onnxruntime(trans_b):
    """Where f32 GEMMs take AMX (kernel_isa "amx-bf16"), a GEMM whose A may have 32+ rows keeps B's f32
    packing and its split (FusedGemm split=1): 1-31 rows run the f32 kernel, 32+ the tiles; both within f32
    accuracy of onnxruntime, with the bias, residual and Gelu fused, at one and two threads. An A holding Inf
    or NaN takes the f32 path (Inf stays Inf where the split's zero pieces would make NaN)."""
    amx = "amx-bf16" in tessera.kernel_isa().split()
    model = _split_gemm_model(trans_b)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for rows in (1, 16, 31, 32, 33, 97, 200):
        if trans_b:  # rows known: split from 32
            model = _split_gemm_model(trans_b, rows)
            ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        text = tessera.InferenceSession(model).graph_text()
        assert ("split=1" in text) == (amx and (not trans_b or rows >= 32)), text
        shape = (rows, 384) if trans_b else (1, rows, 384)
        x = RNG.standard_normal(shape).astype(np.float32)
        r = RNG.standard_normal(shape[:-1] + (200,)).astype(np.float32)
        want = ref.run(None, {"x": x, "r": r})[0]
        for threads in (1, 2):
            got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(
                None, {"x": x, "r": r})[0]
            assert rel_err(got, want) < 2e-6, (rows, threads, rel_err(got, want))
    shape = (64, 384) if trans_b else (1, 64, 384)
    if trans_b:
        model = _split_gemm_model(trans_b, 64)
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = np.ones(shape, np.float32)
    x[..., 5, 7] = np.inf
    r = np.zeros(shape[:-1] + (200,), np.float32)
    got = tessera.InferenceSession(model).run(None, {"x": x, "r": r})[0]
    want = ref.run(None, {"x": x, "r": r})[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
