"""Loops of constant length unrolled for targets without loops: an ONNX Loop to PyTorch code, against
onnxruntime running the loop itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb

pytest.importorskip("torch")


def _loop_model(trips: int) -> onnx.ModelProto:
    """x carried through `trips` iterations of x * 0.5 + tanh(x) + i, each iteration's x also a scan output."""
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
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "keep", "x"], ["x_final", "ys"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("x_final", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [trips, 2, 3])],
        [helper.make_tensor("trips", TensorProto.INT64, [], [trips]), helper.make_tensor("keep", TensorProto.BOOL, [],
                                                                                          [True])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_loop_of_constant_length_reaches_pytorch_code_unrolled(tmp_path):
    src = tmp_path / "loop.onnx"
    onnx.save(_loop_model(4), src)
    dest = tb.save(tb.load(src), tmp_path / "loop_torch", to="torch")  # refused before: no rule for Loop
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    report = tb.verify(src, dest, inputs={"x": x})
    assert report.ok and [o.shape for o in report.outputs] == [[2, 3], [4, 2, 3]], report.summary()
