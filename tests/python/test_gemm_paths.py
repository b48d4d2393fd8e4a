"""The x86 GEMM paths as the runtime reaches them, against numpy in float64: batched MatMul
(attention shapes, threads over the batch), MatMul with constant weights (FusedGemm over
prepacked B, with bias and Relu in the epilogue) at small M, and the M = 1 GEMV over a
dynamic B, at one and two threads."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _rel(got, want):
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(12, 16, 64, 16), (3, 5, 7, 9), (2, 1, 64, 33), (4, 33, 130, 65)])
def test_batched_matmul(threads, shape):
    b, m, k, n = shape
    x = RNG.standard_normal((b, m, k)).astype(np.float32)
    y = RNG.standard_normal((b, k, n)).astype(np.float32)
    model = _model([helper.make_node("MatMul", ["x", "y"], ["z"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, m, k]),
                    helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, k, n])],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], [])
    (z,) = tessera.InferenceSession(model, threads=threads).run(None, {"x": x, "y": y})
    assert _rel(z, x.astype(np.float64) @ y.astype(np.float64)) <= 1e-5


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m", [1, 2, 7, 16, 33])
@pytest.mark.parametrize("kn", [(300, 200), (768, 77), (1, 65)])
def test_fused_gemm_small_m(threads, m, kn):
    k, n = kn
    x = RNG.standard_normal((m, k)).astype(np.float32)
    w = (RNG.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    model = _model([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "bias"], ["u"]),
                    helper.make_node("Relu", ["u"], ["z"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    (z,) = tessera.InferenceSession(model, threads=threads).run(None, {"x": x})
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + bias, 0.0)
    assert _rel(z, want) <= 1e-5


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kn", [(4096, 1000), (3, 17), (513, 4099)])
def test_gemv_dynamic_b(threads, kn):
    k, n = kn
    x = RNG.standard_normal((1, k)).astype(np.float32)
    y = RNG.standard_normal((k, n)).astype(np.float32)
    model = _model([helper.make_node("MatMul", ["x", "y"], ["z"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k]),
                    helper.make_tensor_value_info("y", TensorProto.FLOAT, [k, n])],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], [])
    (z,) = tessera.InferenceSession(model, threads=threads).run(None, {"x": x, "y": y})
    assert _rel(z, x.astype(np.float64) @ y.astype(np.float64)) <= 1e-5
