"""tessera.InferenceSession against onnxruntime on small models built here."""

from __future__ import annotations

import platform
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

import tessera

ml_dtypes = pytest.importorskip("ml_dtypes")
ort = pytest.importorskip("onnxruntime")

OPSET = 21


from graph_helpers import HAVE_IDENTITY, PASS_OP, passthrough_node  # noqa: E402,F401


def make_model(nodes, inputs, outputs, initializers=(), opset=OPSET, ir_version=10):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def identity_model(elem_type, shape):
    node, inits = passthrough_node("x", "y", name="id", rank=len(shape))
    return make_model([node], [helper.make_tensor_value_info("x", elem_type, shape)],
                      [helper.make_tensor_value_info("y", elem_type, shape)], inits)


def session_or_skip(model, **kw):
    """A session, or a skip while the kernels the model needs have not landed."""
    try:
        return tessera.InferenceSession(model.SerializeToString(), **kw)
    except tessera.Unsupported as e:
        pytest.skip(f"not yet supported by Tessera: {e}")


def run_or_skip(sess, feeds, names=None):
    try:
        return sess.run(names, feeds)
    except tessera.Unsupported as e:
        pytest.skip(f"not yet supported by Tessera: {e}")


def ort_run(model, feeds):
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


# ---------------------------------------------------------------- dtypes

RNG = np.random.default_rng(0)

NUMERIC = [
    (TP.FLOAT, np.float32), (TP.DOUBLE, np.float64), (TP.FLOAT16, np.float16),
    (TP.INT8, np.int8), (TP.INT16, np.int16), (TP.INT32, np.int32), (TP.INT64, np.int64),
    (TP.UINT8, np.uint8), (TP.UINT16, np.uint16), (TP.UINT32, np.uint32), (TP.UINT64, np.uint64),
    (TP.BOOL, np.bool_), (TP.COMPLEX64, np.complex64), (TP.COMPLEX128, np.complex128),
]


def sample(dtype, shape):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = RNG.integers(0, 100, shape).astype(dtype)
        flat = vals.reshape(-1)
        if flat.size >= 2:
            flat[0], flat[-1] = info.min, info.max  # extremes survive the trip
        return vals
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    vals = RNG.standard_normal(shape).astype(dtype)
    return vals


@pytest.mark.parametrize("elem_type,np_type", NUMERIC, ids=lambda v: getattr(v, "__name__", str(v)))
def test_identity_roundtrip_numeric(elem_type, np_type):
    sess = session_or_skip(identity_model(elem_type, [2, 3]))
    x = sample(np_type, (2, 3))
    (y,) = run_or_skip(sess, {"x": x})
    assert y.dtype == np.dtype(np_type)
    assert y.shape == (2, 3)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("elem_type,np_type", NUMERIC[:3], ids=["f32", "f64", "f16"])
def test_identity_nan_inf_survive(elem_type, np_type):
    sess = session_or_skip(identity_model(elem_type, [4]))
    x = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np_type)
    (y,) = run_or_skip(sess, {"x": x})
    np.testing.assert_array_equal(np.isnan(y), np.isnan(x))
    np.testing.assert_array_equal(y[1:], x[1:])
    assert np.signbit(y[3])


NARROW = [
    (TP.BFLOAT16, "bfloat16"), (TP.FLOAT8E4M3FN, "float8_e4m3fn"), (TP.FLOAT8E4M3FNUZ, "float8_e4m3fnuz"),
    (TP.FLOAT8E5M2, "float8_e5m2"), (TP.FLOAT8E5M2FNUZ, "float8_e5m2fnuz"),
]


@pytest.mark.parametrize("elem_type,name", NARROW, ids=[n for _, n in NARROW])
def test_identity_roundtrip_narrow_float(elem_type, name):
    dt = np.dtype(getattr(ml_dtypes, name))
    sess = session_or_skip(identity_model(elem_type, [3, 4]))
    x = RNG.uniform(-4, 4, (3, 4)).astype(dt)
    (y,) = run_or_skip(sess, {"x": x})
    assert y.dtype == dt
    np.testing.assert_array_equal(y.view(np.uint8 if dt.itemsize == 1 else np.uint16),
                                  x.view(np.uint8 if dt.itemsize == 1 else np.uint16))


@pytest.mark.parametrize("elem_type,name,lo,hi", [(TP.INT4, "int4", -8, 7), (TP.UINT4, "uint4", 0, 15)])
def test_identity_roundtrip_int4(elem_type, name, lo, hi):
    dt = np.dtype(getattr(ml_dtypes, name))
    sess = session_or_skip(identity_model(elem_type, [16]))
    x = np.arange(lo, hi + 1).astype(dt)
    (y,) = run_or_skip(sess, {"x": x})
    assert y.dtype == dt
    np.testing.assert_array_equal(y.astype(np.int64), np.arange(lo, hi + 1))


