"""An ONNX Loop in PyTorch code, written as a Python while loop, and in `.pt2`, unrolled where its length is
constant (torch.export keeps no loop), against onnxruntime running the loop itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tests.ops.onnx_models import counted_loop

pytest.importorskip("torch")


def test_a_loop_of_constant_length_reaches_pt2_unrolled(tmp_path):
    src = tmp_path / "loop.onnx"
    onnx.save(counted_loop(4), src)
    dest = tb.save(tb.load(src), tmp_path / "loop.pt2")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    report = tb.verify(src, dest, inputs={"x": x})
    assert report.ok and [o.shape for o in report.outputs] == [[2, 3], [4, 2, 3]], report.summary()


def test_pytorch_code_runs_the_loop_any_number_of_times(tmp_path):
    src = tmp_path / "counted.onnx"
    onnx.save(counted_loop(None), src)
    dest = tb.save(tb.load(src), tmp_path / "counted_torch", to="torch")
    assert "while " in (dest / "model.py").read_text()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for trips in (0, 1, 5):  # no iteration: the scan output is empty, as onnxruntime's
        report = tb.verify(src, dest, inputs={"x": x, "trips": np.array(trips)})
        assert report.ok and report.outputs[1].shape == [trips, 2, 3], report.summary()
    exported = tb.save(tb.load(src), tmp_path / "counted.pt2")  # torch.while_loop, its steps in a buffer
    for trips in (0, 1, 5):
        report = tb.verify(src, exported, inputs={"x": x, "trips": np.array(trips)})
        assert report.ok and report.outputs[1].shape == [trips, 2, 3], report.summary()


def test_a_scan_whose_state_is_also_its_step_output_runs_in_onnxruntime(tmp_path):
    """A body value that is both the carried state and the step output (a recurrence's hidden state) is written
    under a name per output: onnxruntime runs a body that repeats an output name wrongly."""
    from tensorbridge.ir.builder import Builder
    from tensorbridge.ir.graph import Graph

    f32 = np.dtype(np.float32)
    graph = Graph("recurrence")
    x = graph.add_input("x", f32, (2, 5, 3))
    body = graph.subgraph("step")
    state, step = body.add_input("state", f32, (2, 3)), body.add_input("step", f32, (2, 3))
    inner = Builder(body, "step")
    hidden = inner.op("Tanh", inner.op("Add", inner.op("Mul", state, inner.const(np.float32(0.5))), step))
    body.outputs = [hidden, hidden]
    outer = Builder(graph, "scan")
    final, steps = outer.emit("Scan", [outer.const(np.zeros((2, 3), np.float32)), x],
                              {"body": body, "num_scan_inputs": 1, "scan_input_axes": [1], "scan_output_axes": [1]},
                              outputs=2)
    graph.outputs = [final, steps]
    source = tb.save(graph, tmp_path / "recurrence.tbir")
    report = tb.verify(source, tb.save(graph, tmp_path / "recurrence.onnx"),
                       inputs={"x": np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)})
    assert report.ok, report.summary()
