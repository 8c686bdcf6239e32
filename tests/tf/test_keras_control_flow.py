"""If, Loop and Scan in Keras code and TFLite (through Keras and TensorFlow's converter): each becomes a layer
class of the generated file running `ops.cond` / `ops.while_loop` / `ops.scan`, with the layers and weights of
its bodies as the class's attributes; checked against onnxruntime on inputs that take each branch and run the
loops different numbers of times."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tests.ops.onnx_models import DEST, convert_and_verify, counted_loop, save_model

pytest.importorskip("keras")

F = TensorProto.FLOAT
info = helper.make_tensor_value_info
RNG = np.random.default_rng(0)


def _branch(name: str, nodes, output: str, shape) -> helper.GraphProto:
    return helper.make_graph(nodes, name, [], [info(output, F, shape)])


def _gated_model(tmp_path) -> str:
    """y = relu(x @ w1 + b) where sum(x) > 0, else tanh(x @ w2): each branch reads x and a weight of its own."""
    then = _branch("then", [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
                            helper.make_node("Add", ["m1", "b"], ["a1"]),
                            helper.make_node("Relu", ["a1"], ["y_then"])], "y_then", [2, 4])
    other = _branch("else", [helper.make_node("MatMul", ["x", "w2"], ["m2"]),
                             helper.make_node("Tanh", ["m2"], ["y_else"])], "y_else", [2, 4])
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["y"], then_branch=then, else_branch=other)]
    weights = {"w1": RNG.standard_normal((8, 4)).astype(np.float32),
               "w2": RNG.standard_normal((8, 4)).astype(np.float32),
               "b": RNG.standard_normal(4).astype(np.float32), "zero": np.array(0, np.float32)}
    return save_model(tmp_path / "gated.onnx", nodes, [info("x", F, [2, 8])], [info("y", F, [2, 4])], weights)


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_an_if_chooses_its_branch_at_run_time(tmp_path, target):
    src = _gated_model(tmp_path)
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    for sign in (1, -1):  # sum(x) > 0, then < 0: each branch runs
        feeds = {"x": sign * (np.abs(x) + 0.1)}
        report = convert_and_verify(src, tmp_path / f"run{sign}", target, inputs=feeds)
        assert report.ok, report.summary()
    if target == "keras":
        code = (tmp_path / "run1" / DEST[target] / "model.py").read_text()
        assert "(layers.Layer)" in code and "ops.cond(" in code, code


def _loop_inputs(carried_shape) -> list:
    """A Loop body's inputs: the iteration, the condition, one carried value."""
    return [info("i", TensorProto.INT64, []), info("cond_in", TensorProto.BOOL, []), info("h_in", F, carried_shape)]


