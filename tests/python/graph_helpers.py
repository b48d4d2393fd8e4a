"""Small ONNX graph builders shared by the API, CLI and bad-input tests."""
from __future__ import annotations

from onnx import TensorProto as TP
from onnx import helper

import tessera


def _supports(op_type):
    g = helper.make_graph([helper.make_node(op_type, ["x"], ["y"])], "probe",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    try:
        tessera.InferenceSession(m.SerializeToString())
        return True
    except tessera.Unsupported:
        return False


# Identity is the natural pass-through; until its kernel lands, Reshape to
# all-zeros (copy every dim) passes any tensor through unchanged as well.
HAVE_IDENTITY = _supports("Identity")
PASS_OP = "Identity" if HAVE_IDENTITY else "Reshape"


def passthrough_node(x, y, name=None, rank=None):
    """(node, extra initializers) copying x to y."""
    if HAVE_IDENTITY:
        return helper.make_node("Identity", [x], [y], name=name), []
    s = f"{y}__zeros"
    return (helper.make_node("Reshape", [x, s], [y], name=name),
            [helper.make_tensor(s, TP.INT64, [rank], [0] * rank)])
