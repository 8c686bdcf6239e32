"""A Clip whose lower bound the model computes (openWakeWord's mel spectrogram: at least its maximum less 80 dB)
beside a constant upper one: torch.clamp takes two tensors or two numbers (torch.export refused the mix in that
model: "clamp() received an invalid combination of arguments"), so the code gives two tensors, and an infinite
bound is no bound at all."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tests.ops.onnx_models import save_model


@pytest.mark.parametrize("target", ["torch", "pt2"])
@pytest.mark.parametrize("upper", [np.inf, 0.5])
def test_a_computed_lower_bound_beside_a_constant_upper_one(tmp_path, target, upper):
    pytest.importorskip("torch")
    src = save_model(tmp_path / "floor.onnx",
                     [helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
                      helper.make_node("Sub", ["top", "range"], ["floor"]),
                      helper.make_node("Clip", ["x", "floor", "upper"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n"])],
                     {"range": np.float32(1.0), "upper": np.float32(upper)})
    dest = tb.save(tb.load(src), tmp_path / ("m_torch" if target == "torch" else "m.pt2"), to=target)
    if target == "torch":
        code = (dest / "model.py").read_text()
        assert "max=" not in code if upper == np.inf else "max=0.5" not in code, code  # no number beside a tensor
    report = tb.verify(src, dest, inputs={"x": np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)})
    assert report.ok, report.summary()
