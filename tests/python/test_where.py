"""Where on its tuned kernel (kernels/x86/eltwise.h where_32: the condition as a byte mask, the operands
blended) against numpy: every way the three operands broadcast over the output (full, a row, a column, a
scalar of it, and shapes no [outer, inner] view fits, which the reference takes), 4-byte types bit for bit
(f32 with NaN and -0, int32), ragged lengths around the 16-lane step, one and two threads, and the
portable loop (TESSERA_ISA=avx2) in a child process."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import tessera

RNG = np.random.default_rng(5)
TYPES = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32}

CASES = [  # condition, x, y shapes
    ((3, 17, 33), (3, 17, 33), (3, 17, 33)),
    ((3, 17, 33), (3, 17, 33), ()),            # y a scalar (a mask filled with -inf)
    ((1, 1, 33), (3, 17, 33), (1,)),           # the condition a row
    ((3, 17, 1), (3, 17, 33), (3, 17, 33)),    # a column
    ((1, 12, 1, 64), (2, 12, 64, 64), ()),     # a causal mask over attention scores
    ((5,), (4, 5), (4, 1)),                    # y a column, the condition a row
    ((2, 1, 7), (1, 3, 7), (2, 3, 1)),         # no [outer, inner] view: the reference
    ((1000,), (), (1000,)),
]


def _model(cs, xs, ys, et):
    node = helper.make_node("Where", ["c", "x", "y"], ["z"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, list(cs)),
                                        helper.make_tensor_value_info("x", et, list(xs)),
                                        helper.make_tensor_value_info("y", et, list(ys))],
                          [helper.make_tensor_value_info("z", et, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _values(dt, shape):
    if dt == np.int32:
        return RNG.integers(-2**31, 2**31 - 1, shape, dtype=np.int64).astype(np.int32)
    v = RNG.standard_normal(shape).astype(np.float32)
    if v.size >= 3:
        v.flat[0], v.flat[1], v.flat[2] = np.nan, -0.0, -np.inf
    return v


@pytest.mark.parametrize("dt", [np.float32, np.int32])
@pytest.mark.parametrize("shapes", CASES)
def test_where_matches_numpy(dt, shapes):
    cs, xs, ys = shapes
    c = RNG.integers(0, 2, cs).astype(np.bool_)
    x, y = _values(dt, xs), _values(dt, ys)
    want = np.where(c, x, y)
    model = _model(cs, xs, ys, TYPES[dt])
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(
            None, {"c": c, "x": x, "y": y})[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))  # bit for bit (NaN, -0)


def test_where_portable_loop(tmp_path):
    """The loop a CPU without AVX-512 runs, in a child process (TESSERA_ISA=avx2)."""
    for i, (cs, xs, ys) in enumerate(CASES[:6]):
        c = RNG.integers(0, 2, cs).astype(np.bool_)
        x, y = _values(np.float32, xs), _values(np.float32, ys)
        (tmp_path / f"m{i}.onnx").write_bytes(_model(cs, xs, ys, TensorProto.FLOAT))
        np.savez(tmp_path / f"x{i}.npz", c=c, x=x, y=y)
        np.save(tmp_path / f"y{i}.npy", np.where(c, x, y))
    script = ("import sys, numpy as np, tessera\n"
              "d = sys.argv[1]\n"
              "for i in range(6):\n"
              "    s = tessera.InferenceSession(f'{d}/m{i}.onnx', tessera.SessionOptions(threads=2))\n"
              "    got = s.run(None, dict(np.load(f'{d}/x{i}.npz')))[0]\n"
              "    np.testing.assert_array_equal(got.view(np.int32), np.load(f'{d}/y{i}.npy').view(np.int32))\n")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=dict(os.environ, TESSERA_ISA="avx2"),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
