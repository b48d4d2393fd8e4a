"""The `tessera` command: run / info / ops / --help, and one-line errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

import tessera
from tessera import _cli

OPSET = 21


from graph_helpers import HAVE_IDENTITY, PASS_OP, passthrough_node  # noqa: E402,F401


def make_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)


def cli(*args, cwd=None):
    """Runs the CLI through the package entry point (python -m tessera._cli)."""
    return subprocess.run([sys.executable, "-m", "tessera._cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.fixture()
def identity_path(tmp_path):
    node, inits = passthrough_node("x", "y", name="id0", rank=2)
    model = make_model([node],
                       [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 3])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 3])],
                       [helper.make_tensor("unused_w", TP.FLOAT, [2, 5], list(range(10)))] + inits)
    p = tmp_path / "id.onnx"
    onnx.save(model, str(p))
    return p


@pytest.fixture()
def bad_path(tmp_path):
    model = make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob_node")],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [2])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [2])])
    p = tmp_path / "bad.onnx"
    onnx.save(model, str(p))
    return p


def test_binary_is_installed():
    assert os.path.exists(_cli.binary_path())
    assert os.access(_cli.binary_path(), os.X_OK)


def test_console_script_if_on_path():
    exe = shutil.which("tessera")
    if exe is None:
        pytest.skip("the tessera console script is not on PATH")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "run" in r.stdout


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["info", "--help"], ["ops", "--help"]])
def test_help(args):
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "Usage" in r.stdout or "usage" in r.stdout.lower()


def test_no_subcommand_is_usage_error():
    r = cli()
    assert r.returncode != 0
    r = cli("run")  # model is required
    assert r.returncode == 2


def test_run_random_inputs(identity_path, tmp_path):
    out_dir = tmp_path / "outs"
    r = cli("run", identity_path, "--repeat", 3, "--threads", 1, "--output-dir", out_dir)
    assert r.returncode == 0, r.stderr
    assert "output y: float32[1,3]" in r.stdout  # the named dim becomes 1
    assert "min" in r.stdout and "max" in r.stdout and "mean" in r.stdout
    assert "median" in r.stdout and "3 runs" in r.stdout
    y = np.load(out_dir / "y.npy")
    assert y.shape == (1, 3) and y.dtype == np.float32
    assert np.all(np.abs(y) <= 1)


def test_run_with_npy_input(identity_path, tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "x.npy", x)
    r = cli("run", identity_path, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "output y: float32[4,3]" in r.stdout
    assert "max 11" in r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), x)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64", "bool", "complex64", "complex128"])
def test_npy_roundtrip_dtypes(tmp_path, dtype):
    onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node, inits = passthrough_node("x", "y", rank=2)
    model = make_model([node], [helper.make_tensor_value_info("x", onnx_type, [2, 3])],
                       [helper.make_tensor_value_info("y", onnx_type, [2, 3])], inits)
    onnx.save(model, str(tmp_path / "m.onnx"))
    x = (np.arange(6).reshape(2, 3) % 2 == 1) if dtype == "bool" else np.arange(6).reshape(2, 3).astype(dtype)
    np.save(tmp_path / "x.npy", x)
    r = cli("run", tmp_path / "m.onnx", "-i", f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "o")
    if r.returncode != 0 and "unsupported" in r.stderr.lower():
        pytest.skip(r.stderr)
    assert r.returncode == 0, r.stderr
    y = np.load(tmp_path / "o" / "y.npy")
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


def test_run_bad_npy(identity_path, tmp_path):
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    r = cli("run", identity_path, "--input", f"x={tmp_path / 'junk.npy'}")
    assert r.returncode == 1
    assert r.stderr.startswith("tessera: error:") and r.stderr.count("\n") == 1
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((2, 3), np.float32)))
    r = cli("run", identity_path, "--input", f"x={tmp_path / 'f.npy'}")
    assert r.returncode == 1 and "Fortran" in r.stderr
    r = cli("run", identity_path, "--input", f"nope={tmp_path / 'f.npy'}")
    assert r.returncode == 1 and "nope" in r.stderr


def test_run_failing_model_one_line_naming_the_node(bad_path):
    r = cli("run", bad_path)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("tessera: error:")
    assert "frob_node" in lines[0]


def test_missing_model_file(tmp_path):
    r = cli("run", tmp_path / "nope.onnx")
    assert r.returncode == 1
    assert r.stderr.startswith("tessera: error:") and "nope.onnx" in r.stderr
    r = cli("info", tmp_path / "nope.onnx")
    assert r.returncode == 1 and r.stderr.count("\n") == 1


def test_info(identity_path):
    r = cli("info", identity_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "inputs:" in out and "x" in out and "outputs:" in out
    assert f"{PASS_OP}: 1" in out
    extra = 0 if HAVE_IDENTITY else 2  # Reshape's int64[2] shape
    assert f"parameters: {10 + extra}" in out
    assert f"parameter bytes: {40 + 8 * extra}" in out
    assert "FLOPs" in out


def test_info_flops_matmul(tmp_path):
    w = np.ones((8, 16), np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                       [helper.make_tensor_value_info("x", TP.FLOAT, [4, 8])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, [4, 16])],
                       [onnx.numpy_helper.from_array(w, "w")])
    onnx.save(model, str(tmp_path / "mm.onnx"))
    r = cli("info", tmp_path / "mm.onnx")
    assert r.returncode == 0, r.stderr
    if "not counted" in r.stdout:
        pytest.skip("MatMul shape inference has not landed yet")
    assert "1.02 KFLOP" in r.stdout  # 2 * 4 * 16 * 8 = 1024


def test_info_ir(identity_path):
    r = cli("info", identity_path, "--ir")
    if r.returncode != 0 and "unsupported" in r.stderr.lower():
        pytest.skip(r.stderr)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) > 5


def test_ops():
    r = cli("ops")
    assert r.returncode == 0, r.stderr
    assert "ops," in r.stdout
    md = cli("ops", "--markdown")
    assert md.returncode == 0
    assert md.stdout.startswith("| op | domain | family | reference kernel |")


def test_ops_lists_known_ops():
    r = cli("ops")
    for op in ("Add", "MatMul", "Conv", "Relu"):
        assert op in r.stdout


@pytest.fixture()
def mlp_path(tmp_path):
    """MatMul by constant weights + bias + Relu: fuse_gemm turns it into one tessera.FusedGemm."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                        helper.make_node("Add", ["h", "b"], ["hb"], name="add"),
                        helper.make_node("Relu", ["hb"], ["y"], name="relu")],
                       [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 8])],
                       [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 5])],
                       [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    p = tmp_path / "mlp.onnx"
    onnx.save(model, str(p))
    return p


def test_profile_table_and_trace(mlp_path, tmp_path):
    trace = tmp_path / "trace.json"
    r = cli("profile", mlp_path, "--runs", 3, "--threads", 1, "--dim", "batch=4", "--trace", trace,
            "--peak-gflops", 100, "--bandwidth-gbs", 20)
    assert r.returncode == 0, r.stderr
    assert "FusedGemm" in r.stdout and "GFLOP/s" in r.stdout and "%roof" in r.stdout
    assert "peak 100.0 GFLOP/s" in r.stdout and "bandwidth 20.0 GB/s" in r.stdout
    import json
    events = json.loads(trace.read_text())["traceEvents"]
    gemm = [e for e in events if e["args"]["op"] == "FusedGemm"]
    assert len(gemm) == 3  # one per timed run, warm-up excluded
    assert gemm[0]["args"]["flops"] == 2 * 4 * 5 * 8  # 2 M N K with batch=4
    assert "float32[4,8]" in gemm[0]["args"]["shapes"]


def test_profile_measures_ceilings(mlp_path):
    r = cli("profile", mlp_path, "--runs", 2, "--threads", 1)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("roofline:"))
    peak = float(line.split("peak ")[1].split()[0])
    bw = float(line.split("bandwidth ")[1].split()[0])
    assert peak > 0.1 and bw > 0.1


