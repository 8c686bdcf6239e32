"""Shared fixtures: small models built with onnx.helper, the `light` models of the onnx wheel."""

from __future__ import annotations

import logging
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

logging.disable(logging.WARNING)
os.environ["TENSORBRIDGE_CHECK_PASSES"] = "1"  # the IR checker runs after every pass of every backend
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
LIGHT_MODELS = sorted(f for f in os.listdir(LIGHT_DIR) if f.endswith(".onnx"))


def make_model(nodes, inputs, outputs, initializers=(), opset=21, name="g") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


@pytest.fixture
def small_cnn() -> onnx.ModelProto:
    """Conv -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax, random weights, dynamic batch."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "conv.w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "conv.b")
    fw = numpy_helper.from_array(rng.standard_normal((8 * 4 * 4, 10)).astype(np.float32), "fc.w")
    fb = numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "fc.b")
    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
    ]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                      [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])], [w, b, fw, fb])


@pytest.fixture
def small_cnn_path(small_cnn, tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(small_cnn, path)
    return path