def test_identity_roundtrip_strings():
    sess = session_or_skip(identity_model(TP.STRING, [2, 2]))
    for x in (np.array([["a", "bc"], ["", "Ünïcødé ✓"]]),
              np.array([["a", "bc"], ["", "z"]], dtype=object)):
        (y,) = run_or_skip(sess, {"x": x})
        assert y.shape == (2, 2)
        assert y.tolist() == x.tolist()
    ref = ort_run(identity_model(TP.STRING, [2, 2]), {"x": np.array([["a", "b"], ["c", "d"]], dtype=object)})
    (y,) = run_or_skip(sess, {"x": np.array([["a", "b"], ["c", "d"]], dtype=object)})
    assert y.dtype == ref[0].dtype


def test_non_contiguous_and_scalar_and_list_inputs():
    sess = session_or_skip(identity_model(TP.FLOAT, [3, 2]))
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = run_or_skip(sess, {"x": base.T})  # a transposed view
    np.testing.assert_array_equal(y, base.T)
    (y,) = run_or_skip(sess, {"x": [[1, 2], [3, 4], [5, 6]]})  # a list becomes float32
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.arange(1, 7, dtype=np.float32).reshape(3, 2))
    sess0 = session_or_skip(identity_model(TP.INT64, []))
    (y,) = run_or_skip(sess0, {"x": 7})
    assert y.shape == () and y.dtype == np.int64 and int(y) == 7


def test_outputs_are_independent_copies():
    sess = session_or_skip(identity_model(TP.FLOAT, [4]))
    x = np.ones(4, np.float32)
    (y,) = run_or_skip(sess, {"x": x})
    y[:] = 5  # writable, and writing does not touch the input
    np.testing.assert_array_equal(x, np.ones(4))
    (y2,) = run_or_skip(sess, {"x": x})
    np.testing.assert_array_equal(y2, np.ones(4))
    # the run reads the input array in place (no copy): an output must still not share its memory
    x[:] = 3
    del x
    np.testing.assert_array_equal(y2, np.ones(4))


def test_empty_tensor():
    sess = session_or_skip(identity_model(TP.FLOAT, [0, 3]))
    (y,) = run_or_skip(sess, {"x": np.zeros((0, 3), np.float32)})
    assert y.shape == (0, 3) and y.dtype == np.float32


def test_array_fast_path_takes_plain_arrays_and_declines_the_rest():
    """run() hands plain numpy feeds to C++ in one call (run_arrays) and takes the general path for
    anything else; both give the same outputs, and the general path words the errors."""
    n1, i1 = passthrough_node("a", "y", rank=2)
    n2, i2 = passthrough_node("b", "z", rank=1)
    model = make_model(
        [n1, n2], [helper.make_tensor_value_info("a", TP.FLOAT, ["n", 3]),
                   helper.make_tensor_value_info("b", TP.INT64, [4])],
        [helper.make_tensor_value_info("y", TP.FLOAT, ["n", 3]), helper.make_tensor_value_info("z", TP.INT64, [4])],
        i1 + i2)
    sess = session_or_skip(model)
    a = RNG.standard_normal((5, 3)).astype(np.float32)
    b = RNG.integers(-9, 9, 4).astype(np.int64)
    fast = sess._sess.run_arrays({"a": a, "b": b}, None)
    assert fast is not None and all(type(v) is np.ndarray for v in fast)
    np.testing.assert_array_equal(fast[0], a)
    np.testing.assert_array_equal(fast[1], b)
    assert not np.shares_memory(fast[0], a) and fast[0].flags.writeable
    y, z = sess._sess.run_arrays({"a": a, "b": b}, ["y", "z"])
    np.testing.assert_array_equal(y, a)
    (z,) = sess._sess.run_arrays({"a": a, "b": b}, ["z"])
    np.testing.assert_array_equal(z, b)
    misaligned = np.zeros(61, np.uint8)[1:].view(np.float32).reshape(5, 3)
    misaligned[:] = a
    assert not misaligned.flags.aligned
    declined = {
        "missing input": {"a": a},
        "extra input": {"a": a, "b": b, "c": b},
        "wrong dtype": {"a": a.astype(np.float64), "b": b},
        "wrong rank": {"a": a.reshape(15), "b": b},
        "wrong static dim": {"a": a, "b": np.zeros(5, np.int64)},
        "non-contiguous": {"a": np.asfortranarray(a), "b": b},
        "big-endian": {"a": a.astype(">f4"), "b": b},
        "misaligned": {"a": misaligned, "b": b},
        "a list": {"a": a.tolist(), "b": b},
    }
    for why, feeds in declined.items():
        assert sess._sess.run_arrays(feeds, None) is None, why
    assert sess._sess.run_arrays({"a": a, "b": b}, ("y",)) is None  # names not in a list of str
    assert sess._sess.run_arrays({"a": a, "b": b}, [b"y"]) is None
    # the general path runs what it can convert and words the rest
    for why in ("non-contiguous", "big-endian", "misaligned"):
        y, _ = sess.run(None, declined[why])
        np.testing.assert_array_equal(y, declined[why]["a"])
    (y,) = sess.run(("y",), {"a": a, "b": b})
    np.testing.assert_array_equal(y, a)
    with pytest.raises(tessera.InvalidArgument, match="missing input"):
        sess.run(None, declined["missing input"])
    with pytest.raises(tessera.InvalidArgument, match="no input named 'c'"):
        sess.run(None, declined["extra input"])
    with pytest.raises(tessera.InvalidArgument, match="expected shape"):
        sess.run(None, declined["wrong static dim"])
    with pytest.raises(tessera.InvalidArgument, match="expected tensor"):
        sess.run(None, declined["wrong dtype"])
    with pytest.raises(tessera.InvalidArgument):
        sess._sess.run_arrays({"a": a, "b": b}, ["nope"])  # a plain call with a bad name fails in the run


