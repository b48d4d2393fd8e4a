"""InferenceSession: an onnxruntime-shaped front end over tessera::Session."""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import _dtypes
from . import _tessera
from ._tessera import InvalidArgument

# Errors raised on the Python side carry the same attributes as those from C++.
for _cls, _code in [(_tessera.Error, ""), (_tessera.InvalidModel, "invalid model"),
                    (_tessera.InvalidArgument, "invalid argument"), (_tessera.Unsupported, "unsupported"),
                    (_tessera.ExecutionError, "runtime error"), (_tessera.FileError, "I/O error"),
                    (_tessera.InternalError, "internal error")]:
    _cls.node_name = ""
    _cls.op_type = ""
    _cls.code = _code


class SessionOptions:
    """Options of a session. Also takes onnxruntime's spellings, as attributes of this class
    (intra_op_num_threads, inter_op_num_threads, graph_optimization_level, enable_profiling,
    profile_file_prefix), or from an onnxruntime.SessionOptions given in its place (with its config entry
    session.set_denormal_as_zero). flush_denormals (default True): runs flush denormals to zero (x86 FTZ +
    DAZ; a denormal costs Intel cores a microcode assist per instruction). An attribute this class does not
    have raises AttributeError, as onnxruntime's does, instead of being kept and silently ignored."""

    __slots__ = ("threads", "optimization_level", "enable_profiling", "profile_path", "backend",
                 "flush_denormals", "inter_op_num_threads")

    def __init__(self, threads: int = 0, optimization_level: int = 99, enable_profiling: bool = False,
                 profile_path: str = "", backend: str = "cpu", flush_denormals: bool = True):
        self.threads = threads
        self.optimization_level = optimization_level
        self.enable_profiling = enable_profiling
        self.profile_path = profile_path
        self.backend = backend
        self.flush_denormals = flush_denormals
        self.inter_op_num_threads = 0  # onnxruntime's: nodes run one at a time here, so kept, not used

    # onnxruntime's spellings of the fields above
    @property
    def intra_op_num_threads(self) -> int:
        return self.threads

    @intra_op_num_threads.setter
    def intra_op_num_threads(self, n: int) -> None:
        if int(n) < 0:
            raise InvalidArgument("intra_op_num_threads must be non-negative")
        self.threads = int(n)

    @property
    def graph_optimization_level(self) -> int:
        return self.optimization_level

    @graph_optimization_level.setter
    def graph_optimization_level(self, level: Any) -> None:
        # onnxruntime's GraphOptimizationLevel or its value: 0 (ORT_DISABLE_ALL) runs the graph as imported
        level = int(getattr(level, "value", level))
        self.optimization_level = 0 if level == 0 else 99

    @property
    def profile_file_prefix(self) -> str:
        return self.profile_path[:-5] if self.profile_path.endswith(".json") else self.profile_path

    @profile_file_prefix.setter
    def profile_file_prefix(self, prefix: str) -> None:
        self.profile_path = str(prefix) + ".json" if prefix else ""

    def _native(self) -> "_tessera._SessionOptions":
        o = _tessera._SessionOptions()
        o.threads = int(self.threads or 0)
        o.optimization_level = int(self.optimization_level)
        o.enable_profiling = bool(self.enable_profiling)
        o.profile_path = str(self.profile_path or "")
        o.backend = str(self.backend or "cpu")
        o.flush_denormals = bool(self.flush_denormals)
        return o

    @classmethod
    def _coerce(cls, opts: Any) -> "SessionOptions":
        if opts is None:
            return cls()
        if isinstance(opts, cls):
            out = cls(opts.threads, opts.optimization_level, opts.enable_profiling, opts.profile_path,
                      opts.backend, opts.flush_denormals)
            out.inter_op_num_threads = opts.inter_op_num_threads
            return out
        # duck-typed onnxruntime.SessionOptions
        out = cls()
        out.intra_op_num_threads = int(getattr(opts, "intra_op_num_threads", 0) or 0)
        level = getattr(opts, "graph_optimization_level", None)
        if level is not None:
            out.graph_optimization_level = level
        out.enable_profiling = bool(getattr(opts, "enable_profiling", False))
        out.profile_file_prefix = getattr(opts, "profile_file_prefix", "") or ""
        try:  # set explicitly there: "1" flushes, "0" keeps denormals (unset: this class's default)
            entry = opts.get_session_config_entry("session.set_denormal_as_zero")
        except Exception:  # noqa: BLE001 (onnxruntime raises when the entry is unset)
            entry = ""
        if entry in ("0", "1"):
            out.flush_denormals = entry == "1"
        return out


