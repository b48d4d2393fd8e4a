"""RoiAlign on its tuned kernel (kernels/x86/roi_align.h) against onnxruntime: both modes, both coordinate
transformations, fixed and adaptive sampling, boxes across the map's edges and batch indices into every
image, one and two threads; bad batch indices are an error naming the node, never a read outside the map."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tessera

RNG = np.random.default_rng(21)


def _model(xs, r, mode, ctm, oh, ow, sampling, scale):
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], mode=mode, coordinate_transformation_mode=ctm,
                            output_height=oh, output_width=ow, sampling_ratio=sampling, spatial_scale=scale)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs)),
                                        helper.make_tensor_value_info("r", TensorProto.FLOAT, [r, 4]),
                                        helper.make_tensor_value_info("b", TensorProto.INT64, [r])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    return m.SerializeToString()


def _boxes(r, n, h, w, scale):
    ext = max(h, w) / scale
    b = RNG.uniform(-0.2 * ext, 1.1 * ext, (r, 4)).astype(np.float32)
    b[:, 2:] = b[:, :2] + np.abs(RNG.uniform(0, 0.8 * ext, (r, 2))).astype(np.float32)
    return b, RNG.integers(0, n, r).astype(np.int64)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("xs,oh,ow,sampling,scale", [((2, 17, 23, 19), 7, 7, 2, 1.0), ((1, 64, 32, 32), 7, 7, 0, 0.5),
                                                      ((3, 5, 9, 40), 3, 4, 1, 1.0), ((1, 16, 14, 14), 14, 14, 0, 0.25)])
def test_roi_align_matches_onnxruntime(mode, ctm, xs, oh, ow, sampling, scale):
    x = RNG.standard_normal(xs).astype(np.float32)
    rois, bi = _boxes(13, xs[0], xs[2], xs[3], scale)
    model = _model(xs, 13, mode, ctm, oh, ow, sampling, scale)
    feeds = {"x": x, "r": rois, "b": bi}
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for threads in (1, 2):
        got = tessera.InferenceSession(model, tessera.SessionOptions(threads=threads)).run(None, feeds)[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)


def test_roi_align_batch_index_out_of_range_is_an_error():
    x = RNG.standard_normal((2, 4, 8, 8)).astype(np.float32)
    rois, bi = _boxes(3, 2, 8, 8, 1.0)
    bi[1] = 2
    s = tessera.InferenceSession(_model(x.shape, 3, "avg", "half_pixel", 2, 2, 1, 1.0))
    with pytest.raises(tessera.InvalidArgument, match="RoiAlign.*batch index 2 is out of range"):
        s.run(None, {"x": x, "r": rois, "b": bi})
