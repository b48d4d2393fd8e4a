#!/usr/bin/env python3
"""Quantized variants of the shared models, made the way users make them, with onnxruntime's quantization
tool (no download): static QDQ (onnxruntime's default format: u8 activations, s8 per-channel symmetric
weights, calibrated on seeded random inputs) for the CNNs, and dynamic int8 (DynamicQuantizeLinear +
MatMulInteger by s8 weights) for the transformers. Written to build/models/quant/NAME.onnx; then

  PYTHONPATH=build/release/pydev python3 bench/compare_ort.py build/models/quant/resnet18_qdq.onnx ...

Quantized outputs move in quantization steps: onnxruntime at its two optimization levels already differs by
one step somewhere (a few % of a random-weight model's output range), so compare errors against that.

  python3 bench/quant_models.py [NAME ...]     (default: the shared models'; NAME from MODELS)
"""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ort import model_path  # noqa: E402
from model_inputs import make_feeds  # noqa: E402

OUT = os.path.join(ROOT, "build", "models", "quant")


def static_qdq(src: str, dst: str, fmt: str = "QDQ") -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = dst + ".pre.onnx"
    quant_pre_process(src, pre)  # onnxruntime's own preparation (folds the exporter's shared constants)
    model = onnx.load(pre)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = [make_feeds(model, seed=s, dims={}) for s in range(4)]

        def get_next(self):
            return self.feeds.pop() if self.feeds else None

    quantize_static(pre, dst, Reader(), quant_format=getattr(QuantFormat, fmt), activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    os.remove(pre)


def static_qoperator(src: str, dst: str) -> None:
    """The QOperator format: QLinearConv and onnxruntime's com.microsoft QLinearAdd, QLinearSigmoid,
    QLinearMul, QLinearConcat, QLinearGlobalAveragePool, QGemm (the ONNX model zoo's int8 models)."""
    static_qdq(src, dst, fmt="QOperator")


def dynamic_int8(src: str, dst: str) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(src, dst, weight_type=QuantType.QInt8)


MODELS = {
    "resnet18_qdq": ("resnet18", static_qdq),
    "resnet50_qdq": ("resnet50", static_qdq),
    "mobilenet_v2_qdq": ("mobilenet_v2", static_qdq),
    "bert_base_int8": ("bert_base", dynamic_int8),
    "gpt2_int8": ("gpt2", dynamic_int8),
    # architectures the int8 path was not written against (bench/arch_models.py builds them first)
    "efficientnet_b0_qdq": ("arch/efficientnet_b0", static_qdq),
    "mobilenet_v3_large_qdq": ("arch/mobilenet_v3_large", static_qdq),
    "regnetx_400mf_qdq": ("arch/regnetx_400mf", static_qdq),
    "shufflenet_v2_qdq": ("arch/shufflenet_v2", static_qdq),
    "densenet121_qdq": ("arch/densenet121", static_qdq),
    "resnext50_qdq": ("arch/resnext50", static_qdq),
    "squeezenet1_1_qdq": ("arch/squeezenet1_1", static_qdq),
    "googlenet_qdq": ("arch/googlenet", static_qdq),
    # the QOperator format (contrib ops expanded at import)
    "resnet18_qop": ("resnet18", static_qoperator),
    "efficientnet_b0_qop": ("arch/efficientnet_b0", static_qoperator),
    "googlenet_qop": ("arch/googlenet", static_qoperator),
}

# the shared models' (the default)
DEFAULT = ["resnet18_qdq", "resnet50_qdq", "mobilenet_v2_qdq", "bert_base_int8", "gpt2_int8"]


def main() -> None:
    names = sys.argv[1:] or DEFAULT
    os.makedirs(OUT, exist_ok=True)
    for name in names:
        base, make = MODELS[name]
        dst = os.path.join(OUT, name + ".onnx")
        if not os.path.exists(dst):
            make(model_path(base), dst)
        print(dst, flush=True)


if __name__ == "__main__":
    np.random.seed(0)
    main()
