"""TFLite's fused sequence LSTM (tests/tf/data/keras2_lstm.tflite, written by TensorFlow's converter from a
tf.keras LSTM and Bidirectional LSTM): read as IR LSTMs with the kernel's cell clip, its variable-tensor states
as explicit state, so the IR threaded call by call computes what LiteRT computes keeping them inside."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main
from tensorbridge.ir.state import initial_state
from tensorbridge.reference.interpreter import run

pytest.importorskip("ai_edge_litert")
SOURCE = Path(__file__).parent / "data" / "keras2_lstm.tflite"


def _frames():
    rng = np.random.default_rng(0)
    return [np.abs(rng.standard_normal((1, 16, 3))).astype(np.float32) + 0.5 for _ in range(3)]


def _threaded_like_litert(path, graph, frames):
    """(outputs, states) of the IR over `frames`, its state threaded from call to call, each call's output checked
    against LiteRT's, which keeps the state inside."""
    from ai_edge_litert.interpreter import Interpreter

    litert = Interpreter(model_path=str(path))
    litert.allocate_tensors()
    (x_in,), (y_out,) = litert.get_input_details(), litert.get_output_details()
    state, outputs, states = initial_state(graph.metadata), [], []
    for frame in frames:
        litert.set_tensor(x_in["index"], frame)
        litert.invoke()
        got = run(graph, {graph.inputs[0].name: frame, **state})
        state = {s["input"]: got[s["output"]] for s in graph.metadata["state"]}
        np.testing.assert_allclose(got[graph.outputs[0].name], litert.get_tensor(y_out["index"]), rtol=1e-5,
                                   atol=1e-6)
        outputs.append(got[graph.outputs[0].name])
        states.append(state)
    return outputs, states


def test_fused_lstm_threads_its_state_like_litert():
    graph = tb.load(SOURCE)
    assert graph.op_histogram()["LSTM"] == 3
    lstm = next(n for n in graph.nodes if n.op == "LSTM")
    assert lstm.attrs["cell_clip"] == 10.0
    assert [v.name for v in graph.inputs][1:3] == ["tfl.unidirectional_sequence_lstm_hidden",
                                                   "tfl.unidirectional_sequence_lstm_cell"]
    outputs, states = _threaded_like_litert(SOURCE, graph, _frames())
    cells = [state["tfl.unidirectional_sequence_lstm_cell"] for state in states]
    assert not np.allclose(outputs[0], outputs[1])  # the state changes what a call computes
    assert np.abs(cells[-1]).max() == pytest.approx(10.0)  # the cell state reached the clip


@pytest.mark.parametrize("target,suffix", [("onnx", ".onnx"), ("torch", ".py")])
def test_fused_lstm_converts_with_its_state_and_clip(tmp_path, target, suffix, capsys):
    dst = tmp_path / f"lstm_{target}{suffix}"
    assert main(["convert", str(SOURCE), "-o", str(dst), "--to", target]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "(call 2)" in out


def _sequence_rnn(path: Path, activation: int) -> None:
    """One UNIDIRECTIONAL_SEQUENCE_RNN (batch-major [1, 5, 3] -> [1, 5, 4]) with its hidden state a variable
    tensor, as TensorFlow's converter wrote Keras SimpleRNN layers."""
    from tensorbridge.formats.tflite_flatbuffer import FlatbufferWriter

    rng = np.random.default_rng(1)
    fb = FlatbufferWriter()
    x = fb.tensor("x", (1, 5, 3), "float32")
    weights = [fb.tensor(name, shape, "float32", (rng.standard_normal(shape) * 0.6).astype(np.float32))
               for name, shape in (("w", (4, 3)), ("r", (4, 4)), ("b", (4,)))]
    hidden = fb.tensor("hidden", (1, 4), "float32", variable=True)
    y = fb.tensor("y", (1, 5, 4), "float32")
    fb.op("UNIDIRECTIONAL_SEQUENCE_RNN", [x, *weights, hidden], [y],
          ("SequenceRNNOptions", {"TimeMajor": False, "FusedActivationFunction": activation}))
    path.write_bytes(fb.finish([x], [y]))


@pytest.mark.parametrize("activation", [1, 4])  # relu, tanh
def test_fused_simple_rnn_threads_its_state_like_litert(tmp_path, activation):
    source = tmp_path / "rnn.tflite"
    _sequence_rnn(source, activation)
    graph = tb.load(source)
    assert graph.op_histogram()["RNN"] == 1
    outputs, _ = _threaded_like_litert(source, graph, [frame[:, :5] - 1.0 for frame in _frames()])
    assert not np.allclose(outputs[0], outputs[1]) and np.ptp(outputs[0]) > 0
