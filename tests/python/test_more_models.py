"""Models of other architectures than the shipped ones, built here with onnx.helper from ops the
shipped models do not use, run through tessera and onnxruntime: max|diff| / max|ort| <= 1e-4."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from model_inputs import rel_err

RNG = np.random.default_rng(7)


def _w(name, *shape, scale=None):
    scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1] if len(shape) > 1 else 1.0)
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def _f32(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def _model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # (no onnx.checker: outputs are declared without shapes, which it rejects but ONNX allows)
    return m


def unet_like():
    """Conv encoder / ConvTranspose + Resize decoder with skip Concat, BatchNorm (unfolded),
    InstanceNorm, LeakyRelu, MaxPool, Sigmoid."""
    c = 8
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s1", "o1", "m1", "v1"], ["bn1"]),
        helper.make_node("LeakyRelu", ["bn1"], ["a1"], alpha=0.1),
        helper.make_node("MaxPool", ["a1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], dilations=[1, 1]),
        helper.make_node("InstanceNormalization", ["c2", "s2", "o2"], ["in2"]),
        helper.make_node("Relu", ["in2"], ["a2"]),
        helper.make_node("ConvTranspose", ["a2", "wt"], ["up"], strides=[2, 2], kernel_shape=[2, 2]),
        helper.make_node("Resize", ["p1", "", "scales"], ["rs"], mode="linear"),
        helper.make_node("Concat", ["up", "a1", "rs"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "w3", "b3"], ["c3"], group=1),
        helper.make_node("Sigmoid", ["c3"], ["y"]),
    ]
    inits = [
        _w("w1", c, 3, 3, 3, scale=0.3), _w("b1", c, scale=0.1), _f32("s1", RNG.uniform(0.5, 1.5, c)),
        _f32("o1", RNG.standard_normal(c) * 0.1), _f32("m1", RNG.standard_normal(c) * 0.1),
        _f32("v1", RNG.uniform(0.5, 2, c)), _w("w2", c, c, 3, 3, scale=0.2), _f32("s2", np.ones(c)),
        _f32("o2", np.zeros(c)), _w("wt", c, c, 2, 2, scale=0.3), _f32("scales", [1, 1, 2, 2]),
        _w("w3", 2, 3 * c, 1, 1, scale=0.2), _w("b3", 2, scale=0.1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits), {
        "x": RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)}


def lstm_tagger():
    """Embedding Gather -> bidirectional LSTM -> GRU -> Gemm -> LogSoftmax -> ArgMax."""
    vocab, emb, hid, seq, batch = 50, 16, 12, 9, 2
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"]),
        helper.make_node("Transpose", ["e"], ["et"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["et", "lw", "lr", "lb"], ["ly"], direction="bidirectional", hidden_size=hid),
        helper.make_node("Transpose", ["ly"], ["lyt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["lyt", "shape"], ["lyr"]),
        helper.make_node("GRU", ["lyr", "gw", "gr", "gb"], ["gy"], hidden_size=hid, linear_before_reset=1),
        helper.make_node("Squeeze", ["gy", "ax1"], ["gs"]),
        helper.make_node("MatMul", ["gs", "ow"], ["logits"]),
        helper.make_node("LogSoftmax", ["logits"], ["lp"], axis=-1),
        helper.make_node("ArgMax", ["lp"], ["tags"], axis=-1, keepdims=0),
    ]
    inits = [
        _w("emb", vocab, emb, scale=1.0), _w("lw", 2, 4 * hid, emb), _w("lr", 2, 4 * hid, hid),
        _w("lb", 2, 8 * hid, scale=0.1), _i64("shape", [seq, batch, 2 * hid]), _w("gw", 1, 3 * hid, 2 * hid),
        _w("gr", 1, 3 * hid, hid), _w("gb", 1, 6 * hid, scale=0.1), _i64("ax1", [1]), _w("ow", hid, 7),
    ]
    return _model(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, seq])],
                  [helper.make_tensor_value_info("lp", TensorProto.FLOAT, None),
                   helper.make_tensor_value_info("tags", TensorProto.INT64, None)], inits), {
        "ids": RNG.integers(0, vocab, (batch, seq)).astype(np.int64)}


def llama_block():
    """A LLaMA-style decoder layer: RMSNorm written out (Pow, ReduceMean, Sqrt, Div), rotary embedding
    via Slice/Neg/Concat, grouped-query attention via Expand, causal mask via Trilu/Where, SiLU MLP."""
    d, heads, kv_heads, hd, seq, ffn = 32, 4, 2, 8, 6, 64
    half = hd // 2
    pos = np.arange(seq)[:, None] / (10000 ** (np.arange(half)[None, :] * 2 / hd))
    cos = np.concatenate([np.cos(pos)] * 2, -1).astype(np.float32)
    sin = np.concatenate([np.sin(pos)] * 2, -1).astype(np.float32)
    nodes = []

    def rms(x, w, out):
        nodes.extend([
            helper.make_node("Pow", [x, "two"], [out + "_sq"]),
            helper.make_node("ReduceMean", [out + "_sq", "axlast"], [out + "_ms"], keepdims=1),
            helper.make_node("Add", [out + "_ms", "eps"], [out + "_mse"]),
            helper.make_node("Sqrt", [out + "_mse"], [out + "_rms"]),
            helper.make_node("Div", [x, out + "_rms"], [out + "_n"]),
            helper.make_node("Mul", [out + "_n", w], [out]),
        ])

    def rope(x, out):
        nodes.extend([
            helper.make_node("Slice", [x, "zero", "halfv", "axlast"], [out + "_x1"]),
            helper.make_node("Slice", [x, "halfv", "big", "axlast"], [out + "_x2"]),
            helper.make_node("Neg", [out + "_x2"], [out + "_nx2"]),
            helper.make_node("Concat", [out + "_nx2", out + "_x1"], [out + "_rot"], axis=-1),
            helper.make_node("Mul", [x, "cos"], [out + "_a"]),
            helper.make_node("Mul", [out + "_rot", "sin"], [out + "_b"]),
            helper.make_node("Add", [out + "_a", out + "_b"], [out]),
        ])

    rms("x", "g1", "h")
    for name, nh in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
        nodes.append(helper.make_node("MatMul", ["h", "w" + name], [name + "p"]))
        nodes.append(helper.make_node("Reshape", [name + "p", "shape_" + name], [name + "r"]))
        nodes.append(helper.make_node("Transpose", [name + "r"], [name + "t"], perm=[0, 2, 1, 3]))
    rope("qt", "qrope")
    rope("kt", "krope")
    for name in ("krope", "vt"):  # [1, kv, seq, hd] -> [1, heads, seq, hd]
        nodes.append(helper.make_node("Unsqueeze", [name, "ax2"], [name + "_u"]))
        nodes.append(helper.make_node("Expand", [name + "_u", "gqa_shape"], [name + "_e"]))
        nodes.append(helper.make_node("Reshape", [name + "_e", "heads_shape"], [name + "_g"]))
    nodes.extend([
        helper.make_node("Transpose", ["krope_g"], ["kT"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qrope", "kT"], ["sc"]),
        helper.make_node("Mul", ["sc", "scale"], ["scs"]),
        helper.make_node("Trilu", ["ones"], ["tri"], upper=0),
        helper.make_node("Cast", ["tri"], ["trib"], to=TensorProto.BOOL),
        helper.make_node("Where", ["trib", "scs", "neg"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["pr"], axis=-1),
        helper.make_node("MatMul", ["pr", "vt_g"], ["att"]),
        helper.make_node("Transpose", ["att"], ["attt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["attt", "shape_out"], ["attr"]),
        helper.make_node("MatMul", ["attr", "wo"], ["ao"]),
        helper.make_node("Add", ["x", "ao"], ["x2"]),
    ])
    rms("x2", "g2", "h2")
    nodes.extend([
        helper.make_node("MatMul", ["h2", "wg"], ["gate"]),
        helper.make_node("Sigmoid", ["gate"], ["sg"]),
        helper.make_node("Mul", ["gate", "sg"], ["silu"]),
        helper.make_node("MatMul", ["h2", "wu"], ["upp"]),
        helper.make_node("Mul", ["silu", "upp"], ["ff"]),
        helper.make_node("MatMul", ["ff", "wd"], ["down"]),
        helper.make_node("Add", ["x2", "down"], ["y"]),
    ])
    inits = [
        _f32("two", 2.0), _i64("axlast", [-1]), _f32("eps", 1e-6), _f32("g1", RNG.uniform(0.8, 1.2, d)),
        _f32("g2", RNG.uniform(0.8, 1.2, d)), _w("wq", d, heads * hd), _w("wk", d, kv_heads * hd),
        _w("wv", d, kv_heads * hd), _w("wo", heads * hd, d), _w("wg", d, ffn), _w("wu", d, ffn), _w("wd", ffn, d),
        _i64("shape_q", [1, seq, heads, hd]), _i64("shape_k", [1, seq, kv_heads, hd]),
        _i64("shape_v", [1, seq, kv_heads, hd]), _i64("zero", [0]), _i64("halfv", [half]), _i64("big", [1 << 30]),
        _f32("cos", cos), _f32("sin", sin), _i64("ax2", [2]), _i64("gqa_shape", [1, kv_heads, heads // kv_heads, seq, hd]),
        _i64("heads_shape", [1, heads, seq, hd]), _f32("scale", 1 / np.sqrt(hd)),
        _f32("ones", np.ones((seq, seq))), _f32("neg", -1e9), _i64("shape_out", [1, seq, heads * hd]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits, opset=18), {
        "x": RNG.standard_normal((1, seq, d)).astype(np.float32)}


def quantized_mlp():
    """Dynamic quantization of activations, MatMulInteger with int8 weights, dequantize, Gelu (opset 20),
    then QDQ around a Conv-free Gemm."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "wq", "xz", "wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["scale"]),
        helper.make_node("Mul", ["accf", "scale"], ["h"]),
        helper.make_node("Gelu", ["h"], ["g"], approximate="tanh"),
        helper.make_node("QuantizeLinear", ["g", "qs", "qz"], ["gq"]),
        helper.make_node("DequantizeLinear", ["gq", "qs", "qz"], ["gd"]),
        helper.make_node("Gemm", ["gd", "w2", "b2"], ["y"], transB=1),
    ]
    inits = [
        numpy_helper.from_array(RNG.integers(0, 256, (16, 24)).astype(np.uint8), "wq"),
        numpy_helper.from_array(np.uint8(128), "wz"), _f32("ws", 0.01), _f32("qs", 0.02),
        numpy_helper.from_array(np.uint8(128), "qz"), _w("w2", 5, 24), _w("b2", 5, scale=0.1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits, opset=20), {
        "x": RNG.standard_normal((3, 16)).astype(np.float32)}


@pytest.mark.parametrize("build", [unet_like, lstm_tagger, llama_block, quantized_mlp], ids=lambda f: f.__name__)
def test_matches_onnxruntime(build):
    model, feeds = build()
    data = model.SerializeToString()
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    ours = tessera.InferenceSession(data).run(None, feeds)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape and a.dtype == b.dtype
        if a.dtype.kind in "iub":
            # integer outputs (ArgMax) may differ only where the float inputs tie
            assert np.mean(a != b) <= 0.05
        else:
            assert rel_err(a, b) <= 1e-4, rel_err(a, b)


def _arch_models():
    """bench/arch_models.py: EfficientNet-B0, ConvNeXt-T and a LLaMA-style decoder as PyTorch exports them."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "arch_models.py")
    spec = importlib.util.spec_from_file_location("arch_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["efficientnet_b0", "convnext_tiny", "llama_decoder", "mobilenet_v3_large",
                                  "resnext50", "densenet121", "unet", "whisper_encoder", "shufflenet_v2",
                                  "yolov8n", "swin_tiny", "lstm_tagger", "t5_encoder", "sd_unet",
                                  "wav2vec2_base", "inception_v3", "mobilevit_s", "detr_r50", "regnety_800mf",
                                  "conformer", "dlrm", "vgg16", "deeplabv3", "fast_neural_style", "espcn",
                                  "gru_lm", "r3d_18", "squeezenet1_1", "googlenet", "efficientnet_v2_s",
                                  "regnetx_400mf", "mlp_mixer", "clip_text", "wavenet", "pointnet", "hrnet_w18", "quartznet", "crnn",
                                  "bit_resnet50"])
@pytest.mark.parametrize("threads", [1, 2])
def test_unseen_architectures_match_onnxruntime(name, threads):
    """The benchmark's unseen architectures, each pattern at a small size (SiLU and squeeze-and-excitation in
    NHWC, Transposes around LayerNorm folded into the layout, SiLU in GEMM epilogues), against onnxruntime."""
    model = _arch_models().BUILDERS[name](small=True)
    data = model.SerializeToString()
    rng = np.random.default_rng(3)
    feeds = {}
    for inp in model.graph.input:
        dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        feeds[inp.name] = (rng.integers(0, 50, dims).astype(np.int64)
                           if inp.type.tensor_type.elem_type == TensorProto.INT64
                           else rng.standard_normal(dims).astype(np.float32))
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    ours = tessera.InferenceSession(data, tessera.SessionOptions(threads=threads)).run(None, feeds)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape
        assert rel_err(a, b) <= 1e-4, rel_err(a, b)
