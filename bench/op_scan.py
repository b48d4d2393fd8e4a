#!/usr/bin/env python3
"""Single-op models against onnxruntime: the ops a model nobody tuned for might lean on (activations, norms,
scans, sampling, pooling with indices, detection post-processing, a conv whose weights are an input), each
built here, timed side by side in alternating blocks after an idle gap, with the max error relative to
onnxruntime's output. A ratio far above 1 marks an op still on the reference kernel.

  PYTHONPATH=build/release/pydev python3 bench/op_scan.py [--threads N] [NAME ...]
"""
import argparse
import time

import numpy as np
import onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
import tessera
R = np.random.default_rng(0)
F = TensorProto.FLOAT
def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]); m.ir_version = 9
    return m.SerializeToString()
def vi(n, shape, t=F): return helper.make_tensor_value_info(n, t, shape)
def init(n, a): return numpy_helper.from_array(a, n)
cases = {}
def add(name, b, feeds): cases[name] = (b, feeds)
x = R.standard_normal((1, 64, 56, 56)).astype(np.float32); w = (R.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
add("conv_runtime_weights", model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1]*4)], [vi("x", x.shape), vi("w", w.shape)], [vi("y", None)]), {"x": x, "w": w})
x1 = R.standard_normal((1, 256, 8192)).astype(np.float32)
add("conv1d_dilated5", model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[5, 5], dilations=[5])], [vi("x", x1.shape)], [vi("y", None)], [init("w", (R.standard_normal((256, 256, 3)) * 0.05).astype(np.float32))]), {"x": x1})
x2 = R.standard_normal((1, 512, 256)).astype(np.float32)
add("convtranspose1d_s8", model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[8], pads=[4, 4])], [vi("x", x2.shape)], [vi("y", None)], [init("w", (R.standard_normal((512, 256, 16)) * 0.05).astype(np.float32))]), {"x": x2})
xe = R.standard_normal((1, 256, 56, 56)).astype(np.float32)
for op, attrs in [("Softplus", {}), ("Elu", {"alpha": 1.0}), ("Selu", {}), ("Celu", {}), ("HardSigmoid", {}), ("Softsign", {}), ("ThresholdedRelu", {}), ("Mish", {})]:
    add(op, model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", xe.shape)], [vi("y", None)]), {"x": xe})
xl = R.standard_normal((1, 96, 55, 55)).astype(np.float32)
add("LRN", model([helper.make_node("LRN", ["x"], ["y"], size=5, alpha=1e-4, beta=0.75, bias=2.0)], [vi("x", xl.shape)], [vi("y", None)]), {"x": xl})
xi = R.standard_normal((1, 64, 256, 256)).astype(np.float32)
add("InstanceNorm", model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])], [vi("x", xi.shape)], [vi("y", None)], [init("s", np.ones(64, np.float32)), init("b", np.zeros(64, np.float32))]), {"x": xi})
xg = R.standard_normal((1, 320, 64, 64)).astype(np.float32)
add("GroupNorm21", model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=32)], [vi("x", xg.shape)], [vi("y", None)], [init("s", np.ones(320, np.float32)), init("b", np.zeros(320, np.float32))], opset=21), {"x": xg})
xt = R.standard_normal((1, 100000)).astype(np.float32)
add("TopK", model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1)], [vi("x", xt.shape)], [vi("v", None), vi("i", None, TensorProto.INT64)], [init("k", np.array([100], np.int64))]), {"x": xt})
xc = R.standard_normal((1, 4096, 512)).astype(np.float32)
add("CumSum", model([helper.make_node("CumSum", ["x", "a"], ["y"])], [vi("x", xc.shape)], [vi("y", None)], [init("a", np.array(1, np.int64))]), {"x": xc})
xr = R.standard_normal((1, 64, 128, 128)).astype(np.float32)
add("Resize_linear4x", model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")], [vi("x", xr.shape)], [vi("y", None)], [init("s", np.array([1, 1, 4, 4], np.float32))]), {"x": xr})
add("Resize_cubic2x", model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic")], [vi("x", xr.shape)], [vi("y", None)], [init("s", np.array([1, 1, 2, 2], np.float32))]), {"x": xr})
grid = R.uniform(-1, 1, (1, 128, 128, 2)).astype(np.float32)
add("GridSample", model([helper.make_node("GridSample", ["x", "g"], ["y"])], [vi("x", xr.shape), vi("g", grid.shape)], [vi("y", None)], opset=16), {"x": xr, "g": grid})
add("DepthToSpace", model([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=4, mode="CRD")], [vi("x", xr.shape)], [vi("y", None)]), {"x": xr})
add("SpaceToDepth", model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)], [vi("x", xr.shape)], [vi("y", None)]), {"x": xr})
xs = R.standard_normal((1, 128, 32000)).astype(np.float32)
add("LogSoftmax", model([helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)], [vi("x", xs.shape)], [vi("y", None)]), {"x": xs})
add("ArgMax", model([helper.make_node("ArgMax", ["x"], ["y"], axis=-1)], [vi("x", xs.shape)], [vi("y", None, TensorProto.INT64)]), {"x": xs})
add("ReduceMax_keep", model([helper.make_node("ReduceMax", ["x", "a"], ["y"], keepdims=1)], [vi("x", xs.shape)], [vi("y", None)], [init("a", np.array([-1], np.int64))]), {"x": xs})
xm = R.standard_normal((1, 64, 112, 112)).astype(np.float32)
add("MaxPool_idx", model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])], [vi("x", xm.shape)], [vi("y", None), vi("i", None, TensorProto.INT64)]), {"x": xm})
boxes = np.sort(R.uniform(0, 1, (1, 5000, 4)).astype(np.float32), axis=-1); scores = R.uniform(0, 1, (1, 1, 5000)).astype(np.float32)
add("NMS", model([helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou", "st"], ["y"])], [vi("b", boxes.shape), vi("s", scores.shape)], [vi("y", None, TensorProto.INT64)], [init("m", np.array([100], np.int64)), init("iou", np.array([0.5], np.float32)), init("st", np.array([0.05], np.float32))]), {"b": boxes, "s": scores})
xw = R.standard_normal((1, 256, 64, 64)).astype(np.float32)
add("ConvT2d_s2", model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])], [vi("x", xw.shape)], [vi("y", None)], [init("w", (R.standard_normal((256, 128, 3, 3)) * 0.05).astype(np.float32))]), {"x": xw})
add("Conv_k1x7", model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 3, 0, 3])], [vi("x", xw.shape)], [vi("y", None)], [init("w", (R.standard_normal((256, 256, 1, 7)) * 0.05).astype(np.float32))]), {"x": xw})
add("Gemm_big", model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [4096, 256])], [vi("y", None)], [init("w", (R.standard_normal((256, 256))).astype(np.float32))]), {"x": R.standard_normal((4096, 256)).astype(np.float32)})

