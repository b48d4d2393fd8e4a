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


# A Transpose of the last two dims read by a MatMul is a strided view its GEMM takes as a transposed operand
# (session.cpp strided_ok, transpose_x86, matmul_x86): B or A, batched, 4-D, B shared across the batch, and the
# cases that must still copy — the transposed value also a graph output or read by another node, a perm that
# moves batch dims.
_T_CASES = {
    "b_dlrm": ((128, 27, 64), (128, 27, 64), [0, 2, 1], 1),
    "b_small": ((3, 5, 7), (3, 9, 7), [0, 2, 1], 1),
    "b_partial_tiles": ((2, 33, 130), (2, 17, 130), [0, 2, 1], 1),
    "b_4d": ((2, 3, 17, 40), (2, 3, 19, 40), [0, 1, 3, 2], 1),
    "b_shared_2d": ((4, 6, 50), (21, 50), [1, 0], 1),
    "a_batched": ((3, 40, 12), (3, 40, 24), [0, 2, 1], 0),
    "a_with_2d_b": ((9, 18), (5, 9, 31), [0, 2, 1], 0),
    "batch_perm_copies": ((6, 4, 8), (5, 6, 8), [1, 2, 0], 1),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", sorted(_T_CASES))
@pytest.mark.parametrize("extra_reader", [None, "graph_output", "relu"])
def test_matmul_transposed_operand(threads, case, extra_reader):
    xs, ts, perm, side = _T_CASES[case]
    x = RNG.standard_normal(xs).astype(np.float32)
    t = RNG.standard_normal(ts).astype(np.float32)
    tt = np.transpose(t, perm)
    nodes = [helper.make_node("Transpose", ["t"], ["tt"], perm=perm),
             helper.make_node("MatMul", ["x", "tt"] if side == 1 else ["tt", "x"], ["z"])]
    outputs = [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]
    if extra_reader == "graph_output":
        outputs.append(helper.make_tensor_value_info("tt", TensorProto.FLOAT, None))
    elif extra_reader == "relu":
        nodes.append(helper.make_node("Relu", ["tt"], ["r"]))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, None))
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs)),
                           helper.make_tensor_value_info("t", TensorProto.FLOAT, list(ts))], outputs, [])
    sess = tessera.InferenceSession(model, threads=threads)
    want = x.astype(np.float64) @ tt.astype(np.float64) if side == 1 else tt.astype(np.float64) @ x.astype(
        np.float64)
    for _ in range(2):  # the first run records the memory plan, the second runs it
        got = sess.run(None, {"x": x, "t": t})
        assert got[0].shape == want.shape
        assert _rel(got[0], want) <= 1e-5
        if extra_reader == "graph_output":
            assert np.array_equal(got[1], tt)
        elif extra_reader == "relu":
            assert np.array_equal(got[1], np.maximum(tt, 0))


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
