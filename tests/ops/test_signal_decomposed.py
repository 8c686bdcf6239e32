"""Audio front ends as ONNX writes them (STFT with a Hann window, power, mel filter bank, log; inverse and
padded DFTs of complex signals along an inner axis) in targets that have no Fourier op: the DFT as one
MatMul with its matrix, the STFT as gathered frames, checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb

DEST = {"torch": "m_torch", "keras": "m_keras", "flax": "m_flax", "tflite": "m.tflite"}


def _model(tmp_path, name, nodes, inputs, outputs, weights) -> str:
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(a, n) for n, a in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return str(path)


def _log_mel(tmp_path) -> str:
    frames, mels = 1 + (800 - 128) // 64, 16
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("HannWindow", ["win_len"], ["window"]),
             helper.make_node("STFT", ["audio", "step", "window"], ["spec"]),
             helper.make_node("Mul", ["spec", "spec"], ["sq"]),
             helper.make_node("ReduceSum", ["sq", "last"], ["power"], keepdims=0),
             helper.make_node("MelWeightMatrix", ["mels", "win_len", "rate", "low", "high"], ["filters"]),
             helper.make_node("MatMul", ["power", "filters"], ["mel"]),
             helper.make_node("Add", ["mel", "eps"], ["mel_eps"]),
             helper.make_node("Log", ["mel_eps"], ["log_mel"])]
    weights = {"win_len": i64(128), "step": i64(64), "last": i64([-1]), "mels": i64(mels), "rate": i64(16000),
               "low": np.array(20.0, np.float32), "high": np.array(8000.0, np.float32),
               "eps": np.array(1e-6, np.float32)}
    return _model(tmp_path, "log_mel", nodes, [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [2, 800, 1])],
                  [helper.make_tensor_value_info("log_mel", TensorProto.FLOAT, [2, frames, mels])], weights)


def _inverse_padded_dft(tmp_path) -> str:
    """A complex [batch, 6, channels, 2] signal: the inverse DFT along axis 1, padded to 8."""
    nodes = [helper.make_node("DFT", ["x", "length", "axis"], ["y"], inverse=1)]
    weights = {"length": np.array(8, np.int64), "axis": np.array(1, np.int64)}
    return _model(tmp_path, "idft", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 3, 2])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 3, 2])], weights)


@pytest.mark.parametrize("target", ["torch", "keras", "flax", "tflite"])
@pytest.mark.parametrize("model", [_log_mel, _inverse_padded_dft], ids=["log_mel", "inverse_dft"])
def test_fourier_models_run_in_targets_without_a_fourier_op(tmp_path, target, model):
    pytest.importorskip({"torch": "torch", "flax": "flax"}.get(target, "keras"))
    src = model(tmp_path)
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    report = tb.verify(src, dest)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()
