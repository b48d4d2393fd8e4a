"""Einsum as exported from torch.einsum (attention scores and context, projections, permutations, ellipsis)
is lowered to Transpose / Reshape / MatMul by the lower_einsum pass, against onnxruntime; equations the pass
leaves alone (diagonals, a label summed out of one operand, broadcasting) still run on the reference kernel."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(5)


def _model(eq, shapes, const_b=False, dims=None):
    inits, inputs = [], []
    names = ["a", "b"][:len(shapes)]
    for i, (n, s) in enumerate(zip(names, shapes)):
        if const_b and i == 1:
            inits.append(numpy_helper.from_array(RNG.standard_normal(s).astype(np.float32), n))
        else:
            inputs.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, list(dims[i] if dims else s)))
    node = helper.make_node("Einsum", names, ["e"], equation=eq)
    relu = helper.make_node("Relu", ["e"], ["y"])
    g = helper.make_graph([node, relu], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("eq,shapes,const_b,lowered,dims", [
    ("bhqd,bhkd->bhqk", [(2, 3, 7, 16), (2, 3, 9, 16)], False, True, None),    # attention scores
    ("bhqk,bhkd->bqhd", [(2, 3, 7, 9), (2, 3, 9, 16)], False, True, None),     # context, heads moved
    ("bsd,df->bsf", [(2, 5, 24), (24, 40)], True, True, None),                 # a projection of constant weights
    ("ij->ji", [(6, 11)], False, True, None),                                  # a permutation
    ("...ij,jk->...ik", [(2, 3, 4, 5), (5, 6)], False, True, None),            # ellipsis on one operand
    ("bij,bjk", [(3, 4, 5), (3, 5, 2)], False, True, None),                    # implicit output
    ("nc,nc->n", [(8, 13), (8, 13)], False, True, None),                       # row-wise dot products
    ("ik,jk->ijk", [(4, 3), (5, 3)], False, True, None),                       # an outer product per k (batch k)
    ("ii->i", [(5, 5)], False, False, None),                                   # a diagonal
    ("ij,jk->i", [(3, 4), (4, 5)], False, False, None),                        # k summed out of B alone
    ("bij,bjk->bik", [(1, 4, 5), (3, 5, 2)], False, False, None),              # broadcast batch
    # dynamic axes: lowered where Transposes alone make the MatMul's operands; merged groups stay
    ("bhqd,bhkd->bhqk", [(2, 3, 7, 16), (2, 3, 9, 16)], False, True, [("B", 3, "S", 16), ("B", 3, "T", 16)]),
    ("bhqk,bkhd->bqhd", [(2, 3, 7, 9), (2, 9, 3, 16)], False, True, [("B", 3, "S", "T"), ("B", "T", 3, 16)]),
    ("bsd,df->bsf", [(2, 5, 24), (24, 40)], True, True, [("B", "S", 24), None]),
    ("bsd,bdf->bsf", [(2, 5, 24), (2, 24, 3)], False, True, [("B", "S", 24), ("B", 24, 3)]),
    ("bsxd,bdf->bsxf", [(2, 5, 3, 4), (2, 4, 6)], False, False, [("B", "S", 3, 4), ("B", 4, 6)]),
])
def test_einsum_matches_onnxruntime(eq, shapes, const_b, lowered, dims, threads):
    b = _model(eq, shapes, const_b, dims)
    feeds = {n: RNG.standard_normal(s).astype(np.float32) for n, s in zip(["a", "b"], shapes)
             if not (const_b and n == "b")}
    sess = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads))
    assert ("Einsum(" not in sess.graph_text()) == lowered, sess.graph_text()
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = sess.run(None, feeds)[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max())
