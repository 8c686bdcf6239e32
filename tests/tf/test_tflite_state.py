"""TFLite resource variables (a streaming model's state) read as explicit state inputs and outputs: the IR
threaded call by call computes what LiteRT computes keeping the state inside, every target carries it, and
verification compares a second call so state written wrong fails."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main
from tensorbridge.ir.state import initial_state
from tensorbridge.reference.interpreter import run

pytest.importorskip("tensorflow")
from tests.models.keras_zoo import streaming_tflite  # noqa: E402


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("state") / "stream.tflite"
    streaming_tflite(path)
    return path


def test_state_is_explicit_and_threads_like_litert(source):
    from ai_edge_litert.interpreter import Interpreter

    graph = tb.load(source)
    assert [(v.name, v.shape) for v in graph.inputs] == [("x", (1, 1, 4)), ("buffer", (1, 3, 4)), ("count", (1, 1))]
    assert [v.name for v in graph.outputs][1:] == ["buffer_next", "count_next"]
    state = initial_state(graph.metadata)
    assert np.all(state["buffer"] == 0) and np.all(state["count"] == 2)
    litert = Interpreter(model_path=str(source))
    litert.allocate_tensors()
    (x_in,), (y_out,) = litert.get_input_details(), litert.get_output_details()
    outputs = []
    for frame in np.random.default_rng(0).standard_normal((4, 1, 1, 4)).astype(np.float32):
        litert.set_tensor(x_in["index"], frame)
        litert.invoke()
        got = run(graph, {"x": frame, **state})
        state = {s["input"]: got[s["output"]] for s in graph.metadata["state"]}
        np.testing.assert_allclose(got[graph.outputs[0].name], litert.get_tensor(y_out["index"]), rtol=1e-5)
        outputs.append(got[graph.outputs[0].name])
    assert not np.allclose(outputs[0], outputs[1])  # the state changes what a call computes


@pytest.mark.parametrize("target,suffix", [("onnx", ".onnx"), ("torch", ".py"), ("tflite", ".tflite"),
                                           ("tbir", ".tbir")])
def test_targets_carry_the_state(source, tmp_path, target, suffix, capsys):
    dst = tmp_path / f"stream_{target}{suffix}"
    assert main(["convert", str(source), "-o", str(dst), "--to", target]) == 0
    out = capsys.readouterr()
    assert "PASS" in out.out and "(call 2)" in out.out
    assert "carried explicitly: buffer, count in, buffer_next, count_next out" in out.out


def test_state_that_does_not_advance_fails_the_second_call(source, tmp_path):
    graph = tb.load(source)
    count_next = graph.outputs[2]
    graph.outputs[2] = next(v for v in graph.inputs if v.name == "count")  # the counter never moves on
    graph.remove_node(count_next.producer)
    dst = tb.save(graph, tmp_path / "frozen.onnx")
    report = tb.verify(source, dst)
    assert [r.ok for r in report.outputs] == [True, False], report.summary()


def test_state_inside_a_loop_is_a_listed_blocker(tmp_path, capsys):
    path = tmp_path / "in_loop.tflite"
    streaming_tflite(path, in_loop=True)
    assert main(["-q", "convert", str(path), "-o", str(tmp_path / "in_loop.onnx")]) == 2
    err = capsys.readouterr().err
    assert "READ_VARIABLE" in err and "ASSIGN_VARIABLE" in err and "inside IF/WHILE" in err
    assert not (tmp_path / "in_loop.onnx").exists()
