"""A short, fixed-seed run of tests/fuzz/fuzz_node_models.py: mutated ONNX node-test models through the
whole runtime in child processes, none of which may die of a signal, hang or run out of its capped address
space. About 30 s. With the module of before session 41's fixes, seed 2's 3000 cases die twice of SIGFPE
(ReduceSumSquare and ReduceL2 over an empty kept axis)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz"))
from fuzz_node_models import fuzz  # noqa: E402


def test_mutated_node_models_never_crash(tmp_path):
    findings = fuzz(seed=2, cases=3000, out=str(tmp_path))
    assert not findings, findings
