"""Audio front ends as ONNX writes them (STFT with a Hann window, power, mel filter bank, log; inverse and
padded DFTs of complex signals along an inner axis) in targets that have no Fourier op: the DFT as one
MatMul with its matrix, the STFT as gathered frames, checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.ops.onnx_models import convert_and_verify, save_model


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
    return save_model(tmp_path / "log_mel.onnx", nodes,
                      [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [2, 800, 1])],
                      [helper.make_tensor_value_info("log_mel", TensorProto.FLOAT, [2, frames, mels])], weights, 20)


def _inverse_padded_dft(tmp_path) -> str:
    """A complex [batch, 6, channels, 2] signal: the inverse DFT along axis 1, padded to 8."""
    nodes = [helper.make_node("DFT", ["x", "length", "axis"], ["y"], inverse=1)]
    weights = {"length": np.array(8, np.int64), "axis": np.array(1, np.int64)}
    return save_model(tmp_path / "idft.onnx", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 3, 2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 3, 2])], weights, 20)


@pytest.mark.parametrize("target", ["torch", "keras", "flax", "tflite"])
@pytest.mark.parametrize("model", [_log_mel, _inverse_padded_dft], ids=["log_mel", "inverse_dft"])
def test_fourier_models_run_in_targets_without_a_fourier_op(tmp_path, target, model):
    report = convert_and_verify(model(tmp_path), tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()