def test_bench(mlp_path):
    r = cli("bench", mlp_path, "--runs", 3, "--threads", 1, 2)
    assert r.returncode == 0, r.stderr
    rows = [x.split() for x in r.stdout.splitlines()[1:] if x.strip()]
    assert [row[0] for row in rows] == ["1", "2"]
    assert all(float(row[1]) > 0 for row in rows)


def test_bench_compare_onnxruntime(mlp_path):
    pytest.importorskip("onnxruntime")
    r = cli("bench", mlp_path, "--compare", "onnxruntime", "--runs", 3, "--threads", 1, "--dim", "batch=2")
    assert r.returncode == 0, r.stderr
    row = r.stdout.splitlines()[1].split()
    assert row[0] == "1" and float(row[3]) > 0  # the ratio
    assert float(row[-1]) < 1e-5  # max relative error vs onnxruntime


def test_ab_builds_reads_bench(mlp_path):
    # bench/ab_builds.py parses `tessera bench`'s table: the same build on both sides gives one row per
    # thread count with both medians
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "ab_builds.py")
    exe = _cli.binary_path()
    r = subprocess.run([sys.executable, script, exe, exe, str(mlp_path), "--threads", "1", "2", "--rounds", "1",
                        "--runs", "2"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [x.strip("|").split("|") for x in r.stdout.splitlines()[2:]]
    assert [row[1].strip() for row in rows] == ["1", "2"]
    assert all(float(row[2]) > 0 and float(row[3]) > 0 for row in rows)


def test_bench_cold_cache(mlp_path):
    # caches evicted before each timed run: the same table; refused with --compare (whose runs alternate)
    r = cli("bench", mlp_path, "--runs", 2, "--threads", 1, "--cold-cache")
    assert r.returncode == 0, r.stderr
    row = r.stdout.splitlines()[1].split()
    assert row[0] == "1" and float(row[1]) > 0
    r = cli("bench", mlp_path, "--cold-cache", "--compare", "onnxruntime")
    assert r.returncode == 1 and "--cold-cache is not supported with --compare" in r.stderr


def test_ab_builds_cold(mlp_path):
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "ab_builds.py")
    exe = _cli.binary_path()
    r = subprocess.run([sys.executable, script, exe, exe, str(mlp_path), "--rounds", "1", "--runs", "2", "--cold"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [x.strip("|").split("|") for x in r.stdout.splitlines()[2:]]
    assert [row[1].strip() for row in rows] == ["1"] and float(rows[0][2]) > 0


def test_bench_bad_compare(mlp_path):
    r = cli("bench", mlp_path, "--compare", "tvm")
    assert r.returncode == 1 and "only 'onnxruntime'" in r.stderr


def test_info_dump_after(mlp_path):
    r = cli("info", mlp_path, "--dump-after", "import")
    assert r.returncode == 0, r.stderr
    assert "MatMul(" in r.stdout and "FusedGemm" not in r.stdout
    r = cli("info", mlp_path, "--dump-after", "fuse_gemm")
    assert r.returncode == 0, r.stderr
    after = r.stdout.split("graph after fuse_gemm:")[1]
    assert "tessera.FusedGemm" in after and "Relu(" not in after and "activation" in after
    r = cli("info", mlp_path, "--dump-after", "no_such_pass")
    assert r.returncode == 1 and "fuse_gemm" in r.stderr
    r = cli("info", "--passes")
    assert r.returncode == 0 and r.stdout.split()[:6] == ["import", "eliminate_dead", "lower_einsum", "fuse_qdq",
                                                          "fuse_qlookup", "fold_constants"]


def test_dim_option_errors(mlp_path):
    r = cli("run", mlp_path, "--dim", "batch=x")
    assert r.returncode == 1 and "--dim" in r.stderr
