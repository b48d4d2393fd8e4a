#!/usr/bin/env python3
"""Full-size models of architectures the shipped set does not have, written node for node as PyTorch's
exporter writes them (opset 17; 18 for the decoder), with random weights: the check that speed holds on models nobody tuned for.

  python3 bench/arch_models.py [--out build/models/arch]      # writes NAME.onnx for each builder below
  python3 bench/compare_ort.py build/models/arch/efficientnet_b0.onnx ... --threads 1 2

- efficientnet_b0: torchvision's EfficientNet-B0 (MBConv with 3x3 and 5x5 depthwise, squeeze-and-excitation,
  SiLU as Sigmoid + Mul, BatchNorm folded into the convs as the exporter does in eval mode), 224 x 224.
- convnext_tiny: torchvision's ConvNeXt-T (7x7 depthwise, Transpose to channels-last, LayerNormalization,
  Linear as MatMul + Add, GELU as the Div/Erf/Add/Mul pattern, layer scale, residual), 224 x 224.
- mobilenet_v3_large: torchvision's MobileNetV3-Large (HardSwish and Relu, squeeze-and-excitation gated by
  HardSigmoid, 3x3 and 5x5 depthwise), 224 x 224.
- llama_decoder: a LLaMA-style decoder, 4 layers of hidden 1024 (16 heads, 4 KV heads, SiLU-gated MLP of
  2816), RMSNorm written out, rotary embeddings by Slice/Neg/Concat, causal mask by Trilu/Where, a vocabulary
  of 8192, prefill of 32 tokens.
- resnext50: torchvision's ResNeXt-50 32x4d (grouped 3x3 convs of 32 groups, 4 to 32 channels a group),
  224 x 224.
- densenet121: torchvision's DenseNet-121 (pre-activation BatchNormalization -> Relu -> Conv that the exporter
  cannot fold, Concat of every earlier feature map, AveragePool transitions), 224 x 224.
- unet: a 4-level U-Net (3x3 conv pairs, MaxPool, ConvTranspose 2x2 up-convolutions and nearest Resize + conv
  in alternate decoder levels, Concat skips), 256 x 256.
- shufflenet_v2: torchvision's ShuffleNetV2 1.0x (channel split by Split, channel shuffle as Reshape / 5-D
  Transpose / Reshape, depthwise 3x3, Concat), 224 x 224.
- yolov8n: a YOLOv8n-style detector (Conv + SiLU, C2f blocks of Split / bottlenecks / Concat, SPPF's chained
  5x5 MaxPools, nearest 2x Resize, two detection heads), 640 x 640.
- swin_tiny: Swin-T (windows by 6-D Reshape / Transpose, cyclic shift by Slice + Concat, relative position
  bias and the shifted windows' mask added to the scores, patch merging by strided Slices), 224 x 224.
- lstm_tagger: a sequence tagger, embeddings into 2 bidirectional LSTM layers of 512 (as nn.LSTM exports
  them), 128 tokens.
- t5_encoder: T5-small's encoder (6 layers of 512, relative position bias bucketed from Range / Log / Where and
  gathered, as the exporter leaves it; T5LayerNorm written out; unscaled scores), 128 tokens.
- sd_unet: a Stable-Diffusion-style denoising U-Net (diffusers' UNet2DModel layout: ResNet blocks of GroupNorm
  -> SiLU -> 3x3 conv with the timestep embedding added, GroupNorm exported as opset 17 writes it: Reshape /
  InstanceNormalization / Reshape / Mul / Add; self-attention blocks over the pixels at the two lower levels;
  sinusoidal timestep embedding by Exp / Sin / Cos / Concat; strided-conv down, nearest Resize + conv up),
  a 4 x 64 x 64 latent, channels 128 / 256 / 256.
- wav2vec2_base: wav2vec 2.0 base (a raw-waveform feature encoder of seven Conv1d + GELU, the first with a
  GroupNorm of a group per channel; feature projection; a positional Conv1d of 128 taps in 16 groups; 12
  post-LayerNorm transformer layers of 768), 1 s of 16 kHz audio.
- inception_v3: torchvision's Inception-v3 (factorized 1x7 / 7x1 and 1x3 / 3x1 convs, unpadded stride-2 3x3
  reductions, 3x3 average pools of stride 1 in the branches, four- and six-way Concats), 299 x 299.
- mobilevit_s: MobileViT-S (inverted residuals with SiLU; MobileViT blocks: a local 3x3 + 1x1 conv, the map
  unfolded into 2 x 2 patches by Reshape / Transpose as HuggingFace's model writes it, pre-LayerNorm
  transformer layers over the patches with the four pixel positions as the batch, folded back, fused with
  the input by Concat + 3x3 conv), 256 x 256.
- detr_r50: DETR (a ResNet-50 backbone, 1x1 projection to 256, 6 post-LayerNorm encoder layers whose queries
  and keys carry a sine position embedding, 6 decoder layers of 100 learned object queries with self- and
  cross-attention, class and box heads), nn.MultiheadAttention as exported: sequence-first [L, B * heads,
  head dim] views), 512 x 512.
- regnety_800mf: torchvision's RegNetY-800MF (grouped 3x3 convs of 16 channels a group, squeeze-and-excitation
  on the block's input width, Relu), 224 x 224.
- conformer: a Conformer encoder (4 blocks of 256, 4 heads, over 200 frames: half-step SiLU feed-forwards,
  self-attention, and the convolution module — pointwise conv to 512, GLU as Split / Sigmoid / Mul, a 31-tap
  depthwise Conv1d, BatchNormalization after it, SiLU, pointwise conv), 200 frames of 256 features.
- dlrm: a DLRM-style recommender at a serving batch of 128 (a bottom MLP of 13 dense features, 26 embedding
  tables of 64 gathered by index, pairwise dot products by a batched MatMul of the features with their
  transpose, the upper triangle gathered from the flattened [27, 27] products, a top MLP to a Sigmoid).
- squeezenet1_1: torchvision's SqueezeNet 1.1 (fire modules: a 1x1 squeeze, 1x1 and 3x3 expands joined by
  Concat; MaxPool with ceil_mode; a 1x1 conv classifier before the global pool), 224 x 224.
- googlenet: torchvision's GoogLeNet (Inception v1: four-branch blocks with a 3x3 max pool of stride 1, ceil_mode
  max pools between stages), 224 x 224.
- efficientnet_v2_s: torchvision's EfficientNetV2-S (Fused-MBConv: dense 3x3 expansions at high resolution; then
  MBConv with squeeze-and-excitation; SiLU), 384 x 384.
- regnetx_400mf: torchvision's RegNetX-400MF (grouped 3x3 convs of 16 channels a group, no squeeze-and-excitation,
  widths 32 / 64 / 160 / 400), 224 x 224.
- mlp_mixer: MLP-Mixer B/16 (16 x 16 patch conv, 12 blocks of a token-mixing MLP over the transposed patches and
  a channel MLP, GELU, LayerNorm), 224 x 224.
- clip_text: CLIP's text encoder (12 pre-LayerNorm layers of 512, 8 heads, an additive causal mask, QuickGELU as
  x * Sigmoid(1.702 x), the end-of-text token's features gathered by ArgMax), 77 tokens.
- whisper_encoder: a Whisper-style audio encoder (two Conv1d + GELU, 4 pre-LayerNorm transformer layers of 384,
  6 heads, over 500 frames), 80 mel bins x 1000 frames.
- wavenet: a WaveNet-style generator over 4000 samples of 256-way one-hot audio (two stacks of ten dilated
  causal Conv1d of 2 taps, dilations 1 to 512, each zero-padded on the left by Pad; gated Tanh x Sigmoid of a
  Split; 1 x 1 residual and skip convs; Relu / 1 x 1 head and a Softmax over the channels).
- pointnet: PointNet classification over 1024 points (shared MLPs as Conv1d of kernel 1, ReduceMax over the
  points, the input and feature transform nets whose 3 x 3 and 64 x 64 matrices multiply the points by MatMul,
  Gemm head, LogSoftmax).
- hrnet_w18: an HRNet-W18-style segmenter at 512 x 512 (four parallel branches of 18 / 36 / 72 / 144 channels at
  1/4 to 1/32 scale, basic blocks, every branch fused into every other after each stage: stride-2 3x3 convs
  down, 1x1 conv + bilinear Resize up, Adds; the head concatenates all four upsampled to 1/4).
- quartznet: a QuartzNet-5x5-style speech recognizer over 400 frames of 64 mel features (time-channel separable
  Conv1d blocks: depthwise kernels of 33 to 87 taps, one dilated, pointwise convs, 1x1 residuals, a
  LogSoftmax over 29 characters).
- crnn: a CRNN text recognizer over a 32 x 128 line (VGG-style convs with (2, 1) pools to a height of 1, the
  columns squeezed into a sequence, two bidirectional LSTMs of 256 joined by Linears, LogSoftmax over 37).
- bit_resnet50: a BiT-style ResNet-50 v2 (pre-activation bottlenecks with GroupNorm(32) exported as opset 17
  writes it, Reshape / InstanceNormalization / Reshape / Mul / Add, then Relu), 224 x 224.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Graph:
    """Nodes and initializers with generated names; weights seeded per model."""

    def __init__(self, seed: int):
        self.nodes, self.inits, self.rng, self.count = [], [], np.random.default_rng(seed), 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, value, dtype=np.float32, hint="c") -> str:
        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), n))
        return n

    def weight(self, *shape, fan_in: int, hint="w") -> str:
        return self.const(self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in), hint=hint)

    def bias(self, n: int) -> str:
        return self.const(self.rng.standard_normal(n) * 0.05, hint="b")

    def op(self, op_type: str, inputs, n_out: int = 1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs, outputs, opset=17) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m

    # layers as the exporter writes them
    def conv(self, x, cin, cout, k, stride=1, groups=1, bias=True):
        w = self.weight(cout, cin // groups, k, k, fan_in=cin // groups * k * k)
        ins = [x, w] + ([self.bias(cout)] if bias else [])
        return self.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4 if k > 1 and
                       stride != k else [0] * 4, group=groups)

    def silu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def linear(self, x, cin, cout):  # on a >2-D input: MatMul + Add
        return self.op("Add", [self.op("MatMul", [x, self.weight(cin, cout, fan_in=cin)]), self.bias(cout)])

    def gemm(self, x, cin, cout):  # on a 2-D input: Gemm with transB
        return self.op("Gemm", [x, self.weight(cout, cin, fan_in=cin), self.bias(cout)], transB=1)

    def layer_norm(self, x, c, eps=1e-6):
        scale = self.const(self.rng.uniform(0.8, 1.2, c))
        return self.op("LayerNormalization", [x, scale, self.bias(c)], axis=-1, epsilon=eps)

    def classifier(self, x, c: int, side: int) -> onnx.ModelProto:
        """An ImageNet head on x (c channels): global average pool, flatten, Gemm to 1000 logits; the model
        of a [1, 3, side, side] input."""
        y = self.gemm(self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1), c, 1000)
        self.nodes.append(helper.make_node("Identity", [y], ["logits"]))
        return self.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])

    def gelu(self, x):  # F.gelu (erf) at opset 17
        e = self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0))])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.const(1.0)])]), self.const(0.5)])


# Each builder's `small` variant keeps every pattern at a fraction of the size (tests/python/test_more_models.py).
def efficientnet_b0(small: bool = False) -> onnx.ModelProto:
    g = Graph(10)
    side = 64 if small else 224
    x = g.op("Identity", ["input"])
    x = g.silu(g.conv(x, 3, 32, 3, 2))
    cin = 32
    # expand ratio, kernel, stride, out channels, layers (torchvision's B0)
    stages = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
              (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]
    if small:
        stages = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2)]
    for t, k, s, cout, n in stages:
        for i in range(n):
            stride = s if i == 0 else 1
            exp = cin * t
            h = g.silu(g.conv(x, cin, exp, 1)) if t != 1 else x
            h = g.silu(g.conv(h, exp, exp, k, stride, groups=exp))
            sq = max(1, cin // 4)  # squeeze-and-excitation
            se = g.op("GlobalAveragePool", [h])
            se = g.op("Sigmoid", [g.conv(g.silu(g.conv(se, exp, sq, 1)), sq, exp, 1)])
            h = g.op("Mul", [h, se])
            h = g.conv(h, exp, cout, 1)
            x = g.op("Add", [h, x]) if stride == 1 and cin == cout else h
            cin = cout
    head = 64 if small else 1280
    x = g.silu(g.conv(x, cin, head, 1))
    return g.classifier(x, head, side)


def convnext_tiny(small: bool = False) -> onnx.ModelProto:
    g = Graph(11)

    def ln2d(x, c):  # torchvision's LayerNorm2d: permute, layer_norm, permute back
        t = g.op("Transpose", [x], perm=[0, 2, 3, 1])
        return g.op("Transpose", [g.layer_norm(t, c)], perm=[0, 3, 1, 2])

    dims, depths, side = ([16, 32, 48, 64], [1, 1, 2, 1], 64) if small else ([96, 192, 384, 768], [3, 3, 9, 3], 224)
    x = ln2d(g.conv("input", 3, dims[0], 4, 4), dims[0])
    for stage, (c, n) in enumerate(zip(dims, depths)):
        if stage:
            x = g.conv(ln2d(x, dims[stage - 1]), dims[stage - 1], c, 2, 2)
        for _ in range(n):
            h = g.conv(x, c, c, 7, groups=c)
            h = g.op("Transpose", [h], perm=[0, 2, 3, 1])
            h = g.linear(g.gelu(g.linear(g.layer_norm(h, c), c, 4 * c)), 4 * c, c)
            h = g.op("Transpose", [h], perm=[0, 3, 1, 2])
            h = g.op("Mul", [g.const(g.rng.uniform(0.05, 0.2, (c, 1, 1))), h])  # layer scale
            x = g.op("Add", [h, x])
    x = g.op("Flatten", [ln2d(g.op("GlobalAveragePool", [x]), dims[-1])], axis=1)
    y = g.gemm(x, dims[-1], 1000)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])


def llama_decoder(small: bool = False) -> onnx.ModelProto:
    g = Graph(12)
    d, heads, kv, hd, ffn, layers, vocab, seq = (64, 4, 2, 16, 96, 2, 100, 8) if small else \
        (1024, 16, 4, 64, 2816, 4, 8192, 32)
    half = hd // 2
    inv = 1.0 / (10000 ** (np.arange(half) * 2 / hd))
    ang = np.arange(seq)[:, None] * inv[None, :]
    cos, sin = g.const(np.concatenate([np.cos(ang)] * 2, -1)), g.const(np.concatenate([np.sin(ang)] * 2, -1))
    axlast, two, eps = g.const([-1], np.int64), g.const(2.0), g.const(1e-6)
    zero, halfv, big = g.const([0], np.int64), g.const([half], np.int64), g.const([1 << 30], np.int64)

    def rms(x):
        ms = g.op("ReduceMean", [g.op("Pow", [x, two]), axlast], keepdims=1)
        n = g.op("Mul", [x, g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [ms, eps])])])])
        return g.op("Mul", [g.const(g.rng.uniform(0.8, 1.2, d)), n])

    def rope(x):
        x1, x2 = g.op("Slice", [x, zero, halfv, axlast]), g.op("Slice", [x, halfv, big, axlast])
        rot = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rot, sin])])

    def proj(x, cin, cout):
        return g.op("MatMul", [x, g.weight(cin, cout, fan_in=cin)])

    def heads_of(x, n):  # [1, seq, n * hd] -> [1, n, seq, hd]
        r = g.op("Reshape", [x, g.const([1, seq, n, hd], np.int64)])
        return g.op("Transpose", [r], perm=[0, 2, 1, 3])

    def repeat_kv(x):  # [1, kv, seq, hd] -> [1, heads, seq, hd]
        e = g.op("Expand", [g.op("Unsqueeze", [x, g.const([2], np.int64)]),
                            g.const([1, kv, heads // kv, seq, hd], np.int64)])
        return g.op("Reshape", [e, g.const([1, heads, seq, hd], np.int64)])

    emb = g.const(g.rng.standard_normal((vocab, d)) * 0.02)
    x = g.op("Gather", [emb, "input_ids"])
    tri = g.op("Cast", [g.op("Trilu", [g.const(np.ones((seq, seq)))], upper=0)], to=TensorProto.BOOL)
    for _ in range(layers):
        h = rms(x)
        q, k, v = rope(heads_of(proj(h, d, d), heads)), rope(heads_of(proj(h, d, kv * hd), kv)), \
            heads_of(proj(h, d, kv * hd), kv)
        k, v = repeat_kv(k), repeat_kv(v)
        sc = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), g.const(hd ** -0.5)])
        p = g.op("Softmax", [g.op("Where", [tri, sc, g.const(-3.0e38)])], axis=-1)
        a = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3]),
                             g.const([1, seq, d], np.int64)])
        x = g.op("Add", [x, proj(a, d, d)])
        h = rms(x)
        gate, up = proj(h, d, ffn), proj(h, d, ffn)
        x = g.op("Add", [x, proj(g.op("Mul", [g.silu(gate), up]), ffn, d)])
    y = proj(rms(x), d, vocab)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, vocab])], opset=18)


def mobilenet_v3_large(small: bool = False) -> onnx.ModelProto:
    g = Graph(13)
    side = 64 if small else 224

    def act(x, kind):
        return g.op("HardSwish", [x]) if kind == "HS" else g.op("Relu", [x])

    x = act(g.conv("input", 3, 16, 3, 2), "HS")
    cin = 16
    # kernel, expanded, out, squeeze-excite, activation, stride (torchvision's MobileNetV3-Large)
    cfg = [(3, 16, 16, 0, "RE", 1), (3, 64, 24, 0, "RE", 2), (3, 72, 24, 0, "RE", 1), (5, 72, 40, 1, "RE", 2),
           (5, 120, 40, 1, "RE", 1), (5, 120, 40, 1, "RE", 1), (3, 240, 80, 0, "HS", 2), (3, 200, 80, 0, "HS", 1),
           (3, 184, 80, 0, "HS", 1), (3, 184, 80, 0, "HS", 1), (3, 480, 112, 1, "HS", 1),
           (3, 672, 112, 1, "HS", 1), (5, 672, 160, 1, "HS", 2), (5, 960, 160, 1, "HS", 1),
           (5, 960, 160, 1, "HS", 1)]
    if small:
        cfg = cfg[:7]
    for k, exp, cout, se, a, s in cfg:
        h = act(g.conv(x, cin, exp, 1), a) if exp != cin else x
        h = act(g.conv(h, exp, exp, k, s, groups=exp), a)
        if se:
            sq = (exp // 4 + 7) // 8 * 8
            z = g.op("GlobalAveragePool", [h])
            z = g.op("HardSigmoid", [g.conv(g.op("Relu", [g.conv(z, exp, sq, 1)]), sq, exp, 1)], alpha=1 / 6, beta=0.5)
            h = g.op("Mul", [z, h])
        h = g.conv(h, exp, cout, 1)
        x = g.op("Add", [h, x]) if s == 1 and cin == cout else h
        cin = cout
    last = 6 * cin
    x = act(g.conv(x, cin, last, 1), "HS")
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("HardSwish", [g.gemm(x, last, 1280)])
    y = g.gemm(x, 1280, 1000)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])


def resnext50(small: bool = False) -> onnx.ModelProto:
    g = Graph(14)
    side = 64 if small else 224
    # blocks per stage, and 32 groups of 4 channels at the first stage's width (torchvision's 32x4d)
    depths, groups, base = ([1, 1, 1, 1], 8, 16) if small else ([3, 4, 6, 3], 32, 128)
    x = g.op("Relu", [g.conv("input", 3, 64, 7, 2)])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, n in enumerate(depths):
        width, cout = base << stage, 256 << stage
        for i in range(n):
            s = 2 if stage and i == 0 else 1
            h = g.op("Relu", [g.conv(x, cin, width, 1)])
            h = g.op("Relu", [g.conv(h, width, width, 3, s, groups=groups)])
            h = g.conv(h, width, cout, 1)
            sc = g.conv(x, cin, cout, 1, s) if i == 0 else x  # the downsample: a strided 1x1
            x = g.op("Relu", [g.op("Add", [h, sc])])
            cin = cout
    return g.classifier(x, cin, side)


def densenet121(small: bool = False) -> onnx.ModelProto:
    g = Graph(15)
    side = 64 if small else 224
    growth, bn_size = 32, 4
    blocks = [2, 2, 2, 2] if small else [6, 12, 24, 16]

    def bn_relu(x, c):  # a BatchNormalization the exporter cannot fold: it comes before its conv
        scale, shift = g.const(g.rng.uniform(0.5, 1.5, c)), g.bias(c)
        mean, var = g.const(g.rng.standard_normal(c) * 0.1), g.const(g.rng.uniform(0.5, 2.0, c))
        return g.op("Relu", [g.op("BatchNormalization", [x, scale, shift, mean, var], epsilon=1e-5)])

    x = g.op("Relu", [g.conv("input", 3, 64, 7, 2)])  # conv0 + norm0 folded
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for bi, n in enumerate(blocks):
        feats = [x]
        for i in range(n):
            cat = g.op("Concat", feats, axis=1) if len(feats) > 1 else feats[0]
            h = g.op("Relu", [g.conv(bn_relu(cat, c + i * growth), c + i * growth, bn_size * growth, 1)])
            feats.append(g.conv(h, bn_size * growth, growth, 3, bias=False))
        x, c = g.op("Concat", feats, axis=1), c + n * growth
        if bi + 1 < len(blocks):  # transition: halve the channels and the map
            x = g.conv(bn_relu(x, c), c, c // 2, 1, bias=False)
            x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    return g.classifier(bn_relu(x, c), c, side)


def unet(small: bool = False) -> onnx.ModelProto:
    g = Graph(16)
    side, base, levels = (32, 8, 2) if small else (256, 32, 4)

    def double_conv(x, cin, cout):
        x = g.op("Relu", [g.conv(x, cin, cout, 3)])
        return g.op("Relu", [g.conv(x, cout, cout, 3)])

    x, c, skips = "input", 3, []
    for i in range(levels):
        x = double_conv(x, c, base << i)
        c = base << i
        skips.append((x, c))
        x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = double_conv(x, c, c * 2)
    c *= 2
    for i, (skip, sc) in enumerate(reversed(skips)):
        w = g.weight(c, sc, 2, 2, fan_in=c * 4)  # ConvTranspose weights: [cin, cout, kh, kw]
        up = g.op("ConvTranspose", [x, w, g.bias(sc)], kernel_shape=[2, 2], strides=[2, 2])
        if i % 2:  # the other decoder style: nearest upsampling by Resize, then a 3x3 conv
            up = g.conv(g.op("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="nearest"), c, sc, 3)
        x = double_conv(g.op("Concat", [skip, up], axis=1), 2 * sc, sc)
        c = sc
    y = g.conv(x, c, 2, 1)
    g.nodes.append(helper.make_node("Identity", [y], ["mask"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 2, side, side])])


def whisper_encoder(small: bool = False) -> onnx.ModelProto:
    g = Graph(17)
    mels, frames, d, heads, layers = (16, 40, 32, 2, 1) if small else (80, 1000, 384, 6, 4)
    hd, seq = d // heads, frames // 2

    def conv1d(x, cin, cout, stride):
        w = g.weight(cout, cin, 3, fan_in=cin * 3)
        return g.op("Conv", [x, w, g.bias(cout)], kernel_shape=[3], strides=[stride], pads=[1, 1])

    def heads_of(x):  # [1, seq, d] -> [1, heads, seq, hd]
        r = g.op("Reshape", [x, g.const([1, seq, heads, hd], np.int64)])
        return g.op("Transpose", [r], perm=[0, 2, 1, 3])

    x = g.gelu(conv1d("input", mels, d, 1))
    x = g.gelu(conv1d(x, d, d, 2))
    x = g.op("Transpose", [x], perm=[0, 2, 1])  # [1, seq, d]
    x = g.op("Add", [x, g.const(g.rng.standard_normal((seq, d)) * 0.02)])
    for _ in range(layers):
        h = g.layer_norm(x, d, eps=1e-5)
        q = heads_of(g.linear(h, d, d))
        k = heads_of(g.op("MatMul", [h, g.weight(d, d, fan_in=d)]))  # Whisper's key projection has no bias
        v = heads_of(g.linear(h, d, d))
        sc = g.op("MatMul", [g.op("Mul", [q, g.const(hd ** -0.25)]),
                             g.op("Mul", [g.op("Transpose", [k], perm=[0, 1, 3, 2]), g.const(hd ** -0.25)])])
        a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.const([1, seq, d], np.int64)])
        x = g.op("Add", [x, g.linear(a, d, d)])
        h = g.layer_norm(x, d, eps=1e-5)
        x = g.op("Add", [x, g.linear(g.gelu(g.linear(h, d, 4 * d)), 4 * d, d)])
    y = g.layer_norm(x, d, eps=1e-5)
    g.nodes.append(helper.make_node("Identity", [y], ["features"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, mels, frames])],
                   [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, seq, d])])


def shufflenet_v2(small: bool = False) -> onnx.ModelProto:
    g = Graph(18)
    side = 64 if small else 224
    stages, chans = ([2, 1, 1], [24, 48, 96, 192, 256]) if small else ([4, 8, 4], [24, 116, 232, 464, 1024])

    def cbr(x, cin, cout, k, s=1, groups=1, relu=True):  # conv + folded BN (+ ReLU)
        y = g.conv(x, cin, cout, k, s, groups=groups)
        return g.op("Relu", [y]) if relu else y

    def shuffle(x, c, hw):  # torchvision's channel_shuffle(x, 2): view, transpose(1, 2), view
        r = g.op("Reshape", [x, g.const([1, 2, c // 2, hw, hw], np.int64)])
        t = g.op("Transpose", [r], perm=[0, 2, 1, 3, 4])
        return g.op("Reshape", [t, g.const([1, c, hw, hw], np.int64)])

    x = g.op("MaxPool", [cbr("input", 3, chans[0], 3, 2)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, hw = chans[0], side // 4
    for si, n in enumerate(stages):
        cout = chans[si + 1]
        half = cout // 2
        for i in range(n):
            if i == 0:  # stride 2: both branches convolve the whole input
                b1 = cbr(cbr(x, c, c, 3, 2, groups=c, relu=False), c, half, 1)
                b2 = cbr(cbr(cbr(x, c, half, 1), half, half, 3, 2, groups=half, relu=False), half, half, 1)
                hw //= 2
            else:  # chunk(2): the first half passes through
                b1, x2 = g.op("Split", [x, g.const([half, half], np.int64)], n_out=2, axis=1)
                b2 = cbr(cbr(cbr(x2, half, half, 1), half, half, 3, 1, groups=half, relu=False), half, half, 1)
            x = shuffle(g.op("Concat", [b1, b2], axis=1), cout, hw)
            c = cout
    x = cbr(x, c, chans[-1], 1)
    y = g.gemm(g.op("ReduceMean", [x, g.const([2, 3], np.int64)], keepdims=0), chans[-1], 1000)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], opset=18)


def yolov8n(small: bool = False) -> onnx.ModelProto:
    g = Graph(19)
    side = 64 if small else 640
    w = [16, 32, 64, 128, 256]

    def cbs(x, cin, cout, k, s=1):  # Conv + folded BN + SiLU
        return g.silu(g.conv(x, cin, cout, k, s))

    def c2f(x, cin, cout, n, shortcut):
        c = cout // 2
        y = cbs(x, cin, 2 * c, 1)
        parts = list(g.op("Split", [y, g.const([c, c], np.int64)], n_out=2, axis=1))
        for _ in range(n):
            h = cbs(cbs(parts[-1], c, c, 3), c, c, 3)
            parts.append(g.op("Add", [parts[-1], h]) if shortcut else h)
        return cbs(g.op("Concat", parts, axis=1), (2 + n) * c, cout, 1)

    def sppf(x, cin, cout):
        c = cin // 2
        y = [cbs(x, cin, c, 1)]
        for _ in range(3):
            y.append(g.op("MaxPool", [y[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
        return cbs(g.op("Concat", y, axis=1), 4 * c, cout, 1)

    def up(x):
        return g.op("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="nearest",
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    x = cbs("input", 3, w[0], 3, 2)
    x = cbs(x, w[0], w[1], 3, 2)
    x = c2f(x, w[1], w[1], 1, True)
    x = cbs(x, w[1], w[2], 3, 2)
    p3 = c2f(x, w[2], w[2], 2, True)
    x = cbs(p3, w[2], w[3], 3, 2)
    p4 = c2f(x, w[3], w[3], 2, True)
    x = cbs(p4, w[3], w[4], 3, 2)
    x = sppf(c2f(x, w[4], w[4], 1, True), w[4], w[4])
    h4 = c2f(g.op("Concat", [up(x), p4], axis=1), w[4] + w[3], w[3], 1, False)
    h3 = c2f(g.op("Concat", [up(h4), p3], axis=1), w[3] + w[2], w[2], 1, False)
    outs = []
    for f, c in ((h3, w[2]), (h4, w[3])):  # two detection heads: box and class branches
        box = g.conv(cbs(cbs(f, c, 64, 3), 64, 64, 3), 64, 64, 1)
        cls = g.conv(cbs(cbs(f, c, 80, 3), 80, 80, 3), 80, 80, 1)
        outs.append(g.op("Reshape", [g.op("Concat", [box, cls], axis=1), g.const([1, 144, -1], np.int64)]))
    y = g.op("Concat", outs, axis=2)
    g.nodes.append(helper.make_node("Identity", [y], ["detections"]))
    n = (side // 8) ** 2 + (side // 16) ** 2
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("detections", TensorProto.FLOAT, [1, 144, n])])


def swin_tiny(small: bool = False) -> onnx.ModelProto:
    g = Graph(20)
    side, dims, depths, heads, ws = (64, [16, 32, 64, 128], [2, 2, 2, 2], [1, 2, 4, 8], 2) if small else \
        (224, [96, 192, 384, 768], [2, 2, 6, 2], [3, 6, 12, 24], 7)
    i64 = lambda v: g.const(v, np.int64)  # noqa: E731

    def roll(x, shift, axis, n):  # torch.roll as the exporter writes it: two Slices and a Concat
        a = g.op("Slice", [x, i64([n - shift]), i64([n]), i64([axis])])
        b = g.op("Slice", [x, i64([0]), i64([n - shift]), i64([axis])])
        return g.op("Concat", [a, b], axis=axis)

    def block(x, c, h, nh, shift):  # x [1, h, h, c]
        nw, hd = h // ws, c // nh
        y = g.layer_norm(x, c, eps=1e-5)
        if shift:
            y = roll(roll(y, ws // 2, 1, h), ws // 2, 2, h)
        y = g.op("Reshape", [y, i64([1, nw, ws, nw, ws, c])])
        y = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 1, 3, 2, 4, 5]), i64([nw * nw, ws * ws, c])])
        qkv = g.op("Reshape", [g.linear(y, c, 3 * c), i64([nw * nw, ws * ws, 3, nh, hd])])
        qkv = g.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])  # [3, windows, heads, tokens, hd]
        q, k, v = (g.op("Gather", [qkv, g.const(i, np.int64)], axis=0) for i in range(3))
        att = g.op("MatMul", [g.op("Mul", [q, g.const(hd ** -0.5)]), g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        att = g.op("Add", [att, g.const(g.rng.standard_normal((nh, ws * ws, ws * ws)) * 0.02)])  # position bias
        if shift:  # the shifted windows' mask
            mask = np.where(g.rng.random((nw * nw, 1, ws * ws, ws * ws)) < 0.2, -100.0, 0.0)
            att = g.op("Add", [att, g.const(mask)])
        o = g.op("MatMul", [g.op("Softmax", [att], axis=-1), v])
        o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]), i64([nw * nw, ws * ws, c])])
        o = g.linear(o, c, c)
        o = g.op("Reshape", [o, i64([1, nw, nw, ws, ws, c])])
        o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 1, 3, 2, 4, 5]), i64([1, h, h, c])])
        if shift:
            o = roll(roll(o, h - ws // 2, 1, h), h - ws // 2, 2, h)
        x = g.op("Add", [x, o])
        return g.op("Add", [x, g.linear(g.gelu(g.linear(g.layer_norm(x, c, eps=1e-5), c, 4 * c)), 4 * c, c)])

    x = g.conv("input", 3, dims[0], 4, 4)
    x = g.layer_norm(g.op("Transpose", [x], perm=[0, 2, 3, 1]), dims[0], eps=1e-5)
    h = side // 4
    for st, (c, n, nh) in enumerate(zip(dims, depths, heads)):
        if st:  # patch merging: the four 2x2 phases side by side, LayerNorm, Linear to 2c
            p = c // 2
            parts = [g.op("Slice", [x, i64([a, b]), i64([h, h]), i64([1, 2]), i64([2, 2])]) for b, a in
                     ((0, 0), (0, 1), (1, 0), (1, 1))]
            h //= 2
            x = g.op("MatMul", [g.layer_norm(g.op("Concat", parts, axis=-1), 4 * p, eps=1e-5),
                                g.weight(4 * p, c, fan_in=4 * p)])
        for i in range(n):
            x = block(x, c, h, nh, i % 2 == 1)
    x = g.op("ReduceMean", [g.layer_norm(x, dims[-1], eps=1e-5), i64([1, 2])], keepdims=0)
    y = g.gemm(x, dims[-1], 1000)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], opset=18)


def lstm_tagger(small: bool = False) -> onnx.ModelProto:
    g = Graph(21)
    vocab, d, hid, layers, seq, tags = (50, 16, 24, 2, 7, 5) if small else (10000, 256, 512, 2, 128, 50)
    x = g.op("Gather", [g.const(g.rng.standard_normal((vocab, d)) * 0.1), "input_ids"])  # [seq, 1, d]
    cin = d
    for _ in range(layers):  # bidirectional, as nn.LSTM(bidirectional=True) exports it
        w = g.weight(2, 4 * hid, cin, fan_in=cin)
        r = g.weight(2, 4 * hid, hid, fan_in=hid)
        b = g.const(g.rng.standard_normal((2, 8 * hid)) * 0.05)
        y = g.op("LSTM", [x, w, r, b], n_out=1, hidden_size=hid, direction="bidirectional")  # [seq, 2, 1, hid]
        x = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), g.const([seq, 1, 2 * hid], np.int64)])
        cin = 2 * hid
    y = g.op("Add", [g.op("MatMul", [x, g.weight(cin, tags, fan_in=cin)]), g.bias(tags)])
    g.nodes.append(helper.make_node("Identity", [y], ["tag_scores"]))
    return g.model([helper.make_tensor_value_info("input_ids", TensorProto.INT64, [seq, 1])],
                   [helper.make_tensor_value_info("tag_scores", TensorProto.FLOAT, [seq, 1, tags])])


def t5_encoder(small: bool = False) -> onnx.ModelProto:
    g = Graph(22)
    vocab, d, heads, ffn, layers, seq = (100, 32, 4, 64, 2, 12) if small else (32128, 512, 8, 2048, 6, 128)
    hd, buckets, max_dist = d // heads, 32, 128
    i64 = lambda v: g.const(v, np.int64)  # noqa: E731

    def rms(x):  # T5LayerNorm: x * rsqrt(mean(x^2) + eps) * w, in float32
        var = g.op("ReduceMean", [g.op("Pow", [x, g.const(2.0)]), i64([-1])], keepdims=1)
        return g.op("Mul", [g.const(g.rng.uniform(0.8, 1.2, d)),
                            g.op("Mul", [x, g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [var, g.const(1e-6)])])])])])

    def proj(x, cin, cout):
        return g.op("MatMul", [x, g.weight(cin, cout, fan_in=cin)])

    def heads_of(x):
        return g.op("Transpose", [g.op("Reshape", [x, i64([1, seq, heads, hd])])], perm=[0, 2, 1, 3])

    # the relative position bias as the exporter leaves it: bucketed from Range over the sequence
    pos = g.op("Range", [i64(0), g.op("Gather", [g.op("Shape", ["input_ids"]), i64(1)], axis=0), i64(1)])
    rel = g.op("Sub", [g.op("Unsqueeze", [pos, i64([0])]), g.op("Unsqueeze", [pos, i64([1])])])  # memory - query
    half = buckets // 2
    side = g.op("Mul", [g.op("Cast", [g.op("Greater", [rel, i64(0)])], to=TensorProto.INT64), i64(half)])
    a = g.op("Abs", [rel])
    exact = half // 2
    lg = g.op("Div", [g.op("Log", [g.op("Div", [g.op("Cast", [a], to=TensorProto.FLOAT), g.const(float(exact))])]),
                      g.const(float(np.log(max_dist / exact)))])
    large = g.op("Add", [i64(exact), g.op("Cast", [g.op("Mul", [lg, g.const(float(half - exact))])], to=TensorProto.INT64)])
    large = g.op("Min", [large, i64(half - 1)])
    bucket = g.op("Add", [side, g.op("Where", [g.op("Less", [a, i64(exact)]), a, large])])
    bias = g.op("Gather", [g.const(g.rng.standard_normal((buckets, heads)) * 0.1), bucket])  # [L, L, heads]
    bias = g.op("Unsqueeze", [g.op("Transpose", [bias], perm=[2, 0, 1]), i64([0])])  # [1, heads, L, L]

    x = g.op("Gather", [g.const(g.rng.standard_normal((vocab, d)) * 0.05), "input_ids"])
    for _ in range(layers):
        h = rms(x)
        # T5 scales no scores: its query weights are initialized 1/sqrt(head dim) smaller instead (random
        # weights of the usual scale make the softmax so sharp that 1e-7 in a weight moves the output 1e-4)
        wq = g.const(g.rng.standard_normal((d, d)) * np.sqrt(2.0 / d) / np.sqrt(hd))
        q, k, v = heads_of(g.op("MatMul", [h, wq])), heads_of(proj(h, d, d)), heads_of(proj(h, d, d))
        sc = g.op("Add", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), bias])
        o = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
        o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]), i64([1, seq, d])])
        x = g.op("Add", [x, proj(o, d, d)])
        x = g.op("Add", [x, proj(g.op("Relu", [proj(rms(x), d, ffn)]), ffn, d)])
    y = rms(x)
    g.nodes.append(helper.make_node("Identity", [y], ["hidden"]))
    return g.model([helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
                   [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, seq, d])], opset=18)


def sd_unet(small: bool = False) -> onnx.ModelProto:
    g = Graph(19)
    # small: heads of 16 over 4 x 4 pixels, K^T square (the attention binding once read it as K there)
    side, chans, groups, temb_c = (8, (16, 16), 4, 64) if small else (64, (128, 256, 256), 32, 512)

    def group_norm(x, c, hw):  # nn.GroupNorm at opset 17
        r = g.op("Reshape", [x, g.const([0, groups, -1], np.int64)])
        n = g.op("InstanceNormalization", [r, g.const(np.ones(groups)), g.const(np.zeros(groups))], epsilon=1e-5)
        n = g.op("Reshape", [n, g.const([1, c, hw, hw], np.int64)])
        gamma = g.const(g.rng.uniform(0.8, 1.2, (c, 1, 1)))
        return g.op("Add", [g.op("Mul", [n, gamma]), g.const(g.rng.standard_normal((c, 1, 1)) * 0.05)])

    def resnet(x, cin, cout, hw, temb):
        h = g.conv(g.silu(group_norm(x, cin, hw)), cin, cout, 3)
        t = g.op("Unsqueeze", [g.gemm(g.silu(temb), temb_c, cout), g.const([2, 3], np.int64)])
        h = g.op("Add", [h, t])
        h = g.conv(g.silu(group_norm(h, cout, hw)), cout, cout, 3)
        skip = g.conv(x, cin, cout, 1) if cin != cout else x
        return g.op("Add", [skip, h])

    def attention(x, c, hw):  # one head, as diffusers' AttentionBlock at these widths
        h = group_norm(x, c, hw)
        t = g.op("Transpose", [g.op("Reshape", [h, g.const([1, c, hw * hw], np.int64)])], perm=[0, 2, 1])
        q, k, v = (g.linear(t, c, c) for _ in range(3))
        sc = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 2, 1])]), g.const(c ** -0.5)])
        a = g.linear(g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v]), c, c)
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1]), g.const([1, c, hw, hw], np.int64)])
        return g.op("Add", [a, x])

    half = chans[0] // 2  # sinusoidal timestep embedding
    freqs = g.const(np.exp(-np.log(10000.0) * np.arange(half) / half).reshape(1, half))
    arg = g.op("Mul", [g.op("Unsqueeze", ["timestep", g.const([1], np.int64)]), freqs])
    emb = g.op("Concat", [g.op("Sin", [arg]), g.op("Cos", [arg])], axis=-1)
    temb = g.gemm(g.silu(g.gemm(emb, chans[0], temb_c)), temb_c, temb_c)
    x = g.conv("sample", 4, chans[0], 3)
    c, hw, skips = chans[0], side, []
    for i, cout in enumerate(chans):
        x = resnet(x, c, cout, hw, temb)
        c = cout
        if i > 0:
            x = attention(x, c, hw)
        skips.append((x, c))
        if i + 1 < len(chans):
            x = g.conv(x, c, c, 3, 2)
            hw //= 2
    x = attention(resnet(x, c, c, hw, temb), c, hw)
    for i, (skip, sc) in enumerate(reversed(skips)):
        x = resnet(g.op("Concat", [x, skip], axis=1), c + sc, sc, hw, temb)
        c = sc
        if i + 1 < len(chans):
            if len(chans) - 1 - i > 0 and i == 0:
                x = attention(x, c, hw)
            x = g.conv(g.op("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="nearest"), c, c, 3)
            hw *= 2
    y = g.conv(g.silu(group_norm(x, c, hw)), c, 4, 3)
    g.nodes.append(helper.make_node("Identity", [y], ["noise"]))
    return g.model([helper.make_tensor_value_info("sample", TensorProto.FLOAT, [1, 4, side, side]),
                    helper.make_tensor_value_info("timestep", TensorProto.FLOAT, [1])],
                   [helper.make_tensor_value_info("noise", TensorProto.FLOAT, [1, 4, side, side])])


def wav2vec2_base(small: bool = False) -> onnx.ModelProto:
    g = Graph(20)
    samples, c, d, heads, ffn, layers, pos_k, pos_g = ((1600, 32, 48, 4, 96, 1, 16, 4) if small else
                                                       (16000, 512, 768, 12, 3072, 12, 128, 16))
    hd = d // heads

    def conv1d(x, cin, cout, k, s, pad=0, groups=1, bias=False):
        w = g.weight(cout, cin // groups, k, fan_in=cin // groups * k)
        return g.op("Conv", [x, w] + ([g.bias(cout)] if bias else []), kernel_shape=[k], strides=[s],
                    pads=[pad, pad], group=groups)

    x = g.op("Unsqueeze", ["input_values", g.const([1], np.int64)])  # [1, 1, samples]
    x = conv1d(x, 1, c, 10, 5)
    frames = (samples - 10) // 5 + 1
    r = g.op("Reshape", [x, g.const([0, c, -1], np.int64)])  # GroupNorm(c, c) as opset 17 writes it
    n = g.op("InstanceNormalization", [r, g.const(np.ones(c)), g.const(np.zeros(c))], epsilon=1e-5)
    n = g.op("Reshape", [n, g.const([1, c, frames], np.int64)])
    x = g.gelu(g.op("Add", [g.op("Mul", [n, g.const(g.rng.uniform(0.8, 1.2, (c, 1)))]),
                            g.const(g.rng.standard_normal((c, 1)) * 0.05)]))
    for k in (3, 3, 3, 3, 2, 2):
        x = g.gelu(conv1d(x, c, c, k, 2))
        frames = (frames - k) // 2 + 1
    x = g.linear(g.layer_norm(g.op("Transpose", [x], perm=[0, 2, 1]), c, eps=1e-5), c, d)  # [1, frames, d]
    p = conv1d(g.op("Transpose", [x], perm=[0, 2, 1]), d, d, pos_k, 1, pos_k // 2, pos_g, bias=True)
    p = g.op("Slice", [p, g.const([0], np.int64), g.const([frames], np.int64), g.const([2], np.int64)])
    x = g.op("Add", [x, g.op("Transpose", [g.gelu(p)], perm=[0, 2, 1])])
    x = g.layer_norm(x, d, eps=1e-5)

    def heads_of(t):  # [1, frames, d] -> [1, heads, frames, hd]
        return g.op("Transpose", [g.op("Reshape", [t, g.const([1, frames, heads, hd], np.int64)])],
                    perm=[0, 2, 1, 3])

    for _ in range(layers):
        q = heads_of(g.op("Mul", [g.linear(x, d, d), g.const(hd ** -0.5)]))
        k = g.op("Transpose", [g.op("Reshape", [g.linear(x, d, d), g.const([1, frames, heads, hd], np.int64)])],
                 perm=[0, 2, 3, 1])
        v = heads_of(g.linear(x, d, d))
        a = g.op("MatMul", [g.op("Softmax", [g.op("MatMul", [q, k])], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.const([1, frames, d], np.int64)])
        x = g.layer_norm(g.op("Add", [x, g.linear(a, d, d)]), d, eps=1e-5)
        x = g.layer_norm(g.op("Add", [x, g.linear(g.gelu(g.linear(x, d, ffn)), ffn, d)]), d, eps=1e-5)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    return g.model([helper.make_tensor_value_info("input_values", TensorProto.FLOAT, [1, samples])],
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, frames, d])])


def inception_v3(small: bool = False) -> onnx.ModelProto:
    g = Graph(21)
    side = 75 if small else 299
    w = (lambda c: max(4, c // 8)) if small else (lambda c: c)  # channel widths

    def cbr(x, cin, cout, kh, kw=None, stride=1, pad=None):  # BasicConv2d, BatchNorm folded: conv + bias, ReLU
        kw = kh if kw is None else kw
        ph, pw = (kh // 2, kw // 2) if pad is None else (pad, pad)
        wt = g.weight(cout, cin, kh, kw, fan_in=cin * kh * kw)
        c = g.op("Conv", [x, wt, g.bias(cout)], kernel_shape=[kh, kw], strides=[stride, stride],
                 pads=[ph, pw, ph, pw])
        return g.op("Relu", [c])

    def avg3(x):
        return g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                    count_include_pad=1)

    def max3(x):
        return g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])

    def block_a(x, cin, pool):
        b1 = cbr(x, cin, w(64), 1)
        b5 = cbr(cbr(x, cin, w(48), 1), w(48), w(64), 5)
        b3 = cbr(cbr(cbr(x, cin, w(64), 1), w(64), w(96), 3), w(96), w(96), 3)
        bp = cbr(avg3(x), cin, w(pool), 1)
        return g.op("Concat", [b1, b5, b3, bp], axis=1), w(64) + w(64) + w(96) + w(pool)

    def block_b(x, cin):
        b3 = cbr(x, cin, w(384), 3, stride=2, pad=0)
        bd = cbr(cbr(cbr(x, cin, w(64), 1), w(64), w(96), 3), w(96), w(96), 3, stride=2, pad=0)
        return g.op("Concat", [b3, bd, max3(x)], axis=1), w(384) + w(96) + cin

    def block_c(x, cin, c7):
        b1 = cbr(x, cin, w(192), 1)
        b7 = cbr(cbr(cbr(x, cin, w(c7), 1), w(c7), w(c7), 1, 7), w(c7), w(192), 7, 1)
        bd = cbr(x, cin, w(c7), 1)
        for i, (kh, kw) in enumerate([(7, 1), (1, 7), (7, 1), (1, 7)]):
            bd = cbr(bd, w(c7), w(192) if i == 3 else w(c7), kh, kw)
        bp = cbr(avg3(x), cin, w(192), 1)
        return g.op("Concat", [b1, b7, bd, bp], axis=1), 4 * w(192)

    def block_d(x, cin):
        b3 = cbr(cbr(x, cin, w(192), 1), w(192), w(320), 3, stride=2, pad=0)
        b7 = cbr(cbr(cbr(x, cin, w(192), 1), w(192), w(192), 1, 7), w(192), w(192), 7, 1)
        b7 = cbr(b7, w(192), w(192), 3, stride=2, pad=0)
        return g.op("Concat", [b3, b7, max3(x)], axis=1), w(320) + w(192) + cin

    def block_e(x, cin):
        b1 = cbr(x, cin, w(320), 1)
        b3 = cbr(x, cin, w(384), 1)
        b3 = g.op("Concat", [cbr(b3, w(384), w(384), 1, 3), cbr(b3, w(384), w(384), 3, 1)], axis=1)
        bd = cbr(cbr(x, cin, w(448), 1), w(448), w(384), 3)
        bd = g.op("Concat", [cbr(bd, w(384), w(384), 1, 3), cbr(bd, w(384), w(384), 3, 1)], axis=1)
        bp = cbr(avg3(x), cin, w(192), 1)
        return g.op("Concat", [b1, b3, bd, bp], axis=1), w(320) + 4 * w(384) + w(192)

    x = cbr("input", 3, w(32), 3, stride=2, pad=0)
    x = cbr(x, w(32), w(32), 3, pad=0)
    x = max3(cbr(x, w(32), w(64), 3))
    x = max3(cbr(cbr(x, w(64), w(80), 1), w(80), w(192), 3, pad=0))
    c = w(192)
    for pool in (32, 64, 64):
        x, c = block_a(x, c, pool)
    x, c = block_b(x, c)
    for c7 in ([128] if small else [128, 160, 160, 192]):
        x, c = block_c(x, c, c7)
    x, c = block_d(x, c)
    for _ in range(1 if small else 2):
        x, c = block_e(x, c)
    return g.classifier(x, c, side)


def mobilevit_s(small: bool = False) -> onnx.ModelProto:
    g = Graph(22)
    side = 64 if small else 256

    def mv2(x, cin, cout, stride):  # inverted residual, expansion 4, SiLU
        h = g.silu(g.conv(x, cin, 4 * cin, 1))
        h = g.silu(g.conv(h, 4 * cin, 4 * cin, 3, stride, groups=4 * cin))
        h = g.conv(h, 4 * cin, cout, 1)
        return g.op("Add", [h, x]) if stride == 1 and cin == cout else h

    def mvit(x, c, d, layers, hw):
        heads, n = 4, hw * hw // 4
        y = g.conv(g.silu(g.conv(x, c, c, 3)), c, d, 1, bias=False)
        # unfold: [1, d, hw, hw] -> [4, n, d] (patch position as the batch)
        t = g.op("Reshape", [y, g.const([d * hw // 2, 2, hw // 2, 2], np.int64)])
        t = g.op("Reshape", [g.op("Transpose", [t], perm=[0, 2, 1, 3]), g.const([1, d, n, 4], np.int64)])
        t = g.op("Reshape", [g.op("Transpose", [t], perm=[0, 3, 2, 1]), g.const([4, n, d], np.int64)])
        hd = d // heads

        def split(z):  # [4, n, d] -> [4, heads, n, hd]
            return g.op("Transpose", [g.op("Reshape", [z, g.const([4, n, heads, hd], np.int64)])], perm=[0, 2, 1, 3])

        for _ in range(layers):
            h = g.layer_norm(t, d, eps=1e-5)
            q, k, v = split(g.linear(h, d, d)), split(g.linear(h, d, d)), split(g.linear(h, d, d))
            sc = g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                              g.const(np.sqrt(hd))])
            a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
            a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.const([4, n, d], np.int64)])
            t = g.op("Add", [t, g.linear(a, d, d)])
            h = g.layer_norm(t, d, eps=1e-5)
            t = g.op("Add", [t, g.linear(g.silu(g.linear(h, d, 2 * d)), 2 * d, d)])
        t = g.layer_norm(t, d, eps=1e-5)
        # fold back: [4, n, d] -> [1, d, hw, hw]
        t = g.op("Reshape", [g.op("Transpose", [g.op("Reshape", [t, g.const([1, 4, n, d], np.int64)])],
                                  perm=[0, 3, 2, 1]), g.const([d * hw // 2, hw // 2, 2, 2], np.int64)])
        t = g.op("Reshape", [g.op("Transpose", [t], perm=[0, 2, 1, 3]), g.const([1, d, hw, hw], np.int64)])
        y = g.silu(g.conv(t, d, c, 1))
        return g.silu(g.conv(g.op("Concat", [x, y], axis=1), 2 * c, c, 3))

    x = g.silu(g.conv("input", 3, 16, 3, 2))
    hw = side // 2
    x = mv2(x, 16, 32, 1)
    x = mv2(x, 32, 64, 2)
    hw //= 2
    x = mv2(mv2(x, 64, 64, 1), 64, 64, 1)
    stages = [(96, 144, 2), (128, 192, 4), (160, 240, 3)] if not small else [(48, 64, 1), (64, 80, 1)]
    c = 64
    for cout, d, layers in stages:
        x = mv2(x, c, cout, 2)
        hw //= 2
        x = mvit(x, cout, d, layers, hw)
        c = cout
    x = g.silu(g.conv(x, c, 4 * c, 1))
    return g.classifier(x, 4 * c, side)


def detr_r50(small: bool = False) -> onnx.ModelProto:
    g = Graph(23)
    side, depths, base, d, heads, ffn, layers, queries = ((64, [1, 1, 1, 1], 16, 32, 4, 64, 1, 10) if small else
                                                         (512, [3, 4, 6, 3], 64, 256, 8, 2048, 6, 100))
    hd = d // heads
    x = g.op("Relu", [g.conv("input", 3, 64, 7, 2)])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, n in enumerate(depths):  # ResNet-50, frozen BatchNorm folded into the convs
        width, cout = base << stage, (base * 4) << stage
        for i in range(n):
            s = 2 if stage and i == 0 else 1
            h = g.op("Relu", [g.conv(x, cin, width, 1)])
            h = g.op("Relu", [g.conv(h, width, width, 3, s)])
            h = g.conv(h, width, cout, 1)
            sc = g.conv(x, cin, cout, 1, s) if i == 0 else x
            x = g.op("Relu", [g.op("Add", [h, sc])])
            cin = cout
    hw = side // 32
    n = hw * hw
    src = g.op("Transpose", [g.op("Reshape", [g.conv(x, cin, d, 1), g.const([1, d, n], np.int64)])],
               perm=[2, 0, 1])  # [n, 1, d]
    pos = g.const(g.rng.standard_normal((n, 1, d)) * 0.5)  # the sine embedding, constant for a fixed size

    def mha(q_in, k_in, v_in, lq, lk):  # nn.MultiheadAttention: [L, 1, d] in and out
        def proj(t, L):  # -> [heads, L, hd]
            r = g.op("Reshape", [g.linear(t, d, d), g.const([L, heads, hd], np.int64)])
            return g.op("Transpose", [r], perm=[1, 0, 2])
        q = g.op("Mul", [proj(q_in, lq), g.const(hd ** -0.5)])
        k, v = proj(k_in, lk), proj(v_in, lk)
        a = g.op("Softmax", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 2, 1])])], axis=-1)
        o = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [a, v])], perm=[1, 0, 2]),
                             g.const([lq, 1, d], np.int64)])
        return g.linear(o, d, d)

    def ffn_block(t):
        return g.layer_norm(g.op("Add", [t, g.linear(g.op("Relu", [g.linear(t, d, ffn)]), ffn, d)]), d, 1e-5)

    for _ in range(layers):
        qk = g.op("Add", [src, pos])
        src = ffn_block(g.layer_norm(g.op("Add", [src, mha(qk, qk, src, n, n)]), d, 1e-5))
    memory_k = g.op("Add", [src, pos])
    qpos = g.const(g.rng.standard_normal((queries, 1, d)))
    tgt = g.const(np.zeros((queries, 1, d)))
    for _ in range(layers):
        qk = g.op("Add", [tgt, qpos])
        tgt = g.layer_norm(g.op("Add", [tgt, mha(qk, qk, tgt, queries, queries)]), d, 1e-5)
        tgt = g.layer_norm(g.op("Add", [tgt, mha(g.op("Add", [tgt, qpos]), memory_k, src, queries, n)]), d, 1e-5)
        tgt = ffn_block(tgt)
    hs = g.layer_norm(tgt, d, 1e-5)
    logits = g.linear(hs, d, 92)
    box = g.op("Sigmoid", [g.linear(g.op("Relu", [g.linear(g.op("Relu", [g.linear(hs, d, d)]), d, d)]), d, 4)])
    g.nodes.append(helper.make_node("Identity", [logits], ["pred_logits"]))
    g.nodes.append(helper.make_node("Identity", [box], ["pred_boxes"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("pred_logits", TensorProto.FLOAT, [queries, 1, 92]),
                    helper.make_tensor_value_info("pred_boxes", TensorProto.FLOAT, [queries, 1, 4])])


def _regnet(g: Graph, side: int, widths, depths, gw: int, se: bool) -> onnx.ModelProto:
    """torchvision's RegNet: a 3x3 stride-2 stem of 32, then per stage blocks of a 1x1 conv, a grouped 3x3 of
    `gw` channels a group (stride 2 in a stage's first block), squeeze-and-excitation on the block's input
    width (RegNetY), a 1x1 conv, and the residual (a strided 1x1 in a stage's first block)."""
    x = g.op("Relu", [g.conv("input", 3, 32, 3, 2)])
    cin = 32
    for w, n in zip(widths, depths):
        for i in range(n):
            s = 2 if i == 0 else 1
            h = g.op("Relu", [g.conv(x, cin, w, 1)])
            h = g.op("Relu", [g.conv(h, w, w, 3, s, groups=w // gw)])
            if se:
                sq = max(1, cin // 4)
                z = g.op("Relu", [g.conv(g.op("GlobalAveragePool", [h]), w, sq, 1)])
                h = g.op("Mul", [h, g.op("Sigmoid", [g.conv(z, sq, w, 1)])])
            h = g.conv(h, w, w, 1)
            sc = g.conv(x, cin, w, 1, s) if i == 0 else x
            x = g.op("Relu", [g.op("Add", [h, sc])])
            cin = w
    return g.classifier(x, cin, side)


def regnety_800mf(small: bool = False) -> onnx.ModelProto:
    # widths, depths, group width (torchvision's RegNetY-800MF: 64 / 144 / 320 / 784, 1 / 3 / 8 / 2, 16)
    widths, depths, gw = ([16, 32, 48, 64], [1, 1, 2, 1], 8) if small else ([64, 144, 320, 784], [1, 3, 8, 2], 16)
    return _regnet(Graph(24), 64 if small else 224, widths, depths, gw, se=True)


def conformer(small: bool = False) -> onnx.ModelProto:
    g = Graph(25)
    frames, d, heads, layers, k = (24, 32, 2, 1, 7) if small else (200, 256, 4, 4, 31)
    hd = d // heads

    def ffn(x):  # half-step: x + 0.5 * Linear(SiLU(Linear(LayerNorm(x))))
        h = g.linear(g.silu(g.linear(g.layer_norm(x, d, eps=1e-5), d, 4 * d)), 4 * d, d)
        return g.op("Add", [x, g.op("Mul", [h, g.const(0.5)])])

    def heads_of(t):  # [1, frames, d] -> [1, heads, frames, hd]
        return g.op("Transpose", [g.op("Reshape", [t, g.const([1, frames, heads, hd], np.int64)])],
                    perm=[0, 2, 1, 3])

    x = "input"
    for _ in range(layers):
        x = ffn(x)
        h = g.layer_norm(x, d, eps=1e-5)
        q = heads_of(g.linear(h, d, d))
        kt = g.op("Transpose", [g.op("Reshape", [g.linear(h, d, d), g.const([1, frames, heads, hd], np.int64)])],
                  perm=[0, 2, 3, 1])
        v = heads_of(g.linear(h, d, d))
        sc = g.op("Div", [g.op("MatMul", [q, kt]), g.const(np.sqrt(hd))])
        a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.const([1, frames, d], np.int64)])
        x = g.op("Add", [x, g.linear(a, d, d)])
        # the convolution module, channels first
        h = g.op("Transpose", [g.layer_norm(x, d, eps=1e-5)], perm=[0, 2, 1])  # [1, d, frames]
        w1 = g.weight(2 * d, d, 1, fan_in=d)
        h = g.op("Conv", [h, w1, g.bias(2 * d)], kernel_shape=[1], pads=[0, 0])
        a1, a2 = g.op("Split", [h, g.const([d, d], np.int64)], n_out=2, axis=1)
        h = g.op("Mul", [a1, g.op("Sigmoid", [a2])])  # GLU
        wd = g.weight(d, 1, k, fan_in=k)
        h = g.op("Conv", [h, wd, g.bias(d)], kernel_shape=[k], pads=[k // 2, k // 2], group=d)
        h = g.op("BatchNormalization", [h, g.const(g.rng.uniform(0.8, 1.2, d)), g.bias(d), g.bias(d),
                                        g.const(g.rng.uniform(0.5, 1.5, d))], epsilon=1e-5)
        h = g.silu(h)
        w2 = g.weight(d, d, 1, fan_in=d)
        h = g.op("Conv", [h, w2, g.bias(d)], kernel_shape=[1], pads=[0, 0])
        x = g.op("Add", [x, g.op("Transpose", [h], perm=[0, 2, 1])])
        x = g.layer_norm(ffn(x), d, eps=1e-5)
    g.nodes.append(helper.make_node("Identity", [x], ["encoded"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, frames, d])],
                   [helper.make_tensor_value_info("encoded", TensorProto.FLOAT, [1, frames, d])])


def dlrm(small: bool = False) -> onnx.ModelProto:
    g = Graph(26)
    batch, tables, rows, e = (8, 4, 50, 16) if small else (128, 26, 20000, 64)
    bottom, top = ([32, e], [64, 32]) if small else ([512, 256, e], [512, 256])
    x, c = "dense", 13
    for w in bottom:
        x, c = g.op("Relu", [g.gemm(x, c, w)]), w
    feats = [g.op("Unsqueeze", [x, g.const([1], np.int64)])]  # [batch, 1, e]
    for t in range(tables):  # one index a table and a sample: Gather rows of the table
        table = g.const(g.rng.standard_normal((rows, e)) * 0.05, hint="emb")
        idx = g.op("Gather", ["sparse", g.const(t, np.int64)], axis=1)  # [batch]
        feats.append(g.op("Unsqueeze", [g.op("Gather", [table, idx], axis=0), g.const([1], np.int64)]))
    f = tables + 1
    z = g.op("Concat", feats, axis=1)  # [batch, f, e]
    zz = g.op("MatMul", [z, g.op("Transpose", [z], perm=[0, 2, 1])])  # [batch, f, f]
    tri = [i * f + j for i in range(f) for j in range(i)]  # below the diagonal, as DLRM's li, lj
    flat = g.op("Reshape", [zz, g.const([batch, f * f], np.int64)])
    inter = g.op("Gather", [flat, g.const(tri, np.int64)], axis=1)
    x, c = g.op("Concat", [x, inter], axis=1), e + len(tri)
    for w in top:
        x, c = g.op("Relu", [g.gemm(x, c, w)]), w
    y = g.op("Sigmoid", [g.gemm(x, c, 1)])
    g.nodes.append(helper.make_node("Identity", [y], ["click"]))
    return g.model([helper.make_tensor_value_info("dense", TensorProto.FLOAT, [batch, 13]),
                    helper.make_tensor_value_info("sparse", TensorProto.INT64, [batch, tables])],
                   [helper.make_tensor_value_info("click", TensorProto.FLOAT, [batch, 1])])


def vgg16(small: bool = False) -> onnx.ModelProto:
    g = Graph(27)
    side = 32 if small else 224
    cfg = [16, "M", 32, "M", 32, "M"] if small else [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512,
                                                        512, "M", 512, 512, 512, "M"]
    x, c = "input", 3
    for v in cfg:
        if v == "M":
            x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        else:
            x, c = g.op("Relu", [g.conv(x, c, v, 3)]), v
    # AdaptiveAvgPool2d((7, 7)) of a 7 x 7 map exports as a 1 x 1 AveragePool
    x = g.op("AveragePool", [x], kernel_shape=[1, 1], strides=[1, 1])
    x = g.op("Flatten", [x], axis=1)
    fc, feat = (64, c * (side // 8) ** 2) if small else (4096, c * 49)
    x = g.op("Relu", [g.gemm(x, feat, fc)])
    x = g.op("Relu", [g.gemm(x, fc, fc)])
    y = g.gemm(x, fc, 1000)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])


def deeplabv3(small: bool = False) -> onnx.ModelProto:
    g = Graph(28)
    side = 64 if small else 224
    depths, base = ([1, 1, 1, 1], 16) if small else ([3, 4, 6, 3], 64)

    def conv_d(x, cin, cout, k, stride=1, dil=1):  # a conv with dilation, padded to keep the size
        w = g.weight(cout, cin, k, k, fan_in=cin * k * k)
        p = dil * (k // 2)
        return g.op("Conv", [x, w, g.bias(cout)], kernel_shape=[k, k], strides=[stride, stride], pads=[p] * 4,
                    dilations=[dil, dil])

    x = g.op("Relu", [g.conv("input", 3, base, 7, 2)])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, dil = base, 1
    for stage, n in enumerate(depths):  # ResNet-50 with layers 3 and 4 dilated instead of strided (stride 8)
        width, cout = base << stage, (4 * base) << stage
        s = 2 if stage == 1 else 1
        prev_dil = dil
        if stage >= 2:
            dil *= 2
        for i in range(n):
            st = s if i == 0 else 1
            h = g.op("Relu", [g.conv(x, cin, width, 1)])
            h = g.op("Relu", [conv_d(h, width, width, 3, st, prev_dil if i == 0 else dil)])
            h = g.conv(h, width, cout, 1)
            sc = g.conv(x, cin, cout, 1, st) if i == 0 else x
            x = g.op("Relu", [g.op("Add", [h, sc])])
            cin = cout
    # ASPP: a 1x1, three dilated 3x3 (rates 12 / 24 / 36) and the image pooling branch, concatenated
    a = 32 if small else 256
    branches = [g.op("Relu", [g.conv(x, cin, a, 1)])]
    branches += [g.op("Relu", [conv_d(x, cin, a, 3, 1, r)]) for r in (12, 24, 36)]
    feat = side // 8
    pool = g.op("Relu", [g.conv(g.op("GlobalAveragePool", [x]), cin, a, 1)])
    branches.append(g.op("Resize", [pool, "", "", g.const([1, a, feat, feat], np.int64)], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"))
    x = g.op("Relu", [g.conv(g.op("Concat", branches, axis=1), 5 * a, a, 1)])
    x = g.op("Relu", [g.conv(x, a, a, 3)])
    x = g.conv(x, a, 21, 1)
    y = g.op("Resize", [x, "", "", g.const([1, 21, side, side], np.int64)], mode="linear",
             coordinate_transformation_mode="pytorch_half_pixel")
    g.nodes.append(helper.make_node("Identity", [y], ["out"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 21, side, side])])


def fast_neural_style(small: bool = False) -> onnx.ModelProto:
    g = Graph(29)
    side, c1 = (32, 8) if small else (256, 32)

    def conv_layer(x, cin, cout, k, stride=1):  # ReflectionPad2d + Conv2d, as pytorch/examples' ConvLayer
        p = g.op("Pad", [x, g.const([0, 0, k // 2, k // 2, 0, 0, k // 2, k // 2], np.int64)], mode="reflect")
        w = g.weight(cout, cin, k, k, fan_in=cin * k * k)
        return g.op("Conv", [p, w, g.bias(cout)], kernel_shape=[k, k], strides=[stride, stride])

    def inorm(x, c):
        return g.op("InstanceNormalization", [x, g.const(g.rng.uniform(0.8, 1.2, c)), g.bias(c)], epsilon=1e-5)

    x = g.op("Relu", [inorm(conv_layer("input", 3, c1, 9), c1)])
    x = g.op("Relu", [inorm(conv_layer(x, c1, 2 * c1, 3, 2), 2 * c1)])
    c = 4 * c1
    x = g.op("Relu", [inorm(conv_layer(x, 2 * c1, c, 3, 2), c)])
    for _ in range(1 if small else 5):
        h = g.op("Relu", [inorm(conv_layer(x, c, c, 3), c)])
        x = g.op("Add", [inorm(conv_layer(h, c, c, 3), c), x])
    for cout in (2 * c1, c1):  # UpsampleConvLayer: nearest 2x, then ConvLayer
        up = g.op("Resize", [x, "", g.const([1.0, 1.0, 2.0, 2.0])], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        x = g.op("Relu", [inorm(conv_layer(up, c, cout, 3), cout)])
        c = cout
    y = conv_layer(x, c, 3, 9)
    g.nodes.append(helper.make_node("Identity", [y], ["stylized"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("stylized", TensorProto.FLOAT, [1, 3, side, side])])


def espcn(small: bool = False) -> onnx.ModelProto:
    g = Graph(30)
    side, r = (24, 2) if small else (224, 3)  # PyTorch's super_resolution example: upscale 3
    x = g.op("Relu", [g.conv("input", 1, 64, 5)])
    x = g.op("Relu", [g.conv(x, 64, 64, 3)])
    x = g.op("Relu", [g.conv(x, 64, 32, 3)])
    x = g.conv(x, 32, r * r, 3)
    y = g.op("DepthToSpace", [x], blocksize=r, mode="CRD")  # nn.PixelShuffle
    g.nodes.append(helper.make_node("Identity", [y], ["upscaled"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, side, side])],
                   [helper.make_tensor_value_info("upscaled", TensorProto.FLOAT, [1, 1, side * r, side * r])])


def gru_lm(small: bool = False) -> onnx.ModelProto:
    g = Graph(31)
    vocab, d, hid, layers, seq = (50, 16, 24, 2, 7) if small else (10000, 512, 1024, 2, 64)
    x = g.op("Gather", [g.const(g.rng.standard_normal((vocab, d)) * 0.1), "input_ids"])  # [seq, 1, d]
    cin = d
    for _ in range(layers):  # nn.GRU exports linear_before_reset = 1
        w = g.weight(1, 3 * hid, cin, fan_in=cin)
        r = g.weight(1, 3 * hid, hid, fan_in=hid)
        b = g.const(g.rng.standard_normal((1, 6 * hid)) * 0.05)
        y = g.op("GRU", [x, w, r, b], n_out=1, hidden_size=hid, linear_before_reset=1)  # [seq, 1, 1, hid]
        x = g.op("Squeeze", [y, g.const([1], np.int64)])
        cin = hid
    y = g.op("Add", [g.op("MatMul", [x, g.weight(cin, vocab, fan_in=cin)]), g.bias(vocab)])
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input_ids", TensorProto.INT64, [seq, 1])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [seq, 1, vocab])])


def r3d_18(small: bool = False) -> onnx.ModelProto:
    g = Graph(32)
    frames, side = (4, 32) if small else (8, 112)
    widths = [8, 16, 16, 32] if small else [64, 128, 256, 512]

    def conv3(x, cin, cout, k, stride):  # Conv3d with BatchNorm folded in
        w = g.weight(cout, cin, *k, fan_in=cin * k[0] * k[1] * k[2])
        return g.op("Conv", [x, w, g.bias(cout)], kernel_shape=list(k), strides=list(stride),
                    pads=[kk // 2 for kk in k] * 2)

    x = g.op("Relu", [conv3("input", 3, widths[0], (3, 7, 7), (1, 2, 2))])
    cin = widths[0]
    for stage, w in enumerate(widths):  # torchvision's r3d_18: two BasicBlocks of 3x3x3 convs a stage
        for i in range(2):
            s = 2 if stage and i == 0 else 1
            h = g.op("Relu", [conv3(x, cin, w, (3, 3, 3), (s, s, s))])
            h = conv3(h, w, w, (3, 3, 3), (1, 1, 1))
            sc = conv3(x, cin, w, (1, 1, 1), (s, s, s)) if s != 1 or cin != w else x
            x = g.op("Relu", [g.op("Add", [h, sc])])
            cin = w
    y = g.gemm(g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1), cin, 400)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, frames, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 400])])


def squeezenet1_1(small: bool = False) -> onnx.ModelProto:
    g = Graph(31)
    side = 64 if small else 224
    f = (lambda c: max(4, c // 4)) if small else (lambda c: c)

    def pool(x):  # MaxPool2d(3, 2, ceil_mode=True)
        return g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def fire(x, cin, sq, e):  # squeeze 1x1, then 1x1 and 3x3 expands side by side
        s_ = g.op("Relu", [g.conv(x, cin, sq, 1)])
        return g.op("Concat", [g.op("Relu", [g.conv(s_, sq, e, 1)]), g.op("Relu", [g.conv(s_, sq, e, 3)])], axis=1)

    x = pool(g.op("Relu", [g.op("Conv", ["input", g.weight(f(64), 3, 3, 3, fan_in=27), g.bias(f(64))],
                                kernel_shape=[3, 3], strides=[2, 2])]))
    cin = f(64)
    for i, (sq, e) in enumerate([(16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256),
                                 (64, 256)]):
        x = fire(x, cin, f(sq), f(e))
        cin = 2 * f(e)
        if i in (1, 3):
            x = pool(x)
    # the classifier: a 1x1 conv to the classes, Relu, global average pool, flatten
    x = g.op("Relu", [g.conv(x, cin, 1000, 1)])
    y = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])


def googlenet(small: bool = False) -> onnx.ModelProto:
    g = Graph(32)
    side = 64 if small else 224
    f = (lambda c: max(4, c // 8)) if small else (lambda c: c)

    def cbr(x, cin, cout, k, stride=1):
        return g.op("Relu", [g.conv(x, cin, cout, k, stride)])

    def pool(x, stride=2):  # MaxPool2d(3, stride, ceil_mode=True)
        return g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1] if
                    stride == 1 else [0, 0, 0, 0], ceil_mode=1)

    def inception(x, cin, c1, c3r, c3, c5r, c5, pp):  # torchvision's: the "5x5" branch is a 3x3
        b1 = cbr(x, cin, f(c1), 1)
        b2 = cbr(cbr(x, cin, f(c3r), 1), f(c3r), f(c3), 3)
        b3 = cbr(cbr(x, cin, f(c5r), 1), f(c5r), f(c5), 3)
        b4 = cbr(pool(x, 1), cin, f(pp), 1)
        return g.op("Concat", [b1, b2, b3, b4], axis=1), f(c1) + f(c3) + f(c5) + f(pp)

    x = pool(cbr("input", 3, f(64), 7, 2))
    x = pool(cbr(cbr(x, f(64), f(64), 1), f(64), f(192), 3))
    cin = f(192)
    cfg = [(64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "pool", (192, 96, 208, 16, 48, 64),
           (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64),
           (256, 160, 320, 32, 128, 128), "pool", (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]
    for c in cfg:
        if c == "pool":
            x = pool(x)
        else:
            x, cin = inception(x, cin, *c)
    return g.classifier(x, cin, side)


def efficientnet_v2_s(small: bool = False) -> onnx.ModelProto:
    g = Graph(33)
    side = 64 if small else 384
    x = g.silu(g.conv("input", 3, 24, 3, 2))
    cin = 24
    # block kind, expand ratio, stride, out channels, layers (torchvision's EfficientNetV2-S): Fused-MBConv (a
    # dense 3x3 expansion, SiLU, then a 1x1 projection; none where the ratio is 1) in the first three stages,
    # MBConv with squeeze-and-excitation after
    stages = [("fused", 1, 1, 24, 2), ("fused", 4, 2, 48, 4), ("fused", 4, 2, 64, 4), ("mb", 4, 2, 128, 6),
              ("mb", 6, 1, 160, 9), ("mb", 6, 2, 256, 15)]
    if small:
        stages = [("fused", 1, 1, 24, 1), ("fused", 4, 2, 32, 2), ("mb", 4, 2, 48, 2)]
    for kind, t, s, cout, n in stages:
        for i in range(n):
            stride = s if i == 0 else 1
            exp = cin * t
            if kind == "fused":
                h = g.silu(g.conv(x, cin, exp if t != 1 else cout, 3, stride))
                if t != 1:
                    h = g.conv(h, exp, cout, 1)
            else:
                h = g.silu(g.conv(x, cin, exp, 1))
                h = g.silu(g.conv(h, exp, exp, 3, stride, groups=exp))
                sq = max(1, cin // 4)
                se = g.op("Sigmoid", [g.conv(g.silu(g.conv(g.op("GlobalAveragePool", [h]), exp, sq, 1)), sq, exp,
                                             1)])
                h = g.conv(g.op("Mul", [h, se]), exp, cout, 1)
            x = g.op("Add", [h, x]) if stride == 1 and cin == cout else h
            cin = cout
    head = 64 if small else 1280
    return g.classifier(g.silu(g.conv(x, cin, head, 1)), head, side)


def regnetx_400mf(small: bool = False) -> onnx.ModelProto:
    # torchvision's RegNetX-400MF: widths 32 / 64 / 160 / 400, depths 1 / 2 / 7 / 12, groups of 16, no SE
    widths, depths, gw = ([16, 32, 48, 64], [1, 1, 2, 2], 16) if small else ([32, 64, 160, 400], [1, 2, 7, 12], 16)
    return _regnet(Graph(34), 64 if small else 224, widths, depths, gw, se=False)


def mlp_mixer(small: bool = False) -> onnx.ModelProto:
    g = Graph(35)
    side, d, tok_h, ch_h, layers = (64, 64, 32, 128, 2) if small else (224, 768, 384, 3072, 12)
    p = 16
    n = (side // p) ** 2
    x = g.op("Conv", ["input", g.weight(d, 3, p, p, fan_in=3 * p * p), g.bias(d)], kernel_shape=[p, p],
             strides=[p, p])
    x = g.op("Transpose", [g.op("Reshape", [x, g.const([1, d, n], np.int64)])], perm=[0, 2, 1])  # [1, n, d]
    for _ in range(layers):
        # token mixing: the MLP runs over the patches, the channels transposed to the rows
        h = g.op("Transpose", [g.layer_norm(x, d)], perm=[0, 2, 1])  # [1, d, n]
        h = g.linear(g.gelu(g.linear(h, n, tok_h)), tok_h, n)
        x = g.op("Add", [x, g.op("Transpose", [h], perm=[0, 2, 1])])
        x = g.op("Add", [x, g.linear(g.gelu(g.linear(g.layer_norm(x, d), d, ch_h)), ch_h, d)])
    y = g.gemm(g.op("ReduceMean", [g.layer_norm(x, d), g.const([1], np.int64)], keepdims=0), d, 1000)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], opset=18)


def clip_text(small: bool = False) -> onnx.ModelProto:
    g = Graph(36)
    d, heads, layers, vocab, seq = (64, 4, 2, 100, 16) if small else (512, 8, 12, 49408, 77)
    hd = d // heads
    emb = g.const(g.rng.standard_normal((vocab, d)) * 0.02)
    x = g.op("Add", [g.op("Gather", [emb, "input_ids"]), g.const(g.rng.standard_normal((1, seq, d)) * 0.01)])
    mask = g.const(np.triu(np.full((seq, seq), -np.inf, np.float32), 1))  # CLIP's causal mask, added

    def heads_of(t):
        return g.op("Transpose", [g.op("Reshape", [t, g.const([1, seq, heads, hd], np.int64)])], perm=[0, 2, 1, 3])

    def quick_gelu(t):  # x * sigmoid(1.702 x)
        return g.op("Mul", [t, g.op("Sigmoid", [g.op("Mul", [t, g.const(1.702)])])])

    for _ in range(layers):
        h = g.layer_norm(x, d, 1e-5)
        q = heads_of(g.op("Mul", [g.linear(h, d, d), g.const(hd ** -0.5)]))
        k, v = heads_of(g.linear(h, d, d)), heads_of(g.linear(h, d, d))
        sc = g.op("Add", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), mask])
        a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.const([1, seq, d], np.int64)])
        x = g.op("Add", [x, g.linear(a, d, d)])
        x = g.op("Add", [x, g.linear(quick_gelu(g.linear(g.layer_norm(x, d, 1e-5), d, 4 * d)), 4 * d, d)])
    x = g.layer_norm(x, d, 1e-5)
    # the pooled output: the features at the end-of-text token (the largest id), projected
    eot = g.op("ArgMax", ["input_ids"], axis=-1, keepdims=0)  # [1]
    pooled = g.op("Gather", [g.op("Reshape", [x, g.const([seq, d], np.int64)]), eot], axis=0)  # [1, d]
    y = g.op("MatMul", [pooled, g.weight(d, d, fan_in=d)])
    g.nodes.append(helper.make_node("Identity", [y], ["text_embeds"]))
    return g.model([helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
                   [helper.make_tensor_value_info("text_embeds", TensorProto.FLOAT, [1, d])])


def wavenet(small: bool = False) -> onnx.ModelProto:
    g = Graph(35)
    classes, res, skip, stacks, layers, t = (16, 8, 16, 1, 3, 40) if small else (256, 64, 256, 2, 10, 4000)

    def conv1(x, cin, cout, k=1, dilation=1):
        w = g.weight(cout, cin, k, fan_in=cin * k)
        return g.op("Conv", [x, w, g.bias(cout)], kernel_shape=[k], dilations=[dilation], pads=[0, 0])

    def causal(x, d):  # F.pad(x, (d, 0)): zeros before the first sample
        return g.op("Pad", [x, g.const([0, 0, d, 0, 0, 0], np.int64)], mode="constant")

    x = conv1(causal("input", 1), classes, res, k=2)
    skips = None
    for _ in range(stacks):
        for i in range(layers):
            d = 2 ** i
            h = conv1(causal(x, d), res, 2 * res, k=2, dilation=d)
            f, gate = g.op("Split", [h, g.const([res, res], np.int64)], n_out=2, axis=1)
            z = g.op("Mul", [g.op("Tanh", [f]), g.op("Sigmoid", [gate])])
            x = g.op("Add", [x, conv1(z, res, res)])
            s = conv1(z, res, skip)
            skips = s if skips is None else g.op("Add", [skips, s])
    y = conv1(g.op("Relu", [conv1(g.op("Relu", [skips]), skip, skip)]), skip, classes)
    y = g.op("Softmax", [y], axis=1)
    g.nodes.append(helper.make_node("Identity", [y], ["probs"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, classes, t])],
                   [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, classes, t])])


def pointnet(small: bool = False) -> onnx.ModelProto:
    g = Graph(36)
    n, classes, s = (64, 10, 8) if small else (1024, 40, 1)

    def mlp(x, widths, cin):  # shared MLP: Conv1d of kernel 1 with BatchNorm folded, Relu
        for w in widths:
            x = g.op("Relu", [g.op("Conv", [x, g.weight(w, cin, 1, fan_in=cin), g.bias(w)], kernel_shape=[1])])
            cin = w
        return x

    def fc(x, cin, cout, relu=True):
        y = g.gemm(x, cin, cout)
        return g.op("Relu", [y]) if relu else y

    def global_max(x):  # torch.max(x, 2)[0]
        return g.op("ReduceMax", [x], axes=[2], keepdims=0)

    def tnet(x, k):  # predicts a k x k transform, identity added, applied as bmm(x^T, T)^T
        h = global_max(mlp(x, [64 // s, 128 // s, 1024 // s], k))
        h = fc(fc(fc(h, 1024 // s, 512 // s), 512 // s, 256 // s), 256 // s, k * k, relu=False)
        t = g.op("Reshape", [g.op("Add", [h, g.const(np.eye(k).reshape(1, k * k))]),
                             g.const([1, k, k], np.int64)])
        return g.op("Transpose", [g.op("MatMul", [g.op("Transpose", [x], perm=[0, 2, 1]), t])], perm=[0, 2, 1])

    x = tnet("input", 3)
    x = mlp(x, [64 // s, 64 // s], 3)
    x = tnet(x, 64 // s)
    x = global_max(mlp(x, [64 // s, 128 // s, 1024 // s], 64 // s))
    y = fc(fc(fc(x, 1024 // s, 512 // s), 512 // s, 256 // s), 256 // s, classes, relu=False)
    y = g.op("LogSoftmax", [y], axis=1)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, n])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])])


def hrnet_w18(small: bool = False) -> onnx.ModelProto:
    g = Graph(37)
    side, w0, blocks, classes = (32, 4, 1, 5) if small else (512, 18, 2, 19)
    widths = [w0, 2 * w0, 4 * w0, 8 * w0]

    def conv_bn(x, cin, cout, k=3, stride=1, relu=True):  # BatchNorm folded as the exporter does
        y = g.conv(x, cin, cout, k, stride)
        return g.op("Relu", [y]) if relu else y

    def basic(x, c):  # two 3x3 convs and the identity
        h = conv_bn(conv_bn(x, c, c), c, c, relu=False)
        return g.op("Relu", [g.op("Add", [h, x])])

    def up(x, cin, cout, factor):  # 1x1 conv, then bilinear upsampling (F.interpolate, align_corners=False)
        y = conv_bn(x, cin, cout, k=1, relu=False)
        return g.op("Resize", [y, "", g.const([1.0, 1.0, float(factor), float(factor)])], mode="linear",
                    coordinate_transformation_mode="pytorch_half_pixel")

    def down(x, cin, cout, times):  # stride-2 3x3 convs
        for t in range(times):
            last = t == times - 1
            x = conv_bn(x, cin, cout if last else cin, stride=2, relu=not last)
        return x

    x = conv_bn(conv_bn("input", 3, 64, stride=2), 64, 64, stride=2)  # 1/4
    branches = [conv_bn(x, 64, widths[0])]
    for stage in range(1, 4):
        branches.append(down(branches[-1], widths[stage - 1], widths[stage], 1))
        branches = [basic(basic(b, widths[i]), widths[i]) if blocks > 1 else basic(b, widths[i])
                    for i, b in enumerate(branches)]
        fused = []
        for i in range(len(branches)):  # every branch gathers all others at its resolution
            acc = branches[i]
            for j, b in enumerate(branches):
                if j == i:
                    continue
                y = up(b, widths[j], widths[i], 2 ** (j - i)) if j > i else down(b, widths[j], widths[i], i - j)
                acc = g.op("Add", [acc, y])
            fused.append(g.op("Relu", [acc]))
        branches = fused
    # the segmentation head: every branch upsampled to 1/4, concatenated, 1x1 convs to the classes
    cat = g.op("Concat", [branches[0]] + [g.op("Resize", [b, "", g.const([1.0, 1.0, float(2 ** i), float(2 ** i)])],
                                                mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
                                         for i, b in enumerate(branches) if i], axis=1)
    total = sum(widths)
    y = conv_bn(conv_bn(cat, total, total, k=1), total, classes, k=1, relu=False)
    g.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes, side // 4, side // 4])])


def quartznet(small: bool = False) -> onnx.ModelProto:
    g = Graph(38)
    feats, t, c, reps, kernels, classes = ((16, 40, 16, 2, [5, 7], 6) if small else
                                           (64, 400, 256, 5, [33, 39, 51, 63, 75], 29))

    def sep(x, cin, cout, k, stride=1, dilation=1, relu=True):  # depthwise Conv1d, pointwise, BatchNorm folded
        pad = dilation * (k - 1) // 2
        d = g.op("Conv", [x, g.weight(cin, 1, k, fan_in=k)], kernel_shape=[k], group=cin, pads=[pad, pad],
                 strides=[stride], dilations=[dilation])
        y = g.op("Conv", [d, g.weight(cout, cin, 1, fan_in=cin), g.bias(cout)], kernel_shape=[1])
        return g.op("Relu", [y]) if relu else y

    x = sep("input", feats, c, kernels[0], stride=2)
    cin = c
    for b, k in enumerate(kernels):  # blocks of `reps` separable sub-blocks with a 1x1 residual
        cout = c if b < len(kernels) // 2 + 1 else 2 * c
        h = x
        for r in range(reps):
            h = sep(h, cin if r == 0 else cout, cout, k, relu=r < reps - 1)
        res = g.op("Conv", [x, g.weight(cout, cin, 1, fan_in=cin), g.bias(cout)], kernel_shape=[1])
        x = g.op("Relu", [g.op("Add", [h, res])])
        cin = cout
    x = sep(x, cin, 2 * c, 87 if not small else 9, dilation=2)
    x = g.op("Relu", [g.op("Conv", [x, g.weight(4 * c, 2 * c, 1, fan_in=2 * c), g.bias(4 * c)], kernel_shape=[1])])
    y = g.op("Conv", [x, g.weight(classes, 4 * c, 1, fan_in=4 * c), g.bias(classes)], kernel_shape=[1])
    y = g.op("LogSoftmax", [g.op("Transpose", [y], perm=[0, 2, 1])], axis=-1)
    g.nodes.append(helper.make_node("Identity", [y], ["log_probs"]))
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, feats, t])],
                   [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, [1, t // 2, classes])])


def crnn(small: bool = False) -> onnx.ModelProto:
    g = Graph(39)
    h, w, ws, hid, classes = (32, 32, [4, 8, 8, 8, 16, 16, 16], 8, 5) if small else \
        (32, 128, [64, 128, 256, 256, 512, 512, 512], 256, 37)

    def conv(x, cin, cout, k=3, pad=1, relu=True):  # BatchNorm folded where the model has it
        w_ = g.weight(cout, cin, k, k, fan_in=cin * k * k)
        y = g.op("Conv", [x, w_, g.bias(cout)], kernel_shape=[k, k], pads=[pad] * 4)
        return g.op("Relu", [y]) if relu else y

    def pool(x, k, s, p):
        return g.op("MaxPool", [x], kernel_shape=k, strides=s, pads=p)

    x = pool(conv("input", 1, ws[0]), [2, 2], [2, 2], [0, 0, 0, 0])
    x = pool(conv(x, ws[0], ws[1]), [2, 2], [2, 2], [0, 0, 0, 0])
    x = pool(conv(conv(x, ws[1], ws[2]), ws[2], ws[3]), [2, 2], [2, 1], [0, 1, 0, 1])
    x = pool(conv(conv(x, ws[3], ws[4]), ws[4], ws[5]), [2, 2], [2, 1], [0, 1, 0, 1])
    x = conv(x, ws[5], ws[6], k=2, pad=0)  # [1, C, 1, T]
    seq = g.op("Transpose", [g.op("Squeeze", [x, g.const([2], np.int64)])], perm=[2, 0, 1])  # [T, 1, C]
    cin = ws[6]
    for _ in range(2):  # bidirectional LSTMs, then a Linear joining the directions (nn.LSTM's export)
        wi = g.weight(2, 4 * hid, cin, fan_in=cin)
        r = g.weight(2, 4 * hid, hid, fan_in=hid)
        b = g.const(g.rng.standard_normal((2, 8 * hid)) * 0.05)
        y = g.op("LSTM", [seq, wi, r, b], n_out=1, hidden_size=hid, direction="bidirectional")  # [T, 2, 1, hid]
        y = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), g.const([0, 0, -1], np.int64)])
        seq = g.linear(y, 2 * hid, hid)
        cin = hid
    y = g.op("LogSoftmax", [g.linear(seq, hid, classes)], axis=-1)
    g.nodes.append(helper.make_node("Identity", [y], ["log_probs"]))
    t = w // 4 + 1
    return g.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, h, w])],
                   [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, [t, 1, classes])])


def bit_resnet50(small: bool = False) -> onnx.ModelProto:
    g = Graph(40)
    side, width, groups, depths = (32, 8, 4, [1, 1, 1, 1]) if small else (224, 64, 32, [3, 4, 6, 3])

    def gn_relu(x, c, hw):  # nn.GroupNorm(32) at opset 17, then Relu: BiT's pre-activation
        r = g.op("Reshape", [x, g.const([0, groups, -1], np.int64)])
        n = g.op("InstanceNormalization", [r, g.const(np.ones(groups)), g.const(np.zeros(groups))], epsilon=1e-5)
        n = g.op("Reshape", [n, g.const([1, c, hw, hw], np.int64)])
        gamma = g.const(g.rng.uniform(0.8, 1.2, (c, 1, 1)))
        return g.op("Relu", [g.op("Add", [g.op("Mul", [n, gamma]), g.const(g.rng.standard_normal((c, 1, 1)) * 0.05)])])

    x = g.op("MaxPool", [g.conv("input", 3, width, 7, 2, bias=False)], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1])
    hw, cin = side // 4, width
    for stage, d in enumerate(depths):  # pre-activation bottlenecks (ResNetV2), the stride on the 3x3
        mid = width * 2 ** stage
        cout = 4 * mid
        for i in range(d):
            stride = 2 if stage and i == 0 else 1
            pre = gn_relu(x, cin, hw)
            sc = g.conv(pre, cin, cout, 1, stride, bias=False) if i == 0 else x
            h = g.conv(pre, cin, mid, 1, bias=False)
            h = g.conv(gn_relu(h, mid, hw), mid, mid, 3, stride, bias=False)
            hw //= stride
            h = g.conv(gn_relu(h, mid, hw), mid, cout, 1, bias=False)
            x = g.op("Add", [h, sc])
            cin = cout
    return g.classifier(gn_relu(x, cin, hw), cin, side)


BUILDERS = {"efficientnet_b0": efficientnet_b0, "convnext_tiny": convnext_tiny, "llama_decoder": llama_decoder,
            "mobilenet_v3_large": mobilenet_v3_large, "resnext50": resnext50,
            "densenet121": densenet121, "unet": unet, "whisper_encoder": whisper_encoder,
            "shufflenet_v2": shufflenet_v2, "yolov8n": yolov8n, "swin_tiny": swin_tiny,
            "lstm_tagger": lstm_tagger, "t5_encoder": t5_encoder, "sd_unet": sd_unet,
            "wav2vec2_base": wav2vec2_base, "inception_v3": inception_v3,
            "mobilevit_s": mobilevit_s, "detr_r50": detr_r50, "regnety_800mf": regnety_800mf,
            "conformer": conformer, "dlrm": dlrm, "vgg16": vgg16, "deeplabv3": deeplabv3,
            "fast_neural_style": fast_neural_style, "espcn": espcn, "gru_lm": gru_lm, "r3d_18": r3d_18,
            "squeezenet1_1": squeezenet1_1, "googlenet": googlenet, "efficientnet_v2_s": efficientnet_v2_s,
            "regnetx_400mf": regnetx_400mf, "mlp_mixer": mlp_mixer, "clip_text": clip_text,
            "wavenet": wavenet, "pointnet": pointnet, "hrnet_w18": hrnet_w18,
            "quartznet": quartznet, "crnn": crnn, "bit_resnet50": bit_resnet50}


def main() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(root, "build", "models", "arch"))
    p.add_argument("models", nargs="*", default=list(BUILDERS))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models:
        path = os.path.join(a.out, f"{name}.onnx")
        onnx.save(BUILDERS[name](), path)
        print(path)


if __name__ == "__main__":
    main()
