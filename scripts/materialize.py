#!/usr/bin/env python3
"""Rebuild a runnable ONNX model from a skeleton (assets/models/*.skeleton.onnx).

A skeleton is an ordinary ONNX file in which each large float initializer has no
data; its doc_string reads `skeleton:{"mean": m, "std": s}`. Rebuilding fills it,
in its declared dims and type, with N(m, s^2) noise drawn from
numpy.random.default_rng([seed, crc32(name)]): standard_normal(count, float32) * s + m,
then cast to the tensor's type. The same skeleton and seed give the same bytes on
every machine. Models over 1.8 GB are written with external data.

  python3 scripts/materialize.py assets/models/resnet50.skeleton.onnx build/models/resnet50.onnx [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import os
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

TAG = "skeleton:"
_FLOAT_TYPES = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.DOUBLE: np.float64,
}


def _fill(tensor: onnx.TensorProto, seed: int) -> None:
    note = json.loads(tensor.doc_string[len(TAG):])
    if tensor.data_type not in _FLOAT_TYPES:
        raise ValueError(f"skeleton tensor {tensor.name!r} has non-float type {tensor.data_type}")
    count = 1
    for d in tensor.dims:
        count *= int(d)
    rng = np.random.default_rng([seed, zlib.crc32(tensor.name.encode("utf-8"))])
    values = rng.standard_normal(count, dtype=np.float32) * np.float32(note["std"]) + np.float32(note["mean"])
    dense = numpy_helper.from_array(values.astype(_FLOAT_TYPES[tensor.data_type]).reshape(list(tensor.dims)),
                                    tensor.name)
    tensor.CopyFrom(dense)


def materialize(skeleton_path: str, out_path: str, seed: int = 0) -> str:
    model = onnx.load(skeleton_path)
    for t in model.graph.initializer:
        if t.doc_string.startswith(TAG):
            _fill(t, seed)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    external = model.ByteSize() > 1_800_000_000
    onnx.save(model, out_path, save_as_external_data=external)
    return out_path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("skeleton")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    materialize(a.skeleton, a.out, a.seed)


if __name__ == "__main__":
    main()
