"""TFLite IF and WHILE subgraphs import as If and Loop: the ONNX and TFLite conversions take both branches and
every trip count as LiteRT does; targets without control flow list them as blockers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main

pytest.importorskip("tensorflow")
from tests.models.keras_zoo import control_flow_tflite  # noqa: E402


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("control_flow") / "stepper.tflite"
    control_flow_tflite(path)
    return path


def test_if_and_while_to_onnx_match_litert(source, tmp_path):
    graph = tb.load(source)
    assert [n.op for n in graph.nodes if n.op in ("If", "Loop")] == ["If", "Loop"]
    loop = next(n for n in graph.nodes if n.op == "Loop")
    assert any(n.op == "If" for n in loop.attrs["body"].nodes)  # the IF nested in the loop body
    dst = tb.save(graph, tmp_path / "stepper.onnx")
    ops = {n.op_type for n in onnx.load(dst).graph.node}
    assert {"If", "Loop"} <= ops
    x = np.array([[0.5, -1.0, 2.0, 0.1]], np.float32)
    for sign in (1, -1):  # both branches of the IF
        for trips in (0, 1, 4):
            feeds = {"x": sign * x, "n": np.array(trips, np.int32)}
            report = tb.verify(source, dst, inputs=feeds, rtol=1e-5)
            assert report.ok, report.summary()
    assert main(["-q", "verify", str(source), str(dst), "--per-layer"]) == 0


def test_tflite_writes_the_if_nested_in_the_while_back(source, tmp_path):
    dst = tb.save(tb.load(source), tmp_path / "back.tflite")
    x = np.array([[0.5, -1.0, 2.0, 0.1]], np.float32)
    for sign in (1, -1):
        for trips in (0, 4):
            report = tb.verify(source, dst, inputs={"x": sign * x, "n": np.array(trips, np.int32)}, rtol=1e-5)
            assert report.ok, report.summary()


def test_targets_without_control_flow_list_both_ops(source, tmp_path, capsys):
    assert main(["-q", "convert", str(source), "-o", str(tmp_path / "stepper.mlpackage"), "--to", "coreml"]) == 2
    err = capsys.readouterr().err
    assert "If: 2 node(s): 'cond', 'while/cond'" in err and "Loop: 1 node(s): 'while'" in err
    assert not (tmp_path / "stepper.mlpackage").exists()


def test_keras_recurrent_loops_slice_at_the_loop_index(tmp_path):
    from tests.models.keras_zoo import recurrent_tflite

    source = tmp_path / "recurrent.tflite"
    recurrent_tflite(source)
    for dst in (tmp_path / "recurrent.onnx", tmp_path / "recurrent_torch"):
        report = tb.convert(source, dst, verify=True, to="torch" if dst.suffix != ".onnx" else None)
        assert report.ok and report.proven, report.summary()
