"""Small ONNX models for the decomposition tests: saved from their nodes, converted to a code target, verified
against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb

#: where each code target writes, and the library it needs
DEST = {"torch": "m_torch", "keras": "m_keras", "flax": "m_flax", "tflite": "m.tflite"}
LIBRARY = {"torch": "torch", "keras": "keras", "flax": "flax", "tflite": "keras"}


def save_model(path: Path, nodes, inputs, outputs, weights: dict | None = None, opset: int = 21) -> str:
    """The graph of `nodes` (constants `weights`, name -> array) as an ONNX file at `path` (IR version 10)."""
    graph = helper.make_graph(nodes, Path(path).stem, inputs, outputs,
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in (weights or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.save(model, path)
    return str(path)


def convert_and_verify(src: str, tmp_path: Path, target: str, inputs=None):
    """`src` written for `target` (skipped without its library), and verify's report against onnxruntime."""
    pytest.importorskip(LIBRARY[target])
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    return tb.verify(src, dest, inputs=inputs)


def counted_loop(trips: int | None, gated: bool = False) -> onnx.ModelProto:
    """x carried through `trips` iterations of x * 0.5 + tanh(x) + i, each iteration's x also a scan output;
    `trips` None: a graph input; `gated`: the first condition ("keep", no step where false) a graph input too."""
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
    counted += [helper.make_tensor_value_info("keep", TensorProto.BOOL, [])] if gated else []
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "keep", "x"], ["x_final", "ys"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]), *counted],
        [helper.make_tensor_value_info("x_final", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [trips or "trips", 2, 3])],
        ([] if gated else [helper.make_tensor("keep", TensorProto.BOOL, [], [True])]) +
        ([helper.make_tensor("trips", TensorProto.INT64, [], [trips])] if trips is not None else []))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
