"""XLA CPU's YNNPACK library fusion (jax.jit's default in jaxlib 0.10) computes some convolution blocks wrongly:
MediaPipe's BlazeFace block (a channel-padded value plus a depthwise-then-pointwise convolution of it, max-pooled)
comes out with its first channels wrong under jax.jit, right op by op and with the fusion off. Verification of
generated Flax code names the compiler and the way around it instead of failing the conversion."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.verification.runners.jax import LIBRARY_FUSION_FAULT, has_library_fusion

pytest.importorskip("flax")


def _blaze_block(path):
    """x (NHWC) -> relu -> (pad 4 channels) + (3x3 depthwise, 1x1 convolution to 28 channels) -> 2x2 max pool."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
               for name, shape in (("dw", (24, 1, 3, 3)), ("pw", (28, 24, 1, 1)))]
    weights.append(numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 4, 0, 0], np.int64), "pads"))
    nodes = [helper.make_node("Transpose", ["x"], ["nchw"], perm=[0, 3, 1, 2]),
             helper.make_node("Relu", ["nchw"], ["a"]),
             helper.make_node("Pad", ["a", "pads"], ["padded"]),
             helper.make_node("Conv", ["a", "dw"], ["d"], group=24, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["d", "pw"], ["c"]),
             helper.make_node("Add", ["padded", "c"], ["s"]),
             helper.make_node("MaxPool", ["s"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Transpose", ["pooled"], ["y"], perm=[0, 2, 3, 1])]
    graph = helper.make_graph(nodes, "blaze", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 64, 24])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 32, 28])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def test_a_fusion_fault_is_named_not_blamed_on_the_conversion(tmp_path):
    source = _blaze_block(tmp_path / "blaze.onnx")
    folder = tb.save(tb.load(source), tmp_path / "flax", to="flax")
    report = tb.verify(source, folder, trust_code=True)
    if report.status == "PASS":  # a jaxlib whose fusion computes this block right
        return
    assert has_library_fusion()
    assert report.status == "INCONCLUSIVE", report.summary()
    fault = LIBRARY_FUSION_FAULT.split("{")[0]
    assert all(o.runtime_differs.startswith(fault) for o in report.outputs if not o.ok), report.summary()
