"""Bad models and bad feeds raise tessera.Error (with a clear message) and never
crash the interpreter. Each case runs in a child process, so that a crash shows
up as a failed test rather than taking pytest down with it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

import tessera

OPSET = 21


from graph_helpers import HAVE_IDENTITY, PASS_OP, passthrough_node  # noqa: E402,F401


def make_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)


def identity_model(shape=(2, 3), elem=TP.FLOAT):
    node, inits = passthrough_node("x", "y", name="the_identity", rank=len(shape))
    return make_model([node], [helper.make_tensor_value_info("x", elem, list(shape))],
                      [helper.make_tensor_value_info("y", elem, list(shape))], inits)


def in_child(body: str, tmp_path, **files) -> str:
    """Runs `body` in a fresh interpreter; returns its stdout. Fails the test on
    a crash (signal) or an uncaught exception."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    code = "import numpy as np, tessera, sys, os\n" + textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"child exited with {r.returncode} (negative = signal)\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r.stdout


EXPECT_ERROR = """
def expect_error(fn, *needles, cls=tessera.Error):
    try:
        fn()
    except cls as e:
        msg = str(e)
        assert isinstance(e, RuntimeError), type(e)
        for n in needles:
            assert n in msg, (n, msg)
        print("OK", type(e).__name__, msg.splitlines()[0] if msg else "")
        return
    raise SystemExit("no error raised")
"""


# ---------------------------------------------------------------- bad models

def test_truncated_model_bytes(tmp_path):
    data = identity_model().SerializeToString()
    out = in_child(EXPECT_ERROR + """
data = open("m.onnx", "rb").read()
expect_error(lambda: tessera.InferenceSession(data[: len(data) - 7]))
expect_error(lambda: tessera.InferenceSession(data[:5]))
expect_error(lambda: tessera.InferenceSession(b""))
open("t.onnx", "wb").write(data[: len(data) // 2])
expect_error(lambda: tessera.InferenceSession("t.onnx"))
# every prefix: an error or a session, never a crash
for n in range(0, len(data)):
    try:
        s = tessera.InferenceSession(data[:n])
    except tessera.Error:
        pass
print("DONE")
""", tmp_path, **{"m.onnx": data})
    assert out.count("OK") == 4 and "DONE" in out


def test_corrupt_model_bytes(tmp_path):
    data = identity_model().SerializeToString()
    out = in_child(EXPECT_ERROR + """
data = open("m.onnx", "rb").read()
expect_error(lambda: tessera.InferenceSession(b"\\x00\\xff" * 64))
expect_error(lambda: tessera.InferenceSession(bytes(range(256)) * 4))
rng = np.random.default_rng(1)
for i in range(300):   # random byte flips: an error or a working session
    b = bytearray(data)
    for _ in range(3):
        b[rng.integers(len(b))] = rng.integers(256)
    try:
        s = tessera.InferenceSession(bytes(b))
        for inp in s.get_inputs():
            pass
    except tessera.Error:
        pass
print("DONE")
""", tmp_path, **{"m.onnx": data})
    assert out.count("OK") == 2 and "DONE" in out


def test_missing_file_and_directory(tmp_path):
    out = in_child(EXPECT_ERROR + """
expect_error(lambda: tessera.InferenceSession("does_not_exist.onnx"), "does_not_exist.onnx")
expect_error(lambda: tessera.InferenceSession("."))
""", tmp_path)
    assert out.count("OK") == 2


def test_unknown_op_names_the_node(tmp_path):
    model = make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob_node", domain="")],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [2])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [2])])
    out = in_child(EXPECT_ERROR + """
data = open("m.onnx", "rb").read()
def go():
    s = tessera.InferenceSession(data)
    s.run(None, {"x": np.ones(2, np.float32)})
expect_error(go, "frob_node", "Frobnicate")
""", tmp_path, **{"m.onnx": model.SerializeToString()})
    assert "OK" in out


def test_graph_without_outputs_or_dangling_input(tmp_path):
    dangling = make_model([helper.make_node("Neg", ["nowhere"], ["y"], name="lost")],
                          [helper.make_tensor_value_info("x", TP.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [2])])
    out = in_child(EXPECT_ERROR + """
def go():
    s = tessera.InferenceSession(open("d.onnx", "rb").read())
    s.run(None, {"x": np.ones(2, np.float32)})
expect_error(go)
""", tmp_path, **{"d.onnx": dangling.SerializeToString()})
    assert "OK" in out