# ---------------------------------------------------------------- description

def test_get_inputs_outputs():
    na, ia = passthrough_node("a", "out_a", rank=3)
    nb, ib = passthrough_node("b", "out_b", rank=1)
    model = make_model(
        [na, nb],
        [helper.make_tensor_value_info("a", TP.FLOAT, ["batch", 3, None]),
         helper.make_tensor_value_info("b", TP.INT64, [5])],
        [helper.make_tensor_value_info("out_a", TP.FLOAT, ["batch", 3, None]),
         helper.make_tensor_value_info("out_b", TP.INT64, [5])],
        initializers=[helper.make_tensor("w", TP.FLOAT, [1], [1.0])] + ia + ib)
    sess = session_or_skip(model)
    ins = sess.get_inputs()
    assert [i.name for i in ins] == ["a", "b"]  # the initializer is not an input
    assert ins[0].type == "tensor(float)" and ins[1].type == "tensor(int64)"
    assert ins[0].shape == ["batch", 3, None]
    assert ins[1].shape == [5]
    outs = sess.get_outputs()
    assert [o.name for o in outs] == ["out_a", "out_b"]
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [(i.name, i.type) for i in ins] == [(i.name, i.type) for i in ref.get_inputs()]
    assert ins[1].shape == ref.get_inputs()[1].shape


def test_output_names_select_and_order():
    n1, i1 = passthrough_node("a", "y1", rank=1)
    n2, i2 = passthrough_node("a", "y2", rank=1)
    model = make_model(
        [n1, n2], [helper.make_tensor_value_info("a", TP.FLOAT, [2])],
        [helper.make_tensor_value_info("y1", TP.FLOAT, [2]), helper.make_tensor_value_info("y2", TP.FLOAT, [2])],
        i1 + i2)
    sess = session_or_skip(model)
    a = np.array([1, 2], np.float32)
    outs = run_or_skip(sess, {"a": a}, ["y2"])
    assert len(outs) == 1
    np.testing.assert_array_equal(outs[0], a)
    assert len(run_or_skip(sess, {"a": a}, None)) == 2


def test_path_bytes_and_modelproto(tmp_path):
    model = identity_model(TP.FLOAT, [2])
    model.producer_name = "tessera-test"
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = np.array([1.5, -2], np.float32)
    for src in (str(path), path, model.SerializeToString(), model):
        try:
            sess = tessera.InferenceSession(src)
        except tessera.Unsupported as e:
            pytest.skip(str(e))
        np.testing.assert_array_equal(run_or_skip(sess, {"x": x})[0], x)
    assert sess.get_modelmeta().producer_name == "tessera-test"


