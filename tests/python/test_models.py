"""Real exported models (assets/models skeletons, rebuilt by scripts/materialize.py) run on random
inputs through tessera and onnxruntime; every output must satisfy max|tessera - ort| / max|ort| <= 1e-4."""
from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import tessera
from tessera.bench import with_probe_outputs
from materialize import materialize
from model_inputs import make_feeds, rel_err

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKELETONS = os.path.join(ROOT, "assets", "models")
MODELS = sorted(f[: -len(".skeleton.onnx")] for f in os.listdir(SKELETONS) if f.endswith(".skeleton.onnx"))
TOLERANCE = 1e-4


def _model_path(model_dir: str, name: str) -> str:
    path = os.path.join(model_dir, f"{name}.onnx")
    if not os.path.exists(path):
        materialize(os.path.join(SKELETONS, f"{name}.skeleton.onnx"), path)
    return path


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_onnxruntime(name, model_dir):
    path = _model_path(model_dir, name)
    model = onnx.load(path)
    feeds = make_feeds(model, seed=1)
    blob = with_probe_outputs(model).SerializeToString()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    ref = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    sess = tessera.InferenceSession(blob, threads=2)
    first = sess.run(None, feeds)  # records the memory plan and the shape-only results
    ours = sess.run(None, feeds)  # runs planned: arena, cached shape arithmetic
    for a, b in zip(first, ours):
        assert np.array_equal(a, b), f"{name}: the planned run differs from the first"
    assert len(ours) == len(ref)
    names = [o.name for o in sess.get_outputs()]
    assert any(np.std(b) > 0 for b in ref if b.dtype.kind == "f"), f"{name}: every output is constant"
    for n, a, b in zip(names, ours, ref):
        assert a.shape == b.shape, f"{name}:{n}: shape {a.shape} vs {b.shape}"
        assert a.dtype == b.dtype, f"{name}:{n}: dtype {a.dtype} vs {b.dtype}"
        err = rel_err(a, b)
        assert err <= TOLERANCE, f"{name}:{n}: max|diff|/max|ort| = {err:.3g}"


@pytest.mark.parametrize("batch,seq", [(2, 7), (1, 33)])
def test_bert_other_shapes(batch, seq, model_dir):
    """New input shapes re-plan; results still match."""
    path = _model_path(model_dir, "bert_base")
    model = onnx.load(path, load_external_data=False)
    feeds = make_feeds(model, seed=2, dims={"batch": batch, "seq": seq})
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    sess = tessera.InferenceSession(path, threads=2)
    for _ in range(2):  # second run uses the cached plan
        ours = sess.run(None, feeds)
        for a, b in zip(ours, ref):
            assert rel_err(a, b) <= TOLERANCE
