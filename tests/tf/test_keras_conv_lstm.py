"""Keras's convolutional LSTMs (ConvLSTM1D/2D/3D), read unrolled over their time steps, against Keras; the
keras.io next-frame model converts to every target and verifies."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.reference.interpreter import run

keras = pytest.importorskip("keras")


def _next_frame_model():
    """keras.io's next-frame prediction: ConvLSTM2D, BatchNormalization, ConvLSTM2D, Conv3D (logits: no
    sigmoid, so the comparison sees the values, not a squashed constant)."""
    keras.utils.set_random_seed(0)
    x = keras.Input((4, 8, 8, 1))
    h = keras.layers.ConvLSTM2D(6, (3, 3), padding="same", return_sequences=True, activation="relu")(x)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.ConvLSTM2D(4, (1, 1), padding="same", return_sequences=True, activation="relu")(h)
    return keras.Model(x, keras.layers.Conv3D(1, (3, 3, 3), padding="same")(h)), (4, 8, 8, 1)


def _backwards_with_state():
    keras.utils.set_random_seed(1)
    x = keras.Input((5, 9, 3))
    y, h, c = keras.layers.ConvLSTM1D(4, 3, go_backwards=True, return_sequences=True, return_state=True)(x)
    return keras.Model(x, [y, h, c]), (5, 9, 3)


def _strided_last_step():
    keras.utils.set_random_seed(2)
    x = keras.Input((3, 9, 9, 2))
    y = keras.layers.ConvLSTM2D(5, (3, 3), strides=2, padding="valid", use_bias=False)(x)
    return keras.Model(x, y), (3, 9, 9, 2)


@pytest.mark.parametrize("make", [_next_frame_model, _backwards_with_state, _strided_last_step],
                         ids=["next_frame", "backwards_state", "strided_last_step"])
def test_conv_lstm_reads_as_keras_computes(make, tmp_path):
    model, shape = make()
    path = tmp_path / "m.keras"
    model.save(path)
    graph = tb.load(path)
    xs = [np.random.default_rng(seed).standard_normal((2, *shape)).astype(np.float32) for seed in (0, 1)]
    outs = [run(graph, {graph.inputs[0].name: x}) for x in xs]
    expected = [model(x) for x in xs]
    for got, want in zip(outs, expected):
        want = want if isinstance(want, (list, tuple)) else [want]
        for v, w in zip(graph.outputs, want):
            np.testing.assert_allclose(got[v.name], np.asarray(w), rtol=1e-5, atol=1e-5)
    first = graph.outputs[0].name
    assert not np.allclose(outs[0][first], outs[1][first])  # the output follows the input


@pytest.mark.parametrize("to,suffix", [("onnx", ".onnx"), ("torch", "_torch"), ("keras", "_keras"),
                                       ("tflite", ".tflite")])
def test_next_frame_model_converts_and_verifies(to, suffix, tmp_path):
    model, _ = _next_frame_model()
    path = tmp_path / "m.keras"
    model.save(path)
    assert tb.convert(path, tmp_path / f"out{suffix}", to=to, verify=True).status == "PASS"