def test_threads_and_concurrent_runs():
    model = identity_model(TP.FLOAT, [64])
    for threads in (1, 2, 0):
        sess = session_or_skip(model, threads=threads)
        x = np.arange(64, dtype=np.float32)
        np.testing.assert_array_equal(run_or_skip(sess, {"x": x})[0], x)
    # one session, several Python threads at once (run releases the GIL)
    errors = []

    def worker(k):
        try:
            for _ in range(20):
                x = np.full(64, k, np.float32)
                (y,) = sess.run(None, {"x": x})
                if not np.array_equal(x, y):
                    errors.append(f"thread {k}: wrong result")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_accepts_onnxruntime_session_options():
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = tessera.InferenceSession(identity_model(TP.FLOAT, [1]).SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
    assert sess.get_session_options().threads == 2


def test_session_options_take_onnxruntime_spellings():
    """Code written for onnxruntime sets intra_op_num_threads and graph_optimization_level on the options
    object; they must reach the session, and an attribute the class lacks must raise, not be dropped."""
    so = tessera.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.inter_op_num_threads = 1
    so.profile_file_prefix = "run"
    sess = tessera.InferenceSession(identity_model(TP.FLOAT, [1]).SerializeToString(), so)
    got = sess.get_session_options()
    assert (got.threads, got.optimization_level, got.profile_path) == (1, 0, "run.json")
    assert got.intra_op_num_threads == 1 and got.profile_file_prefix == "run"
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.optimization_level == 99
    with pytest.raises(AttributeError):
        so.intra_op_threads = 2  # misspelt: onnxruntime raises too
    with pytest.raises(tessera.InvalidArgument):
        so.intra_op_num_threads = -1


def test_end_profiling_writes_the_trace_and_stops(tmp_path):
    """end_profiling (onnxruntime's API): the runs so far as a Chrome trace at profile_path, returned; runs
    after it record nothing and a second call returns "", as does a session without profiling."""
    import json
    path = str(tmp_path / "trace.json")
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])]).SerializeToString()
    sess = tessera.InferenceSession(model, tessera.SessionOptions(enable_profiling=True, profile_path=path))
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for _ in range(3):
        sess.run(None, {"x": x})
    assert sess.end_profiling() == path
    events = json.load(open(path))["traceEvents"]
    assert [e["name"] for e in events] == ["relu0"] * 3 and all(e["dur"] >= 0 for e in events)
    sess.run(None, {"x": x})
    assert sess.end_profiling() == ""
    assert len(json.load(open(path))["traceEvents"]) == 3  # not rewritten after the end
    assert tessera.InferenceSession(model).end_profiling() == ""


def test_version():
    assert isinstance(tessera.__version__, str) and tessera.__version__


def test_kernel_isa():
    known = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vnni", "avx512bf16",
             "avx512vbmi", "amx-bf16", "fma512-full"}
    words = tessera.kernel_isa().split()
    assert words == ["portable"] or (words and set(words) <= known), words
    assert "fma512-full" not in words or "avx512f" in words, words  # full-width 512-bit FMAs need AVX-512
    assert "amx-bf16" not in words or "avx512f" in words, words  # the AMX GEMM splits with AVX-512


# ---------------------------------------------------------------- compare with onnxruntime

def compare(model, feeds, rtol=1e-5, atol=1e-6):
    sess = session_or_skip(model)
    got = run_or_skip(sess, feeds)
    want = ort_run(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def test_add_broadcast_vs_onnxruntime():
    model = make_model([helper.make_node("Add", ["a", "b"], ["c"])],
                       [helper.make_tensor_value_info("a", TP.FLOAT, [2, 3]),
                        helper.make_tensor_value_info("b", TP.FLOAT, [3])],
                       [helper.make_tensor_value_info("c", TP.FLOAT, [2, 3])])
    compare(model, {"a": sample(np.float32, (2, 3)), "b": sample(np.float32, (3,))})


def test_matmul_relu_vs_onnxruntime():
    w = sample(np.float32, (8, 5))
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                       [helper.make_tensor_value_info("x", TP.FLOAT, ["n", 8])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, ["n", 5])],
                       [onnx.numpy_helper.from_array(w, "w")])
    compare(model, {"x": sample(np.float32, (3, 8))}, rtol=1e-4, atol=1e-5)


def test_gemm_softmax_vs_onnxruntime():
    w = sample(np.float32, (6, 4))
    b = sample(np.float32, (4,))
    model = make_model(
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"]), helper.make_node("Softmax", ["h"], ["y"], axis=-1)],
        [helper.make_tensor_value_info("x", TP.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [2, 4])],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    compare(model, {"x": sample(np.float32, (2, 6))}, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,axis", [((2, 37, 5), 1), ((3, 4, 33), 0), ((1, 256, 130), -2), ((2, 3, 4, 17), 1),
                                        ((5, 1, 7), 1)])