class NodeArg:
    """A graph input or output: .name, .shape (ints, symbol strings, None for
    anonymous dims; None when the rank is unknown) and .type ("tensor(float)")."""

    __slots__ = ("name", "type", "shape", "_dtype")

    def __init__(self, name: str, type: str, dtype: str, shape: list | None):
        self.name = name
        self.type = type
        self.shape = shape
        self._dtype = dtype

    @property
    def dtype(self) -> np.dtype | None:
        """The numpy dtype of the (element) tensors, when numpy has one."""
        return _dtypes.numpy_dtype(self._dtype)

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    def __init__(self, producer_name="", graph_name="", domain="", description="", version=0,
                 custom_metadata_map=None, graph_description=""):
        self.producer_name = producer_name
        self.graph_name = graph_name
        self.domain = domain
        self.description = description
        self.version = version
        self.custom_metadata_map = dict(custom_metadata_map or {})
        self.graph_description = graph_description


def _kind(type_str: str) -> str:
    return type_str.split("(", 1)[0] if "(" in type_str else "tensor"


def _encode_tensor(value: Any, expect: str | None, where: str, info: NodeArg | None):
    """Tagged wire form of one tensor (see python/src/tessera_py.cpp)."""
    if isinstance(value, np.ndarray):
        arr = value
    else:
        target = _dtypes.numpy_dtype(expect) if expect and expect != "undefined" else None
        try:
            if target is not None and expect != "string":
                arr = np.asarray(value, dtype=target)
            else:
                arr = np.asarray(value)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"{where}: cannot convert {type(value).__name__} to an array: {e}") from None
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if not arr.flags.c_contiguous:
        arr = np.array(arr, order="C", copy=True)
    name = _dtypes.tessera_name(arr.dtype)
    if name is None:
        raise InvalidArgument(f"{where}: numpy dtype {arr.dtype} has no Tessera element type")
    if expect and expect != "undefined" and name != expect:
        want = info.type if info is not None else expect
        raise InvalidArgument(f"{where}: expected {want}, got a {arr.dtype} array "
                              f"(tensor({_dtypes.onnx_type_name(name)}))")
    if info is not None and info.shape is not None and _kind(info.type) == "tensor":
        if arr.ndim != len(info.shape) or any(isinstance(d, int) and d != n for d, n in zip(info.shape, arr.shape)):
            raise InvalidArgument(f"{where}: expected shape {_fmt_shape(info.shape)}, got {_fmt_shape(list(arr.shape))}")
    shape = tuple(int(d) for d in arr.shape)
    if name == "string":
        items = []
        for x in arr.reshape(-1).tolist():
            if isinstance(x, (str, bytes)):
                items.append(x)
            elif isinstance(x, np.str_):
                items.append(str(x))
            else:
                raise InvalidArgument(f"{where}: string tensors hold str or bytes, got {type(x).__name__}")
        return ("s", shape, items)
    return ("t", name, shape, _dtypes.to_wire(arr, name))


def _fmt_shape(shape: list) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _encode(value: Any, info: NodeArg | None, where: str):
    kind = _kind(info.type) if info is not None else None
    elem = info._dtype if info is not None else None
    if kind == "optional":
        inner = info.type[len("optional("):-1]
        if value is None:
            return ("n", elem or "undefined")
        info = NodeArg(info.name, inner, info._dtype, info.shape)
        kind = _kind(inner)
    if value is None:
        if info is None:
            return ("n", "undefined")
        raise InvalidArgument(f"{where}: None given for a {info.type} input")
    if kind == "seq" or (kind is None and isinstance(value, (list, tuple)) and value
                         and all(isinstance(v, np.ndarray) for v in value)):
        if not isinstance(value, (list, tuple)):
            raise InvalidArgument(f"{where}: a sequence input takes a list of arrays")
        items = [_encode_tensor(v, elem, f"{where}[{i}]", None) for i, v in enumerate(value)]
        return ("q", elem or (items[0][1] if items and items[0][0] == "t" else "undefined"), items)
    return _encode_tensor(value, elem, where, info)


def _decode(value):
    tag = value[0]
    if tag == "t":
        _, name, shape, buf = value
        return _dtypes.from_wire(buf, name, tuple(shape))
    if tag == "s":
        _, shape, items = value
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
        return arr.reshape(tuple(shape))
    if tag == "q":
        return [_decode(v) for v in value[2]]
    return None


