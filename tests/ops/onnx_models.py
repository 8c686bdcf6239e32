"""Small ONNX models for the decomposition tests: saved from their nodes, converted to a code target, verified
against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

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
