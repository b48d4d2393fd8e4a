"""LSTM and GRU on the tuned kernels (kernels/x86/rnn.h: one GEMM of every step's input products, a GEMV per step, the
gates as vector passes; bidirectional ones a direction per thread at two threads, or one after the other with
their GEMVs split where the threads' shares of R fit their L2s), against onnxruntime:
every direction, with and without biases and initial states, batches, all three outputs; and the forms the
kernel leaves to the reference (sequence lengths, clip, peepholes, other activations). Constant weights go
through the pack_recurrent pass (tessera.PackedRecurrent: W and R packed once; those forms then run its
reference kernel, which reads them back); weights fed as inputs stay in place (R packed per run from 16
steps on)."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(41)
S, B, I, H = 9, 3, 10, 16


def _r_scale():
    """R's scale: 0.3 at the tests' 16 units; 1.2 / sqrt(H) for wider ones (a recurrence that does not amplify
    its rounding over the steps)."""
    return min(0.3, 1.2 / np.sqrt(H))


def _lstm_model(direction, bias, init, outs, extra_inputs=(), seq=S, **attrs):
    d = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array((RNG.standard_normal((d, 4 * H, I)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((RNG.standard_normal((d, 4 * H, H)) * _r_scale()).astype(np.float32), "r")]
    ins = ["x", "w", "r", "", "", "", "", ""]
    if bias:
        inits.append(numpy_helper.from_array((RNG.standard_normal((d, 8 * H)) * 0.3).astype(np.float32), "b"))
        ins[3] = "b"
    if init:
        for k, name in ((5, "h0"), (6, "c0")):
            inits.append(numpy_helper.from_array(RNG.standard_normal((d, B, H)).astype(np.float32), name))
            ins[k] = name
    for k, name, value in extra_inputs:
        inits.append(numpy_helper.from_array(value, name))
        ins[k] = name
    while ins and not ins[-1]:
        ins.pop()
    names = ["y", "yh", "yc"]
    node = helper.make_node("LSTM", ins, [n if n in outs else "" for n in names], hidden_size=H,
                            direction=direction, **attrs)
    x_shape = [B, seq, I] if attrs.get("layout") else [seq, B, I]
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m.SerializeToString(), x_shape


def _weights_as_inputs(b):
    """The model with its W and R fed at run time (not constants: no packing pass), and those feeds."""
    m = onnx.load_from_string(b)
    feeds = {}
    for init in list(m.graph.initializer):
        if init.name in ("w", "r"):
            feeds[init.name] = numpy_helper.to_array(init)
            m.graph.input.append(helper.make_tensor_value_info(init.name, TensorProto.FLOAT, list(init.dims)))
            m.graph.initializer.remove(init)
    return m.SerializeToString(), feeds


def _check(b, x_shape, threads, const_weights=True, tol=2e-5):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    feeds = {}
    if not const_weights:
        b, feeds = _weights_as_inputs(b)
    feeds["x"] = x
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, feeds)
    assert len(got) == len(want)
    for a, w in zip(got, want):
        assert a.shape == w.shape and np.abs(a - w).max() <= tol * max(1.0, np.abs(w).max())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("bias,init", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("outs", [("y", "yh", "yc"), ("yh",)])
def test_lstm_matches_onnxruntime(direction, bias, init, outs, threads):
    _check(*_lstm_model(direction, bias, init, outs), threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("const_weights", [True, False])
@pytest.mark.parametrize("seq", [16, 23])
def test_long_sequences_read_packed_weights(direction, const_weights, seq, threads):
    """From 16 steps on R is read as GEMM panels: packed by the pass (constant weights) or per run."""
    _check(*_lstm_model(direction, True, True, ("y", "yh", "yc"), seq=seq), threads, const_weights)
    b, _ = _gru_model(direction, True, True, ("y", "yh"), seq=seq)
    _check(b, [seq, B, I], threads, const_weights)


def test_pack_recurrent_rewrites_constant_weights(tmp_path):
    """Constant W and R: tessera.PackedRecurrent with both packed (the originals gone); fed ones: the ONNX op."""
    b, _ = _lstm_model("bidirectional", True, True, ("y",))
    exe = os.path.join(os.path.dirname(tessera.__file__), "bin", "tessera")
    if not os.path.exists(exe):
        pytest.skip("no tessera command")

    def ir(model):
        p = tmp_path / "m.onnx"
        p.write_bytes(model)
        return subprocess.run([exe, "info", str(p), "--ir"], capture_output=True, text=True,
                              check=True).stdout.split("FLOPs (estimate)")[1]

    packed = ir(b)
    assert packed.count("tessera.PackedRecurrent(") == 1 and "= LSTM(" not in packed, packed
    assert 'cell="LSTM"' in packed and f"input_size={I}" in packed and f"hidden_size={H}" in packed
    assert "%w:" not in packed and "%r:" not in packed  # the unpacked weights are freed
    fed = ir(_weights_as_inputs(b)[0])
    assert "PackedRecurrent" not in fed and "= LSTM(" in fed, fed


@pytest.mark.parametrize("case", ["lens", "clip", "peepholes", "activations"])
def test_lstm_forms_left_to_the_reference(case):
    extra, attrs = (), {}
    if case == "lens":
        extra = ((4, "lens", np.array([S, 4, 1], np.int32)),)
    elif case == "clip":
        attrs = dict(clip=0.5)
    elif case == "peepholes":
        extra = ((7, "p", (RNG.standard_normal((2, 3 * H)) * 0.3).astype(np.float32)),)
    else:
        attrs = dict(activations=["HardSigmoid", "Tanh", "Tanh"] * 2)
    _check(*_lstm_model("bidirectional", True, True, ("y", "yh", "yc"), extra, **attrs), 2)


def _gru_model(direction, bias, init, outs, lbr=1, seq=S):
    d = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array((RNG.standard_normal((d, 3 * H, I)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((RNG.standard_normal((d, 3 * H, H)) * _r_scale()).astype(np.float32), "r")]
    ins = ["x", "w", "r", "", "", ""]
    if bias:
        inits.append(numpy_helper.from_array((RNG.standard_normal((d, 6 * H)) * 0.3).astype(np.float32), "b"))
        ins[3] = "b"
    if init:
        inits.append(numpy_helper.from_array(RNG.standard_normal((d, B, H)).astype(np.float32), "h0"))
        ins[5] = "h0"
    while ins and not ins[-1]:
        ins.pop()
    node = helper.make_node("GRU", ins, [n if n in outs else "" for n in ("y", "yh")], hidden_size=H,
                            direction=direction, linear_before_reset=lbr)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, B, I])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m.SerializeToString(), [seq, B, I]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("bias,init", [(True, True), (False, False)])
@pytest.mark.parametrize("lbr", [1, 0])  # 0: the reference kernel
def test_gru_matches_onnxruntime(direction, bias, init, lbr, threads):
    _check(*_gru_model(direction, bias, init, ("y", "yh"), lbr), threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_wide_bidirectional_recurrences(threads, monkeypatch):
    """Recurrent weights past a core's L2 whose halves fit two (LSTM of 384: 2.4 MB of R a direction, GRU of 448:
    2.4 MB): where each share fits (a 2 MiB L2, as on the Xeon VM) the directions run one after the other with
    their GEMVs split over the threads, elsewhere a direction per thread; both against onnxruntime (sums of
    384-448 products: 1e-4)."""
    monkeypatch.setattr(__import__(__name__), "H", 384)
    _check(*_lstm_model("bidirectional", True, True, ("y", "yh", "yc"), seq=17), threads, tol=1e-4)
    monkeypatch.setattr(__import__(__name__), "H", 448)
    b, _ = _gru_model("bidirectional", True, True, ("y", "yh"), seq=17)
    _check(b, [17, B, I], threads, tol=1e-4)
