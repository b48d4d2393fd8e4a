"""fuse_channel_shuffle: ShuffleNet's Concat -> Reshape -> Transpose -> Reshape -> Split becomes one
tessera.ChannelShuffle, in an NHWC conv region (the interleave kernel) and on plain NCHW tensors (the
reference kernel), with and without the Concat and the Split; outputs equal onnxruntime's, and chains the
pass must not take (an intermediate also read elsewhere) stay as they were."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

RNG = np.random.default_rng(5)


def _c(name, arr, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(arr, dtype=dtype), name)


def shuffle_nodes(x, out, n, c, h, w, groups, splits=None, tag="s"):
    """Reshape x [n, c, h, w] to groups, transpose, reshape back, and Split if splits is given."""
    nodes = [
        helper.make_node("Reshape", [x, f"{tag}_g"], [f"{tag}_grouped"]),
        helper.make_node("Transpose", [f"{tag}_grouped"], [f"{tag}_t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", [f"{tag}_t", f"{tag}_flat"], [out if splits is None else f"{tag}_shuf"]),
    ]
    inits = [_c(f"{tag}_g", [n, groups, c // groups, h, w]), _c(f"{tag}_flat", [n, c, h, w])]
    if splits is not None:
        nodes.append(helper.make_node("Split", [f"{tag}_shuf", f"{tag}_split"], out, axis=1))
        inits.append(_c(f"{tag}_split", splits))
    return nodes, inits


def shufflenet_units(c=58, hw=(9, 7), n=1, extra_output=False):
    """Two ShuffleNetV2 units: x split in two, one half through 1x1 / 3x3 depthwise / 1x1 convs, concat,
    shuffle, split; then a shuffle without Split feeding a conv."""
    h, w = hw
    inits, nodes = [], []

    def conv(name, x, y, co, ci, k=1, group=1):
        inits.append(numpy_helper.from_array(
            (RNG.standard_normal((co, ci // group, k, k)) / np.sqrt(ci // group * k * k)).astype(np.float32), name))
        nodes.append(helper.make_node("Conv", [x, name], [y], pads=[k // 2] * 4, group=group))

    conv("w0", "x", "x0", 2 * c, 2 * c)
    nodes.append(helper.make_node("Split", ["x0", "sp0"], ["a0", "b0"], axis=1))
    inits.append(_c("sp0", [c, c]))
    conv("w1", "b0", "b1", c, c)
    nodes.append(helper.make_node("Relu", ["b1"], ["b1r"]))
    conv("w2", "b1r", "b2", c, c, k=3, group=c)
    conv("w3", "b2", "b3", c, c)
    nodes.append(helper.make_node("Relu", ["b3"], ["b3r"]))
    nodes.append(helper.make_node("Concat", ["a0", "b3r"], ["cat1"], axis=1))
    sn, si = shuffle_nodes("cat1", ["a1", "b4"], n, 2 * c, h, w, 2, [c, c], tag="s1")
    nodes += sn
    inits += si
    conv("w4", "b4", "b5", c, c)
    nodes.append(helper.make_node("Concat", ["a1", "b5"], ["cat2"], axis=1))
    sn, si = shuffle_nodes("cat2", "shuf2", n, 2 * c, h, w, 2, tag="s2")
    nodes += sn
    inits += si
    conv("w5", "shuf2", "y", 2 * c, 2 * c)
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:  # the first concat is also read by the user: its Concat stays
        outputs.append(helper.make_tensor_value_info("cat1", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 2 * c, h, w])],
                          outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _check(model, feeds, threads):
    b = model.SerializeToString()
    got = tessera.InferenceSession(b, tessera.SessionOptions(threads=threads)).run(None, feeds)
    want = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, o in zip(got, want):
        assert g.shape == o.shape
        assert np.abs(g - o).max() <= 1e-5 * max(np.abs(o).max(), 1.0)
    return tessera.InferenceSession(b).graph_text()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c,hw,n", [(58, (9, 7), 1), (29, (5, 5), 2), (116, (30, 40), 1)])
def test_shufflenet_units(threads, c, hw, n):
    x = RNG.standard_normal((n, 2 * c, *hw)).astype(np.float32)
    text = _check(shufflenet_units(c, hw, n), {"x": x}, threads)
    assert text.count("ChannelShuffle(") == 2
    assert not any(v in text for v in ("s1_grouped", "s1_t", "s1_shuf", "s2_grouped", "s2_t"))


def test_concat_read_elsewhere_stays():
    x = RNG.standard_normal((1, 116, 6, 6)).astype(np.float32)
    text = _check(shufflenet_units(58, (6, 6), 1, extra_output=True), {"x": x}, 1)
    assert text.count("ChannelShuffle(") == 2 and "Concat(" in text


@pytest.mark.parametrize("groups,splits", [(2, [3, 5]), (3, [6]), (4, [1, 4, 3]), (2, None)])
def test_nchw_shuffle_of_inputs(groups, splits):
    """No conv: the shuffle of two graph inputs stays NCHW (axis 1, rows of h * w after it), exact."""
    n, c, h, w = 2, 8 if groups != 3 else 6, 3, 5
    nodes = [helper.make_node("Concat", ["p", "q"], ["cat"], axis=1)]
    outs = ["y0"] if splits is None else [f"y{i}" for i in range(len(splits))]
    sn, si = shuffle_nodes("cat", outs if splits else "y0", n, c, h, w, groups, splits, tag="s")
    g = helper.make_graph(nodes + sn, "g",
                          [helper.make_tensor_value_info(v, TensorProto.FLOAT, [n, c // 2, h, w]) for v in "pq"],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], si)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    p, q = (RNG.standard_normal((n, c // 2, h, w)).astype(np.float32) for _ in range(2))
    got = tessera.InferenceSession(m.SerializeToString()).run(None, {"p": p, "q": q})
    cat = np.concatenate([p, q], 1).reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)
    want = np.split(cat, np.cumsum(splits)[:-1], 1) if splits else [cat]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert "ChannelShuffle(" in tessera.InferenceSession(m.SerializeToString()).graph_text()


def _shuffle_node_model(attrs, shapes):
    ins, outs = [f"x{i}" for i in range(len(shapes))], ["y0", "y1"]
    node = helper.make_node("ChannelShuffle", ins, outs, domain="tessera", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                        for n, s in zip(ins, shapes)],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("tessera", 1)]).SerializeToString()


@pytest.mark.parametrize("attrs,shapes,message", [
    (dict(axis=2, groups=0, splits=[8, 8]), [[2, 3, 8]] * 2, "in 0 groups"),
    (dict(axis=2, groups=2, splits=[8, 9]), [[2, 3, 8]] * 2, "splits adding to 17"),
    (dict(axis=9, groups=2, splits=[8, 8]), [[2, 3, 8]] * 2, "axis 9"),
    (dict(), [[2, 3, 8]] * 2, "0 splits for 2 outputs"),
    (dict(axis=2, groups=2, splits=[20, -4]), [[2, 3, 8]] * 2, "negative split"),
    (dict(axis=2, groups=2, splits=[8, 8]), [[2, 3, 8], [2, 4, 8]], "differs off the axis"),
])
def test_malformed_channel_shuffle_is_an_error(attrs, shapes, message):
    """A ChannelShuffle a user writes with bad attributes or inputs is refused with the node named."""
    with pytest.raises(Exception, match=message):
        tessera.InferenceSession(_shuffle_node_model(attrs, shapes))


def test_channel_shuffle_inputs_differing_at_run_time_is_an_error():
    s = tessera.InferenceSession(_shuffle_node_model(dict(axis=2, groups=2, splits=[8, 8]), [["N", 3, 8]] * 2))
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    with pytest.raises(Exception, match="ChannelShuffle"):
        s.run(None, {"x0": x, "x1": RNG.standard_normal((3, 3, 8)).astype(np.float32)})
    got = s.run(None, {"x0": x, "x1": x})
    cat = np.concatenate([x, x], 2).reshape(2, 3, 2, 8).transpose(0, 1, 3, 2).reshape(2, 3, 16)
    np.testing.assert_array_equal(got[0], cat[..., :8])
    np.testing.assert_array_equal(got[1], cat[..., 8:])
