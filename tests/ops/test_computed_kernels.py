"""Convolutions whose kernel the model computes (CondConv's per-sample mixture of expert kernels, as timm's
EfficientNet-CondConv writes it): no layer weight holds them, so each code target writes its functional
convolution; checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.ops.onnx_models import convert_and_verify, save_model


def _routed_convolutions(tmp_path) -> str:
    """x [1, 4, 9, 9]: routing weights sigmoid(mean(x) W) mix 3 expert kernels of a 3x3 convolution (4 -> 6,
    padded) and of a depthwise 3x3 one (stride 2), each bias added."""
    rng = np.random.default_rng(0)

    def mixture(name, experts_shape):
        experts = (rng.standard_normal(experts_shape) * 0.4).astype(np.float32)
        nodes = [helper.make_node("MatMul", ["routing", f"{name}_experts"], [f"{name}_flat"]),
                 helper.make_node("Reshape", [f"{name}_flat", f"{name}_shape"], [f"{name}_kernel"])]
        weights = {f"{name}_experts": experts.reshape(3, -1),
                   f"{name}_shape": np.array(experts_shape[1:], np.int64)}
        return nodes, weights

    full, full_w = mixture("full", (3, 6, 4, 3, 3))
    depthwise, depthwise_w = mixture("depthwise", (3, 6, 1, 3, 3))
    nodes = [helper.make_node("ReduceMean", ["x", "spatial"], ["pooled"], keepdims=0),
             helper.make_node("MatMul", ["pooled", "route"], ["logits"]),
             helper.make_node("Sigmoid", ["logits"], ["routing"]), *full, *depthwise,
             helper.make_node("Conv", ["x", "full_kernel", "full_bias"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["y", "depthwise_kernel", "depthwise_bias"], ["z"], group=6, strides=[2, 2])]
    weights = {"spatial": np.array([2, 3], np.int64), "route": rng.standard_normal((4, 3)).astype(np.float32),
               "full_bias": rng.standard_normal(6).astype(np.float32),
               "depthwise_bias": rng.standard_normal(6).astype(np.float32), **full_w, **depthwise_w}
    return save_model(tmp_path / "routed.onnx", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
                      [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 6, 4, 4])], weights)


@pytest.mark.parametrize("target", ["torch", "keras", "flax", "tflite"])
def test_computed_kernels_convolve_in_every_code_target(tmp_path, target):
    report = convert_and_verify(_routed_convolutions(tmp_path), tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()
