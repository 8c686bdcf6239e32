"""An ONNX Loop in PyTorch code, written as a Python while loop, and in `.pt2`, unrolled where its length is
constant (torch.export keeps no loop), against onnxruntime running the loop itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError

pytest.importorskip("torch")


def _loop_model(trips: int | None) -> onnx.ModelProto:
    """x carried through `trips` iterations of x * 0.5 + tanh(x) + i, each iteration's x also a scan output;
    `trips` None: a graph input."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x_in", "half"], ["scaled"]),
         helper.make_node("Tanh", ["x_in"], ["t"]),
         helper.make_node("Add", ["scaled", "t"], ["s"]),
         helper.make_node("Add", ["s", "i_f"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["x_out"], ["y"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])])
    counted = [helper.make_tensor_value_info("trips", TensorProto.INT64, [])] if trips is None else []
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "keep", "x"], ["x_final", "ys"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]), *counted],
        [helper.make_tensor_value_info("x_final", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [trips or "trips", 2, 3])],
        [helper.make_tensor("keep", TensorProto.BOOL, [], [True])] +
        ([helper.make_tensor("trips", TensorProto.INT64, [], [trips])] if trips is not None else []))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_loop_of_constant_length_reaches_pt2_unrolled(tmp_path):
    src = tmp_path / "loop.onnx"
    onnx.save(_loop_model(4), src)
    dest = tb.save(tb.load(src), tmp_path / "loop.pt2")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    report = tb.verify(src, dest, inputs={"x": x})
    assert report.ok and [o.shape for o in report.outputs] == [[2, 3], [4, 2, 3]], report.summary()


def test_pytorch_code_runs_the_loop_any_number_of_times(tmp_path):
    src = tmp_path / "counted.onnx"
    onnx.save(_loop_model(None), src)
    dest = tb.save(tb.load(src), tmp_path / "counted_torch", to="torch")
    assert "while " in (dest / "model.py").read_text()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for trips in (0, 1, 5):  # no iteration: the scan output is empty, as onnxruntime's
        report = tb.verify(src, dest, inputs={"x": x, "trips": np.array(trips)})
        assert report.ok and report.outputs[1].shape == [trips, 2, 3], report.summary()
    with pytest.raises(UnsupportedError, match="torch.export keeps no loop"):
        tb.save(tb.load(src), tmp_path / "counted.pt2")