def _recurrent_loop(tmp_path, counted: bool) -> str:
    """h <- tanh(h @ w + x), `trips` times (an input); or h <- 1.5 h + x while max(h) < 5 (a condition the body
    computes, met sooner or later as x > 0)."""
    if counted:
        body_nodes = [helper.make_node("MatMul", ["h_in", "w"], ["hw"]), helper.make_node("Add", ["hw", "x"], ["pre"]),
                      helper.make_node("Tanh", ["pre"], ["h_out"]),
                      helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    else:
        body_nodes = [helper.make_node("Mul", ["h_in", "growth"], ["grown"]),
                      helper.make_node("Add", ["grown", "x"], ["h_out"]),
                      helper.make_node("ReduceMax", ["h_out"], ["peak"], keepdims=0),
                      helper.make_node("Less", ["peak", "limit"], ["cond_out"])]
    body = helper.make_graph(body_nodes, "body", _loop_inputs([2, 4]),
                             [info("cond_out", TensorProto.BOOL, []), info("h_out", F, [2, 4])])
    loop_inputs = ["trips" if counted else "", "keep", "h0"]
    inputs = [info("h0", F, [2, 4]), info("x", F, [2, 4])]
    inputs += [info("trips", TensorProto.INT64, [1])] if counted else []
    weights = {"w": (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32), "keep": np.array(True),
               "growth": np.array(1.5, np.float32), "limit": np.array(5.0, np.float32)}
    return save_model(tmp_path / f"loop_{counted}.onnx", [helper.make_node("Loop", loop_inputs, ["h"], body=body)],
                      inputs, [info("h", F, [2, 4])], weights)


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_a_loop_runs_as_many_times_as_its_inputs_say(tmp_path, target):
    src = _recurrent_loop(tmp_path, counted=True)
    feeds = {"h0": RNG.standard_normal((2, 4)).astype(np.float32), "x": RNG.standard_normal((2, 4)).astype(np.float32)}
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    for trips in (0, 1, 5):
        report = tb.verify(src, dest, inputs={**feeds, "trips": np.array([trips])})
        assert report.ok, report.summary()


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_a_loop_ends_when_its_body_says(tmp_path, target):
    src = _recurrent_loop(tmp_path, counted=False)
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        feeds = {"h0": np.abs(rng.standard_normal((2, 4))).astype(np.float32) * 0.1,
                 "x": np.abs(rng.standard_normal((2, 4))).astype(np.float32) * seed + 0.05}  # 1 or more steps
        report = convert_and_verify(src, tmp_path / f"run{seed}", target, inputs=feeds)
        assert report.ok, report.summary()


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_a_loop_of_computed_length_stacks_its_steps(tmp_path, target):
    src = tmp_path / "counted.onnx"
    onnx.save(counted_loop(None), src)  # x carried through `trips` iterations (an input), each x also stacked
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for trips in (0, 1, 5) if target == "keras" else (1, 5):  # LiteRT allocates no empty tensor (0 steps)
        report = tb.verify(src, dest, inputs={"x": x, "trips": np.array(trips)})
        assert report.ok and report.outputs[1].shape == [trips, 2, 3], report.summary()


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_a_loop_whose_first_condition_is_false_takes_no_step(tmp_path, target):
    """A Loop's first condition is an input the body passes on: it runs its trip count, or no step at all."""
    src = tmp_path / "gated.onnx"
    onnx.save(counted_loop(None, gated=True), src)
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for keep, trips in ((True, 4), (False, 4)) if target == "keras" else ((True, 4),):  # LiteRT: no empty tensors
        report = tb.verify(src, dest, inputs={"x": x, "trips": np.array(trips), "keep": np.array(keep)})
        assert report.ok and report.outputs[1].shape == [trips if keep else 0, 2, 3], report.summary()


def _scan_model(tmp_path) -> str:
    """A recurrence over time: h <- tanh(h @ u + x_t @ w), each step's h stacked ([time, batch, hidden])."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "u"], ["hu"]), helper.make_node("MatMul", ["x_t", "w"], ["xw"]),
         helper.make_node("Add", ["hu", "xw"], ["pre"]), helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["h_step"])],
        "step", [info("h_in", F, [2, 4]), info("x_t", F, [2, 3])],
        [info("h_out", F, [2, 4]), info("h_step", F, [2, 4])])
    weights = {"u": (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32),
               "w": RNG.standard_normal((3, 4)).astype(np.float32)}
    nodes = [helper.make_node("Scan", ["h0", "xs"], ["h", "hs"], body=body, num_scan_inputs=1)]
    return save_model(tmp_path / "scan.onnx", nodes, [info("h0", F, [2, 4]), info("xs", F, [6, 2, 3])],
                      [info("h", F, [2, 4]), info("hs", F, [6, 2, 4])], weights)


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_a_scan_runs_its_step_over_time(tmp_path, target):
    report = convert_and_verify(_scan_model(tmp_path), tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def test_a_loop_whose_carried_shape_changes_is_refused_with_the_reason(tmp_path):
    body = helper.make_graph([helper.make_node("Concat", ["h_in", "h_in"], ["h_out"], axis=0),
                              helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                             _loop_inputs([None, 4]),
                             [info("cond_out", TensorProto.BOOL, []), info("h_out", F, [None, 4])])
    src = save_model(tmp_path / "growing.onnx", [helper.make_node("Loop", ["trips", "keep", "h0"], ["h"], body=body)],
                     [info("h0", F, [2, 4]), info("trips", TensorProto.INT64, [1])], [info("h", F, [None, 4])],
                     {"keep": np.array(True)})
    with pytest.raises(UnsupportedError, match="changing shape"):
        tb.save(tb.load(src), tmp_path / "m_keras", to="keras")
    assert not (tmp_path / "m_keras").exists()