def test_external_data_outside_model_folder(tmp_path):
    w = helper.make_tensor("w", TP.FLOAT, [4], [1, 2, 3, 4])
    model = make_model([helper.make_node("Neg", ["w"], ["y"], name="negw")], [],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [4])], [w])
    t = model.graph.initializer[0]
    t.ClearField("float_data")
    t.data_location = TP.EXTERNAL
    for k, v in (("location", "../x"), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    (tmp_path / "sub").mkdir()
    (tmp_path / "x").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    (tmp_path / "sub" / "m.onnx").write_bytes(model.SerializeToString())
    abs_model = model.__class__()
    abs_model.CopyFrom(model)
    abs_model.graph.initializer[0].external_data[0].value = str(tmp_path / "x")
    (tmp_path / "sub" / "abs.onnx").write_bytes(abs_model.SerializeToString())
    out = in_child(EXPECT_ERROR + """
expect_error(lambda: tessera.InferenceSession("sub/m.onnx").run(None, {}), "../x")
expect_error(lambda: tessera.InferenceSession("sub/abs.onnx").run(None, {}))
expect_error(lambda: tessera.InferenceSession(open("sub/m.onnx", "rb").read()).run(None, {}))
""", tmp_path)
    assert out.count("OK") == 3


# ---------------------------------------------------------------- bad feeds

@pytest.fixture(scope="module")
def sess():
    return tessera.InferenceSession(identity_model().SerializeToString())


def test_wrong_feed_name(sess):
    with pytest.raises(tessera.InvalidArgument, match="nope"):
        sess.run(None, {"nope": np.ones((2, 3), np.float32)})
    with pytest.raises(ValueError):  # InvalidArgument is also a ValueError
        sess.run(None, {"nope": np.ones((2, 3), np.float32)})


def test_missing_feed(sess):
    with pytest.raises(tessera.Error, match="x"):
        sess.run(None, {})


def test_wrong_shape(sess):
    with pytest.raises(tessera.Error, match="shape"):
        sess.run(None, {"x": np.ones((3, 2), np.float32)})
    with pytest.raises(tessera.Error):
        sess.run(None, {"x": np.ones((2, 3, 1), np.float32)})


def test_wrong_dtype(sess):
    with pytest.raises(tessera.Error, match="float"):
        sess.run(None, {"x": np.ones((2, 3), np.float64)})
    with pytest.raises(tessera.Error):
        sess.run(None, {"x": np.array([["a"] * 3] * 2)})
    with pytest.raises(tessera.Error):
        sess.run(None, {"x": np.ones((2, 3), "datetime64[s]")})
    with pytest.raises(tessera.Error):
        sess.run(None, {"x": object()})


def test_unknown_output_name(sess):
    with pytest.raises(tessera.Error, match="zzz"):
        sess.run(["zzz"], {"x": np.ones((2, 3), np.float32)})


def test_bad_constructor_arguments():
    with pytest.raises(tessera.Error):
        tessera.InferenceSession(12345.5)
    with pytest.raises(tessera.Error):
        tessera.InferenceSession(identity_model().SerializeToString(), threads=-1)


def test_bad_feeds_never_crash(tmp_path):
    data = identity_model((2, 3)).SerializeToString()
    out = in_child("""
s = tessera.InferenceSession(open("m.onnx", "rb").read())
feeds = [
    {"x": np.ones((2, 3), np.float16)}, {"x": np.ones((6,), np.float32)}, {"x": None},
    {"x": [1, 2]}, {"x": [[1, 2, 3], [4, 5]]}, {"x": np.ones((2, 3), np.float32)[:, ::2]},
    {"x": np.ones((0, 3), np.float32)}, {"x": "hello"}, {1: 2}, "not a dict",
    {"x": np.ones((2, 3), np.complex64)}, {"x": np.ones((2, 3), np.float32).astype(">f4")},
]
n_err = 0
for f in feeds:
    try:
        s.run(None, f)
    except tessera.Error:
        n_err += 1
print("ERRORS", n_err)
""", tmp_path, **{"m.onnx": data})
    # every feed is wrong except the big-endian one, which is converted
    assert "ERRORS 11" in out, out


def test_fuzzed_node_attributes_raise_errors(tmp_path):
    """Attribute and input mutations of the ONNX node tests that once crashed the process (found by fuzzing:
    shape inference read strides[i] of an empty list, Scan read the sequence axis of a scalar) now raise an
    error that names the node."""
    x = helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 2])
    i = helper.make_tensor_value_info("i", TP.INT64, [1, 1, 2, 2])
    y = helper.make_tensor_value_info("y", TP.FLOAT, None)
    unpool = {}
    for tag, attrs in {"no_strides": dict(strides=[]), "zero_strides": dict(strides=[0, 0]),
                       "big_pads": dict(strides=[2, 2], pads=[5, 5, 5, 5])}.items():
        node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool_" + tag, kernel_shape=[2, 2])
        for k, v in attrs.items():
            node.attribute.append(helper.make_attribute(k, v, attr_type=onnx.AttributeProto.INTS))
        unpool[tag + ".onnx"] = make_model([node], [x, i], [y]).SerializeToString()
    scan = onnx.load(os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node",
                                  "test_scan9_sum", "model.onnx"))
    scan.graph.node[0].name = "the_scan"
    for a in scan.graph.node[0].attribute:
        if a.name == "num_scan_inputs":
            a.i = 2  # the initial state taken for a scan input: a tensor without a sequence axis of its own
    out = in_child(EXPECT_ERROR + """
import onnx
feeds = {"x": np.ones((1, 1, 2, 2), np.float32), "i": np.zeros((1, 1, 2, 2), np.int64)}
for tag in ("no_strides", "zero_strides", "big_pads"):
    expect_error(lambda: tessera.InferenceSession(tag + ".onnx").run(None, feeds), "unpool_" + tag, "MaxUnpool")
m = onnx.load("scan.onnx")
feeds = {v.name: np.ones([d.dim_value for d in v.type.tensor_type.shape.dim], np.float32) for v in m.graph.input}
expect_error(lambda: tessera.InferenceSession("scan.onnx").run(None, feeds), "the_scan", "Scan")
""", tmp_path, **unpool, **{"scan.onnx": scan.SerializeToString()})
    assert out.count("OK") == 4, out


