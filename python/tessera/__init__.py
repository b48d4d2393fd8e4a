"""Tessera: an ONNX compiler and runtime.

    import tessera
    sess = tessera.InferenceSession("model.onnx")
    outputs = sess.run(None, {"input": x})

`tessera.backend` is an onnx.backend.base.Backend (imported on first use, needs
the onnx package).
"""

from __future__ import annotations

from ._tessera import (  # noqa: F401
    Error,
    ExecutionError,
    FileError,
    InternalError,
    InvalidArgument,
    InvalidModel,
    Unsupported,
)
from ._tessera import kernel_isa  # noqa: F401  (the instruction sets the CPU kernels use here)
from ._tessera import version as _native_version
from ._session import InferenceSession, ModelMetadata, NodeArg, SessionOptions  # noqa: F401

__version__ = _native_version()

__all__ = [
    "InferenceSession", "SessionOptions", "NodeArg", "ModelMetadata",
    "Error", "InvalidModel", "InvalidArgument", "Unsupported", "ExecutionError", "FileError", "InternalError",
    "backend", "get_available_providers", "kernel_isa",
]


def get_available_providers() -> list[str]:
    return ["CPUExecutionProvider"]


def __getattr__(name: str):
    if name == "backend":
        import importlib

        mod = importlib.import_module(".backend", __name__)
        globals()["backend"] = mod
        return mod
    raise AttributeError(f"module 'tessera' has no attribute {name!r}")
