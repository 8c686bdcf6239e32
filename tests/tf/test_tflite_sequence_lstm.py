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


def _bidirectional(path: Path, kind: str, time_major: bool, merged: bool) -> None:
    """One BIDIRECTIONAL_SEQUENCE_LSTM or _RNN over x [batch 1, time 5, 3 features] (time-major: [5, 1, 3]) with
    hidden size 4, peepholes in the LSTM's backward direction only, and each direction's state variable tensors."""
    from tensorbridge.formats.tflite_flatbuffer import FlatbufferWriter

    rng = np.random.default_rng(2)
    fb = FlatbufferWriter()
    sequence = (5, 1) if time_major else (1, 5)

    def weight(name, shape):
        return fb.tensor(name, shape, "float32", (rng.standard_normal(shape) * 0.5).astype(np.float32))

    x = fb.tensor("x", (*sequence, 3), "float32")
    states = {name: fb.tensor(name, (1, 4), "float32", variable=True)
              for name in (("fw_h", "fw_c", "bw_h", "bw_c") if kind == "LSTM" else ("fw_h", "bw_h"))}
    if kind == "LSTM":
        def direction(tag, peepholes):
            return ([weight(f"{tag}_w{g}", (4, 3)) for g in "ifco"] + [weight(f"{tag}_r{g}", (4, 4)) for g in "ifco"]
                    + [weight(f"{tag}_p{g}", (4,)) if peepholes else -1 for g in "ifo"]
                    + [weight(f"{tag}_b{g}", (4,)) for g in "ifco"] + [-1, -1])
        inputs = [x, *direction("fw", False), *direction("bw", True), *states.values()] + [-1] * 9
        options = ("BidirectionalSequenceLSTMOptions", {"FusedActivationFunction": 4, "CellClip": 3.0,
                                                        "MergeOutputs": merged, "TimeMajor": time_major})
    else:
        def direction(tag):
            return [weight(f"{tag}_w", (4, 3)), weight(f"{tag}_r", (4, 4)), weight(f"{tag}_b", (4,))]
        inputs = [x, *direction("fw"), states["fw_h"], *direction("bw"), states["bw_h"], -1, -1, -1]
        options = ("BidirectionalSequenceRNNOptions", {"FusedActivationFunction": 4, "MergeOutputs": merged,
                                                       "TimeMajor": time_major})
    outputs = [fb.tensor("y", (*sequence, 8), "float32")] if merged else \
        [fb.tensor(f"y_{tag}", (*sequence, 4), "float32") for tag in ("fw", "bw")]
    fb.op(f"BIDIRECTIONAL_SEQUENCE_{kind}", inputs, outputs, options)
    path.write_bytes(fb.finish([x], outputs))


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
@pytest.mark.parametrize("time_major,merged", [(False, True), (True, False)])
def test_bidirectional_kernels_thread_their_states_like_litert(tmp_path, kind, time_major, merged):
    from ai_edge_litert.interpreter import Interpreter

    source = tmp_path / "bidirectional.tflite"
    _bidirectional(source, kind, time_major, merged)
    graph = tb.load(source)
    assert [n.attrs["direction"] for n in graph.nodes if n.op == kind] == ["bidirectional"]
    litert = Interpreter(model_path=str(source))
    litert.allocate_tensors()
    (x_in,), outs = litert.get_input_details(), litert.get_output_details()
    rng, state = np.random.default_rng(3), initial_state(graph.metadata)
    for call in range(3):
        frame = rng.standard_normal((5, 1, 3) if time_major else (1, 5, 3)).astype(np.float32) * 2
        litert.set_tensor(x_in["index"], frame)
        litert.invoke()
        got = run(graph, {graph.inputs[0].name: frame, **state})
        state = {s["input"]: got[s["output"]] for s in graph.metadata["state"]}
        for value, out in zip(graph.outputs[:len(outs)], outs):
            np.testing.assert_allclose(got[value.name], litert.get_tensor(out["index"]), rtol=1e-5, atol=1e-6,
                                       err_msg=f"call {call}, {value.name}")
    assert len(state) == (4 if kind == "LSTM" else 2) and all(np.ptp(v) > 0 for v in state.values())
