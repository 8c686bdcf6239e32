"""Verification picks the sizes of open dims itself; where the source's runtime refuses the smallest its shape
inference allows (a detector's upsampled coarse features concatenated with finer ones), it takes the next it runs."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge.errors import ModelError


def test_the_sizes_drawn_are_ones_the_source_runs(tmp_path):
    nodes = [helper.make_node("MaxPool", ["x"], ["coarse"], kernel_shape=[1, 1], strides=[32, 32]),
             helper.make_node("Resize", ["coarse", "", "scales"], ["up"], mode="nearest"),
             helper.make_node("MaxPool", ["x"], ["fine"], kernel_shape=[1, 1], strides=[16, 16]),
             helper.make_node("Concat", ["up", "fine"], ["y"], axis=1)]
    graph = helper.make_graph(nodes, "pyramid", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                               [1, 2, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])])
    src = tmp_path / "pyramid.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src)
    report = tb.verify(src, tb.save(tb.load(src), tmp_path / "pyramid.tbir"))
    assert report.ok and report.inputs["x"]["shape"] == [1, 2, 32, 32], report.summary()  # 8 and 16 refused


def test_a_source_refusing_every_size_reports_its_first_refusal(tmp_path):
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "fixed",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("shape", TensorProto.INT64, [2], [3, 5])])
    src = tmp_path / "fixed.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src)
    with pytest.raises(ModelError, match=r"x \[1, 8\]"):
        tb.verify(src, src)


@pytest.mark.parametrize("least", [13, 672])
def test_the_sizes_drawn_are_ones_the_target_runs_too(tmp_path, monkeypatch, least):
    """An exported program may ask more of an open size than the source does (as .pt2, PP-OCRv6's recogniser a
    width of at least 13, openWakeWord's mel spectrogram 672 samples): the search goes on to a size both run."""
    from tensorbridge.verification import harness
    from tensorbridge.verification.runners.onnxruntime import OnnxRuntimeRunner

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "any",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    src, dst = tmp_path / "any.onnx", tmp_path / "wide.onnx"
    for path in (src, dst):
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)

    class WideOnly(OnnxRuntimeRunner):
        def run(self, feeds):
            if feeds["x"].shape[1] < least:
                raise RuntimeError(f"Expected input at x.shape[1] to be >= {least}, but got {feeds['x'].shape[1]}")
            return super().run(feeds)

    original = harness.runner_for
    monkeypatch.setattr(harness, "runner_for", lambda model, *a, **k: WideOnly(model) if model == dst
                        else original(model, *a, **k))
    report = harness.verify(src, dst)
    assert report.ok and report.inputs["x"]["shape"][1] >= least, report.summary()