def test_softmax_other_axis_vs_onnxruntime(op, shape, axis):
    # along an axis that is not the last: the rows turned to the last axis and back
    model = make_model([helper.make_node(op, ["x"], ["y"], axis=axis)],
                       [helper.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                       [helper.make_tensor_value_info("y", TP.FLOAT, list(shape))])
    x = (sample(np.float32, shape) * 8).astype(np.float32)
    # (a log-probability near 0 is log(1 + tiny): absolute, not relative, agreement there)
    compare(model, {"x": x}, rtol=1e-5, atol=1e-6 if op == "Softmax" else 2e-5)


def test_cast_to_bfloat16_vs_onnxruntime():
    model = make_model([helper.make_node("Cast", ["x"], ["y"], to=TP.BFLOAT16)],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [5])],
                       [helper.make_tensor_value_info("y", TP.BFLOAT16, [5])])
    x = np.array([1.0, 1.00390625, -3.14159, 65504.0, 1e-3], np.float32)
    sess = session_or_skip(model)
    (y,) = run_or_skip(sess, {"x": x})
    assert y.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y, x.astype(ml_dtypes.bfloat16))


def test_sequence_output():
    model = make_model([helper.make_node("SequenceConstruct", ["a", "b"], ["s"])],
                       [helper.make_tensor_value_info("a", TP.FLOAT, [2]),
                        helper.make_tensor_value_info("b", TP.FLOAT, [3])],
                       [helper.make_tensor_sequence_value_info("s", TP.FLOAT, None)])
    sess = session_or_skip(model)
    a, b = np.ones(2, np.float32), np.arange(3, dtype=np.float32)
    (s,) = run_or_skip(sess, {"a": a, "b": b})
    assert isinstance(s, list) and len(s) == 2
    np.testing.assert_array_equal(s[0], a)
    np.testing.assert_array_equal(s[1], b)


def test_sequence_input():
    model = make_model([helper.make_node("SequenceLength", ["s"], ["n"])],
                       [helper.make_tensor_sequence_value_info("s", TP.FLOAT, None)],
                       [helper.make_tensor_value_info("n", TP.INT64, [])])
    sess = session_or_skip(model)
    (n,) = run_or_skip(sess, {"s": [np.ones(2, np.float32), np.zeros(3, np.float32)]})
    assert int(n) == 2


def test_backend_prepare_and_run():
    import tessera.backend as tb

    assert tb.supports_device("CPU")
    assert not tb.supports_device("CUDA")
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [2]),
                        helper.make_tensor_value_info("w", TP.FLOAT, [2])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [2])],
                       [helper.make_tensor("w", TP.FLOAT, [2], [1, 2])])
    try:
        rep = tb.prepare(model, "CPU")
    except tessera.Unsupported as e:
        pytest.skip(str(e))
    x = np.array([3, 4], np.float32)
    out = rep.run([x])  # positional: only the non-initializer input
    np.testing.assert_array_equal(out[0], x + [1, 2])
    np.testing.assert_array_equal(out.y, x + [1, 2])
    np.testing.assert_array_equal(tb.run_model(model, {"x": x})[0], x + [1, 2])
    (y,) = tb.run_node(helper.make_node("Neg", ["x"], ["y"]), [x])
    np.testing.assert_array_equal(y, -x)


def test_runs_flush_denormals_unless_told_not_to():
    """Sessions flush denormals to zero (x86 FTZ + DAZ) on the calling thread and on every pool worker for the
    run, and give the caller's mode back after it; flush_denormals=False (or onnxruntime's
    session.set_denormal_as_zero = 0) keeps them."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("MXCSR is x86's")
    n = 1 << 20  # enough that two threads split the Mul
    g = helper.make_graph([helper.make_node("Mul", ["a", "b"], ["y"])], "g",
                          [helper.make_tensor_value_info("a", TP.FLOAT, [n]),
                           helper.make_tensor_value_info("b", TP.FLOAT, [n])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [n])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    tiny = np.float32(1e-39)  # a denormal
    a = np.full(n, tiny, np.float32)
    b = np.ones(n, np.float32)
    for threads in (1, 2):
        y = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, {"a": a, "b": b})[0]
        assert not y.any(), threads  # every element flushed, whichever thread computed it
        keep = tessera.SessionOptions(threads=threads, flush_denormals=False)
        y = tessera.InferenceSession(model, keep).run(None, {"a": a, "b": b})[0]
        np.testing.assert_array_equal(y, a)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.add_session_config_entry("session.set_denormal_as_zero", "0")
        y = tessera.InferenceSession(model, so).run(None, {"a": a, "b": b})[0]
        np.testing.assert_array_equal(y, a)
    # the caller's thread has its own mode back: numpy still sees the denormal
    assert np.multiply(a[:4], b[:4])[0] == tiny