class InferenceSession:
    """Loads an ONNX model (a path, path-like, or the serialized bytes) and runs it.

    >>> sess = tessera.InferenceSession("model.onnx", threads=2)
    >>> (y,) = sess.run(None, {"x": x})
    """

    def __init__(self, path_or_bytes: str | os.PathLike | bytes, sess_options: Any = None,
                 providers: Sequence[Any] | None = None, provider_options: Any = None, *,
                 threads: int | None = None, **kwargs: Any):
        # Also accept threads as the 2nd positional argument (an int).
        if isinstance(sess_options, int) and not isinstance(sess_options, bool):
            threads, sess_options = sess_options, None
        opts = SessionOptions._coerce(sess_options)
        if threads is not None:
            if int(threads) < 0:
                raise InvalidArgument("threads must be non-negative")
            opts.threads = int(threads)
        self._options = opts
        self._providers = list(providers) if providers else ["CPUExecutionProvider"]
        native = opts._native()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_bytes = bytes(path_or_bytes)
            self._model_path = None
            self._sess = _tessera._Session.from_bytes(self._model_bytes, native)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._model_bytes = None
            self._sess = _tessera._Session.from_path(self._model_path, native)
        elif hasattr(path_or_bytes, "SerializeToString"):  # an onnx.ModelProto
            self._model_bytes = path_or_bytes.SerializeToString()
            self._model_path = None
            self._sess = _tessera._Session.from_bytes(self._model_bytes, native)
        else:
            raise InvalidArgument("InferenceSession takes a model path, the model bytes or a ModelProto, "
                                  f"not {type(path_or_bytes).__name__}")
        self._inputs = [NodeArg(*t) for t in self._sess.inputs()]
        self._outputs = [NodeArg(*t) for t in self._sess.outputs()]
        self._input_by_name = {a.name: a for a in self._inputs}

    # -- description -------------------------------------------------------
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []

    def get_providers(self) -> list[str]:
        return ["CPUExecutionProvider"]

    def get_session_options(self) -> SessionOptions:
        return self._options

    def graph_text(self) -> str:
        """The model as Tessera's IR text (after import and optimization)."""
        return self._sess.graph_text()

    def peak_memory_bytes(self) -> int:
        return self._sess.peak_memory_bytes()

    def end_profiling(self) -> str:
        """Writes the Chrome trace of the runs so far (enable_profiling), stops profiling and returns the
        file's path, as onnxruntime's does; "" when profiling is off or already ended."""
        return self._sess.end_profiling()

    def get_modelmeta(self) -> ModelMetadata:
        """Producer, graph name, metadata_props (read with the onnx package when installed)."""
        try:
            import onnx
        except ImportError:
            return ModelMetadata()
        try:
            if self._model_bytes is not None:
                m = onnx.load_model_from_string(self._model_bytes)
            else:
                m = onnx.load(self._model_path, load_external_data=False)
        except Exception:  # noqa: BLE001 - metadata is best effort
            return ModelMetadata()
        return ModelMetadata(m.producer_name, m.graph.name, m.domain, m.doc_string, m.model_version,
                             {p.key: p.value for p in m.metadata_props}, m.graph.doc_string)

    # -- running -------------------------------------------------------------
    def run(self, output_names: Iterable[str] | None, input_feed: Mapping[str, Any], run_options: Any = None) -> list:
        """Runs the model; returns the outputs named (all when None) as numpy
        arrays (lists for sequences, None for empty optionals)."""
        if type(input_feed) is dict:
            out = self._sess.run_arrays(input_feed, output_names)
            if out is not None:  # the common call, in C++ (see run_arrays); otherwise the general path below
                return [v if type(v) is not tuple else _decode(v) for v in out]
        if not isinstance(input_feed, Mapping):
            raise InvalidArgument("input_feed must be a dict {input name: array}")
        feeds = {}
        for name, value in input_feed.items():
            if not isinstance(name, str):
                raise InvalidArgument(f"input names are strings, got {name!r}")
            info = self._input_by_name.get(name)
            if info is None:
                known = ", ".join(a.name for a in self._inputs)
                raise InvalidArgument(f"the model has no input named '{name}' (inputs: {known})")
            feeds[name] = _encode(value, info, f"input '{name}'")
        missing = [a.name for a in self._inputs if a.name not in feeds]
        if missing:
            raise InvalidArgument("missing input(s): " + ", ".join(f"'{m}'" for m in missing))
        names = [] if output_names is None else [str(n) for n in output_names]
        return [_decode(v) for v in self._sess.run(feeds, names)]

    def run_with_ort_values(self, *args, **kwargs):  # pragma: no cover - API shape only
        raise _tessera.Unsupported("run_with_ort_values is not supported; use run()")
