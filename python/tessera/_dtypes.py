"""numpy <-> Tessera element types.

Tessera names its types like ``float32``, ``bfloat16``, ``float8e4m3fn``,
``int4``; ONNX-style type strings look like ``tensor(float)``. The types numpy
lacks (bfloat16, the float8 formats, int4/uint4, ...) come from ml_dtypes when
it is installed. 4- and 2-bit integers are stored one per byte on both sides;
Tessera keeps signed ones sign-extended while ml_dtypes keeps only the low
bits, so they are converted on the way in and out.
"""

from __future__ import annotations

import numpy as np

try:  # optional: the narrow types
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    _ml = None

# Tessera name -> numpy dtype
_T2NP: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float16": np.dtype(np.float16),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}
if _ml is not None:
    for _t, _attr in [
        ("bfloat16", "bfloat16"),
        ("float8e4m3fn", "float8_e4m3fn"),
        ("float8e4m3fnuz", "float8_e4m3fnuz"),
        ("float8e5m2", "float8_e5m2"),
        ("float8e5m2fnuz", "float8_e5m2fnuz"),
        ("float8e8m0", "float8_e8m0fnu"),
        ("float4e2m1", "float4_e2m1fn"),
        ("int4", "int4"),
        ("uint4", "uint4"),
        ("int2", "int2"),
        ("uint2", "uint2"),
    ]:
        if hasattr(_ml, _attr):
            _T2NP[_t] = np.dtype(getattr(_ml, _attr))

_NP2T: dict[np.dtype, str] = {v: k for k, v in _T2NP.items()}

# Tessera name -> ONNX type name (as in "tensor(float)")
_T2ONNX = {
    "float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "string": "string", "complex64": "complex64", "complex128": "complex128",
    "float8e4m3fn": "float8e4m3fn", "float8e4m3fnuz": "float8e4m3fnuz", "float8e5m2": "float8e5m2",
    "float8e5m2fnuz": "float8e5m2fnuz", "float8e8m0": "float8e8m0", "float4e2m1": "float4e2m1",
    "int4": "int4", "uint4": "uint4", "int2": "int2", "uint2": "uint2",
}
_ONNX2T = {v: k for k, v in _T2ONNX.items()}

_SIGNED_SUBBYTE = {"int4": 4, "int2": 2}
_UNSIGNED_SUBBYTE = {"uint4": 4, "uint2": 2}


def numpy_dtype(tessera_name: str) -> np.dtype | None:
    """The numpy dtype of a Tessera element type (None when numpy cannot hold it)."""
    if tessera_name == "string":
        return np.dtype(object)
    return _T2NP.get(tessera_name)


def tessera_name(dtype: np.dtype) -> str | None:
    """The Tessera element type of a numpy dtype (None when there is none)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "USO":
        return "string"
    if dtype.byteorder == ">":
        dtype = dtype.newbyteorder("=")
    return _NP2T.get(dtype)


def onnx_type_name(tessera_name: str) -> str:
    return _T2ONNX.get(tessera_name, tessera_name)


def from_onnx_type_name(onnx_name: str) -> str | None:
    return _ONNX2T.get(onnx_name)


def to_wire(arr: np.ndarray, name: str) -> np.ndarray:
    """Raw little-endian C-order bytes (uint8, 1-D) of a contiguous array, in Tessera's layout."""
    flat = arr.reshape(-1)
    if name in _SIGNED_SUBBYTE:
        bits = _SIGNED_SUBBYTE[name]
        low = flat.view(np.uint8).astype(np.int16) & ((1 << bits) - 1)
        signed = np.where(low >= (1 << (bits - 1)), low - (1 << bits), low)
        return signed.astype(np.int8).view(np.uint8)
    if name in _UNSIGNED_SUBBYTE:
        return flat.view(np.uint8) & np.uint8((1 << _UNSIGNED_SUBBYTE[name]) - 1)
    return flat.view(np.uint8)


def from_wire(buf: np.ndarray, name: str, shape: tuple) -> np.ndarray:
    """The numpy array for raw Tessera bytes (no copy where the layouts agree)."""
    dt = _T2NP.get(name)
    if dt is None:
        raise TypeError(f"Tessera returned a {name} tensor, which numpy cannot hold "
                        "(install ml_dtypes for the narrow types)")
    if name in _SIGNED_SUBBYTE or name in _UNSIGNED_SUBBYTE:
        bits = _SIGNED_SUBBYTE.get(name) or _UNSIGNED_SUBBYTE[name]
        buf = buf & np.uint8((1 << bits) - 1)
    return buf.view(dt).reshape(shape)