def test_absurd_output_sizes_are_refused(tmp_path):
    """A legal request for more memory than the machine has (found by fuzzing: HammingWindow of 2^31 - 1
    points, a Resize to [1, 1, 3, 2^31 - 1], on a 24 GiB VM) raises an error before anything that size is
    allocated. Here 2^36 (256 GiB as f32, past the 64 GiB cap on any machine); the child's address space is
    capped, so a regression fails with "out of memory" rather than meeting the OOM killer."""
    win = make_model([helper.make_node("HammingWindow", ["n"], ["y"], name="the_window")],
                     [helper.make_tensor_value_info("n", TP.INT64, [])],
                     [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    rs = make_model([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="the_resize", mode="nearest")],
                    [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 2]),
                     helper.make_tensor_value_info("sizes", TP.INT64, [4])],
                    [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    out = in_child(EXPECT_ERROR + """
import resource
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
expect_error(lambda: tessera.InferenceSession("win.onnx").run(None, {"n": np.array(2**36, np.int64)}),
             "the_window", "refusing")
expect_error(lambda: tessera.InferenceSession("rs.onnx").run(
    None, {"x": np.ones((1, 1, 2, 2), np.float32), "sizes": np.array([1, 1, 3, 2**36], np.int64)}),
    "the_resize", "refusing")
""", tmp_path, **{"win.onnx": win.SerializeToString(), "rs.onnx": rs.SerializeToString()})
    assert out.count("OK") == 2, out


def test_huge_skip_count_does_not_hang(tmp_path):
    """TfIdfVectorizer with max_skip_count = 2^31 - 1 (fuzzing) looped two billion times over a 12-token
    input; skips of the input's length or more reach no second token, so it equals max_skip_count = 11."""
    def model(skip):
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=2,
                                max_gram_length=2, max_skip_count=skip, ngram_counts=[0, 4],
                                ngram_indexes=[0, 1, 2, 3, 4, 5, 6], pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])
        return make_model([node], [helper.make_tensor_value_info("x", TP.INT32, [12])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)]).SerializeToString()
    out = in_child("""
x = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], np.int32)
a = tessera.InferenceSession("huge.onnx").run(None, {"x": x})[0]
b = tessera.InferenceSession("len.onnx").run(None, {"x": x})[0]
assert (a == b).all() and a.sum() > 0, (a, b)
print("SAME")
""", tmp_path, **{"huge.onnx": model(2**31 - 1), "len.onnx": model(11)})
    assert "SAME" in out, out


def test_output_shape_that_overflows_is_refused(tmp_path):
    """MaxUnpool's output_shape [2^31 - 1, 7, 2, 2^31 - 1] (fuzzing, under UBSan): its element count
    overflowed int64 in the reference kernel; it is now counted as a tensor's is, and refused."""
    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], name="the_unpool", kernel_shape=[2, 2],
                            strides=[2, 2])
    m = make_model([node], [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 2]),
                            helper.make_tensor_value_info("i", TP.INT64, [1, 1, 2, 2]),
                            helper.make_tensor_value_info("s", TP.INT64, [4])],
                   [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    out = in_child(EXPECT_ERROR + """
feeds = {"x": np.ones((1, 1, 2, 2), np.float32), "i": np.array([0, 1, 4, 5], np.int64).reshape(1, 1, 2, 2),
         "s": np.array([2**31 - 1, 7, 2, 2**31 - 1], np.int64)}
expect_error(lambda: tessera.InferenceSession("m.onnx").run(None, feeds), "the_unpool", "2^40")
""", tmp_path, **{"m.onnx": m.SerializeToString()})
    assert "OK" in out, out


def test_error_attributes():
    model = make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob_node")],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [2])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [2])])
    with pytest.raises(tessera.Error) as ei:
        s = tessera.InferenceSession(model.SerializeToString())
        s.run(None, {"x": np.ones(2, np.float32)})
    e = ei.value
    assert isinstance(e, RuntimeError)
    assert e.node_name == "frob_node" and e.op_type == "Frobnicate"
    assert "frob_node" in str(e)
