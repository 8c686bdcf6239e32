"""Pools a target lacks (dilated average pools in PyTorch, Keras and LiteRT; 3-D pools in LiteRT) written as
their window's taps, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb


def _pools(tmp_path) -> str:
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 3], dilations=[2, 2], strides=[1, 2],
                          pads=[1, 2, 1, 0], count_include_pad=0),
         helper.make_node("MaxPool", ["x"], ["max"], kernel_shape=[2, 3], dilations=[3, 1], ceil_mode=1,
                          strides=[2, 2]),
         helper.make_node("Unsqueeze", ["x", "depth_axis"], ["x3"]),
         helper.make_node("MaxPool", ["x3"], ["max3"], kernel_shape=[1, 2, 2], strides=[1, 2, 2])],
        "pools",
        [helper.make_tensor_value_info("x", f, [1, 3, 9, 10])],
        [helper.make_tensor_value_info(n, f, None) for n in ("avg", "max", "max3")],
        [helper.make_tensor("depth_axis", TensorProto.INT64, [1], [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    path = tmp_path / "pools.onnx"
    onnx.save(model, path)
    return str(path)


@pytest.mark.parametrize("target", ["torch", "keras", "tflite"])
def test_pools_the_target_lacks_run_as_window_taps(tmp_path, target):
    pytest.importorskip("torch" if target == "torch" else "keras")
    src = _pools(tmp_path)
    dest = tb.save(tb.load(src), tmp_path / {"torch": "p_torch", "keras": "p_keras", "tflite": "p.tflite"}[target],
                   to=target)
    x = np.random.default_rng(0).standard_normal((1, 3, 9, 10)).astype(np.float32)
    report = tb.verify(src, dest, inputs={"x": x})
    assert report.ok and len(report.outputs) == 3, report.summary()


@pytest.mark.parametrize("target", ["torch", "keras", "tflite", "flax"])
def test_a_ceil_mode_max_pool_over_open_sizes(tmp_path, target):
    """MTCNN's PNet slides over images of any size with MaxPool2d(2, 2, ceil_mode=True): the written pool keeps
    the last, partial window on odd sizes (onnxruntime as truth at several sizes; a stride-3 pool of kernel 2
    whose last window could start in the padding is refused for the targets without ceil_mode)."""
    from tests.ops.onnx_models import DEST, LIBRARY, save_model

    pytest.importorskip(LIBRARY[target])
    f = TensorProto.FLOAT
    src = save_model(tmp_path / "pnet_pool.onnx",
                     [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1,
                                       pads=[0, 1, 0, 0])],
                     [helper.make_tensor_value_info("x", f, [1, 3, "h", "w"])],
                     [helper.make_tensor_value_info("y", f, [1, 3, "oh", "ow"])])
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    rng = np.random.default_rng(0)
    for size in ((7, 9), (8, 10), (5, 12)):
        x = rng.standard_normal((1, 3, *size)).astype(np.float32)
        report = tb.verify(src, dest, inputs={"x": x})
        assert report.ok, report.summary()
    wide = save_model(tmp_path / "wide.onnx", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                                                                strides=[3, 3], ceil_mode=1)],
                      [helper.make_tensor_value_info("x", f, [1, 3, "h", "w"])],
                      [helper.make_tensor_value_info("y", f, [1, 3, "oh", "ow"])])
    if target != "torch":
        with pytest.raises(Exception, match="ceil_mode"):
            tb.save(tb.load(wide), tmp_path / f"wide_{DEST[target]}", to=target)