# element-wise, data movement, normalization, detection and quantized ops
X = R.standard_normal((1, 256, 56, 56)).astype(np.float32)
def un(op, **a): cases[op] = (model([helper.make_node(op, ["x"], ["y"], **a)], [vi("x", X.shape)], [vi("y", None)]), {"x": X})
for op in ["Log", "Sin", "Cos", "Floor", "Round", "Reciprocal", "Sqrt", "Erf", "Sign", "Exp", "Tanh", "Sigmoid", "Abs", "Neg", "Ceil", "Softsign", "HardSwish", "Relu"]:
    un(op)
Xp = np.abs(X) + 0.1
cases["Pow"] = (model([helper.make_node("Pow", ["x", "e"], ["y"])], [vi("x", X.shape)], [vi("y", None)], [init("e", np.array(1.7, np.float32))]), {"x": Xp})
cases["Clip"] = (model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [vi("x", X.shape)], [vi("y", None)], [init("lo", np.array(-1, np.float32)), init("hi", np.array(1, np.float32))]), {"x": X})
cases["Where"] = (model([helper.make_node("Greater", ["x", "z"], ["c"]), helper.make_node("Where", ["c", "x", "z"], ["y"])], [vi("x", X.shape)], [vi("y", None)], [init("z", np.array(0, np.float32))]), {"x": X})
cases["Max2"] = (model([helper.make_node("Max", ["x", "x2"], ["y"])], [vi("x", X.shape), vi("x2", X.shape)], [vi("y", None)]), {"x": X, "x2": X[:, ::-1].copy()})
cases["BatchNorm_unfused"] = (model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])], [vi("x", X.shape)], [vi("y", None)], [init("s", np.ones(256, np.float32)), init("b", np.zeros(256, np.float32)), init("m", np.zeros(256, np.float32)), init("v", np.ones(256, np.float32))]), {"x": X})
cases["Pad_reflect"] = (model([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [vi("x", X.shape)], [vi("y", None)], [init("p", np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64))]), {"x": X})
cases["Tile"] = (model([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", X.shape)], [vi("y", None)], [init("r", np.array([1, 1, 2, 2], np.int64))]), {"x": X})
cases["Expand"] = (model([helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", [1, 256, 1, 56])], [vi("y", None)], [init("s", np.array([1, 256, 56, 56], np.int64))]), {"x": X[:, :, :1, :].copy()})
I = R.integers(0, 56, (1, 256, 56, 56)).astype(np.int64)
cases["GatherElements"] = (model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=3)], [vi("x", X.shape), vi("i", I.shape, TensorProto.INT64)], [vi("y", None)]), {"x": X, "i": I})
E = R.standard_normal((50000, 256)).astype(np.float32); ids = R.integers(0, 50000, (1, 2048)).astype(np.int64)
cases["Gather_emb"] = (model([helper.make_node("Gather", ["e", "i"], ["y"])], [vi("i", ids.shape, TensorProto.INT64)], [vi("y", None)], [init("e", E)]), {"i": ids})
cases["ReduceL2"] = (model([helper.make_node("ReduceL2", ["x", "a"], ["y"], keepdims=1)], [vi("x", X.shape)], [vi("y", None)], [init("a", np.array([1], np.int64))]), {"x": X})
cases["LpNorm"] = (model([helper.make_node("LpNormalization", ["x"], ["y"], axis=1, p=2)], [vi("x", X.shape)], [vi("y", None)]), {"x": X})
cases["ArgMin"] = (model([helper.make_node("ArgMin", ["x"], ["y"], axis=1)], [vi("x", X.shape)], [vi("y", None, TensorProto.INT64)]), {"x": X})
cases["MeanVarNorm"] = (model([helper.make_node("MeanVarianceNormalization", ["x"], ["y"])], [vi("x", X.shape)], [vi("y", None)]), {"x": X})
xu = R.standard_normal((1, 64, 56, 56)).astype(np.float32)
mp = model([helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]), helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [vi("x", xu.shape)], [vi("y", None)], opset=12)
cases["MaxPool+MaxUnpool"] = (mp, {"x": xu})
boxes = R.uniform(0, 50, (200, 4)).astype(np.float32); boxes[:, 2:] += boxes[:, :2] + 5
cases["RoiAlign"] = (model([helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=7, output_width=7, sampling_ratio=2, spatial_scale=1.0)], [vi("x", xu.shape)], [vi("y", None)], [init("r", boxes), init("b", np.zeros(200, np.int64))], opset=16), {"x": xu})
A = R.standard_normal((1, 197, 768)).astype(np.float32)
sc = np.float32(0.05); zp = np.uint8(128)
cases["QuantizeLinear"] = (model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], [vi("x", X.shape)], [vi("y", None, TensorProto.UINT8)], [init("s", np.array(sc)), init("z", np.array(zp))]), {"x": X})
Xq = R.integers(0, 255, X.shape).astype(np.uint8)
cases["DequantizeLinear"] = (model([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])], [vi("x", X.shape, TensorProto.UINT8)], [vi("y", None)], [init("s", np.array(sc)), init("z", np.array(zp))]), {"x": Xq})
Aq = R.integers(0, 255, (197, 768)).astype(np.uint8); Wq = R.integers(0, 255, (768, 768)).astype(np.uint8)
cases["MatMulInteger"] = (model([helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["y"])], [vi("a", Aq.shape, TensorProto.UINT8)], [vi("y", None, TensorProto.INT32)], [init("w", Wq), init("az", np.array(128, np.uint8)), init("wz", np.array(128, np.uint8))]), {"a": Aq})
Xc = R.integers(0, 255, (1, 64, 56, 56)).astype(np.uint8); Wc = R.integers(-127, 127, (64, 64, 3, 3)).astype(np.int8)
cases["QLinearConv"] = (model([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[1, 1, 1, 1])], [vi("x", Xc.shape, TensorProto.UINT8)], [vi("y", None, TensorProto.UINT8)], [init("xs", np.array(0.02, np.float32)), init("xz", np.array(128, np.uint8)), init("w", Wc), init("ws", np.array(0.01, np.float32)), init("wz", np.array(0, np.int8)), init("ys", np.array(0.5, np.float32)), init("yz", np.array(128, np.uint8))]), {"x": Xc})
cases["QLinearMatMul"] = (model([helper.make_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"], ["y"])], [vi("a", Aq.shape, TensorProto.UINT8)], [vi("y", None, TensorProto.UINT8)], [init("as", np.array(0.02, np.float32)), init("az", np.array(128, np.uint8)), init("w", Wq), init("ws", np.array(0.01, np.float32)), init("wz", np.array(128, np.uint8)), init("ys", np.array(2.0, np.float32)), init("yz", np.array(128, np.uint8))]), {"a": Aq})
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("names", nargs="*", help="cases to run (default: all): " + " ".join(cases))
args = ap.parse_args()
th = args.threads
for name in args.names or list(cases):
    b, feeds = cases[name]
    try:
        so = ort.SessionOptions(); so.intra_op_num_threads = th
        o = ort.InferenceSession(b, so, providers=["CPUExecutionProvider"])
        t = tessera.InferenceSession(b, threads=th)
        ro = o.run(None, feeds); rt = t.run(None, feeds)
        err = max(float(np.abs(np.asarray(a, np.float64) - np.asarray(c, np.float64)).max() / (np.abs(np.asarray(c, np.float64)).max() + 1e-30)) for a, c in zip(rt, ro))
        tt, to = [], []
        for r in range(5):
            time.sleep(0.06)
            for k in range(3):
                s = time.perf_counter(); t.run(None, feeds); tt.append(time.perf_counter() - s)
            time.sleep(0.06)
            for k in range(3):
                s = time.perf_counter(); o.run(None, feeds); to.append(time.perf_counter() - s)
        print("%-22s ours %9.3f ms  ort %9.3f ms  ratio %6.2f  err %.1e" % (name, np.median(tt) * 1e3, np.median(to) * 1e3, np.median(tt) / np.median(to), err), flush=True)
    except Exception as e:
        print("%-22s ERROR %s" % (name, str(e)[:200]), flush=True)
