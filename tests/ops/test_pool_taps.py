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
