"""Tessera as an ONNX backend (onnx.backend.base.Backend), so onnx's own
conformance harness runs unchanged:

    import onnx.backend.test, tessera.backend
    onnx.backend.test.BackendTest(tessera.backend, __name__)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from ._session import InferenceSession, SessionOptions
from ._tessera import InvalidArgument


def _model_input_names(model: onnx.ModelProto) -> list[str]:
    inits = {t.name for t in model.graph.initializer} | {t.values.name for t in model.graph.sparse_initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


class TesseraRep(BackendRep):
    """A prepared model: run(inputs) takes the model's non-initializer graph
    inputs positionally (a list/tuple) or by name (a dict)."""

    def __init__(self, session: InferenceSession, input_names: list[str]):
        self._session = session
        self._input_names = input_names
        self._output_names = [o.name for o in session.get_outputs()]

    @property
    def session(self) -> InferenceSession:
        return self._session

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) > len(self._input_names):
                raise InvalidArgument(f"{len(inputs)} inputs given, the model takes {len(self._input_names)}")
            feeds = dict(zip(self._input_names, inputs))
        outs = self._session.run(None, feeds)
        return namedtupledict("Outputs", self._output_names)(*outs)


class TesseraBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except Exception:  # noqa: BLE001 - unknown device strings are simply unsupported
            return False

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> TesseraRep:
        if not cls.supports_device(device):
            raise InvalidArgument(f"Tessera runs on CPU, not on {device!r}")
        if isinstance(model, (str, bytes)):
            model = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model)
        super().prepare(model, device, **kwargs)
        opts = SessionOptions(threads=int(kwargs.get("threads", 0) or 0))
        session = InferenceSession(model.SerializeToString(), opts)
        return TesseraRep(session, _model_input_names(model))

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info: Any = None,
                 **kwargs: Any) -> tuple:
        """Runs one node: wraps it in a model whose inputs take the given arrays."""
        super().run_node(node, inputs, device=device, outputs_info=outputs_info)
        if isinstance(inputs, dict):
            values = [inputs[n] for n in node.input if n]
            names = [n for n in node.input if n]
        else:
            names = [n for n in node.input if n]
            values = list(inputs)
        graph_inputs = []
        for n, v in zip(names, values):
            arr = np.asarray(v)
            graph_inputs.append(helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
        graph_outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = helper.make_graph([node], "run_node", graph_inputs, graph_outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid(node.domain or "", opset)])
        return cls.run_model(model, dict(zip(names, values)), device, **kwargs)


# The module itself is the backend, as onnx's harness expects.
prepare = TesseraBackend.prepare
run_model = TesseraBackend.run_model
run_node = TesseraBackend.run_node
supports_device = TesseraBackend.supports_device
is_compatible = TesseraBackend.is_compatible
