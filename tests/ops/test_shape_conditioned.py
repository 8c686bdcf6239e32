"""Models exported from scripted PyTorch (Silero VAD's ONNX files) branch on their tensors' sizes: `if
x.shape[2] == 1: x = x.squeeze(2)`, an If whose branches' results differ in rank. With the sizes fixed
(--input-shape) the condition is decided at conversion and the If becomes its branch, for every target; with them
open, PyTorch code calls one branch in a Python conditional and the traced targets name the fix. Reflect pads wider
than the example sizes a backend would pick, and Size of run-time dims, come with them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tests.ops.onnx_models import DEST, LIBRARY, save_model


def _branch_on_frames(tmp_path) -> str:
    """y = unsqueeze(h * size(h) * rank(h), -1), where h is the framed signal squeezed when it has one frame, as
    it is otherwise (Silero's LSTM wrapper: the rank of a branch's result is known only at run time)."""
    squeezed = helper.make_graph([helper.make_node("Squeeze", ["h", "frame_axis"], ["h_one"])], "then", [],
                                 [helper.make_tensor_value_info("h_one", TensorProto.FLOAT, None)])
    kept = helper.make_graph([helper.make_node("Identity", ["h"], ["h_all"])], "else", [],
                             [helper.make_tensor_value_info("h_all", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["padded"], mode="reflect"),
        helper.make_node("Unsqueeze", ["padded", "channel_axis"], ["signal"]),
        helper.make_node("Conv", ["signal", "w"], ["framed"], strides=[4]),
        helper.make_node("Relu", ["framed"], ["h"]),
        helper.make_node("Shape", ["h"], ["h_shape"]),
        helper.make_node("Gather", ["h_shape", "frame_axis"], ["frames"]),
        helper.make_node("Equal", ["frames", "one"], ["single"]),
        helper.make_node("If", ["single"], ["chosen"], then_branch=squeezed, else_branch=kept),
        helper.make_node("Size", ["chosen"], ["count"]),
        helper.make_node("Cast", ["count"], ["count_f"], to=TensorProto.FLOAT),
        helper.make_node("Shape", ["chosen"], ["chosen_shape"]),
        helper.make_node("Size", ["chosen_shape"], ["rank"]),
        helper.make_node("Cast", ["rank"], ["rank_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["chosen", "count_f"], ["scaled"]),
        helper.make_node("Mul", ["scaled", "rank_f"], ["ranked"]),
        helper.make_node("Unsqueeze", ["ranked", "last"], ["y"]),
    ]
    weights = {"pads": np.array([0, 3, 0, 3], np.int64), "channel_axis": np.array([1], np.int64),
               "frame_axis": np.array([2], np.int64), "one": np.array([1], np.int64), "last": np.array([-1], np.int64),
               "w": np.random.default_rng(0).standard_normal((4, 1, 8)).astype(np.float32)}
    return save_model(tmp_path / "frames.onnx", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "samples"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], weights)


def _signal(samples: int) -> dict:
    return {"x": np.random.default_rng(samples).standard_normal((2, samples)).astype(np.float32)}


@pytest.mark.parametrize("target", ["torch", "pt2", "keras", "tflite", "flax"])
def test_fixed_sizes_decide_the_branch_for_every_target(tmp_path, target):
    pytest.importorskip(LIBRARY.get(target, "torch"))
    src = _branch_on_frames(tmp_path)
    for samples in (4, 20):  # one frame (the squeezing branch), five frames
        graph = tb.load(src, input_shapes={"x": [2, samples]})
        dest = tb.save(graph, tmp_path / f"{samples}_{DEST.get(target, 'm.pt2')}", to=target)
        report = tb.verify(src, dest, inputs=_signal(samples))
        assert report.ok, report.summary()
        assert len(report.outputs[0].shape) == (3 if samples == 4 else 4)


def test_pytorch_code_branches_on_sizes_at_run_time(tmp_path):
    pytest.importorskip("torch")
    src = _branch_on_frames(tmp_path)
    dest = tb.save(tb.load(src), tmp_path / "m_torch", to="torch")
    assert "torch.cond" not in (dest / "model.py").read_text()  # results of two ranks: a Python conditional
    for samples in (4, 20):
        report = tb.verify(src, dest, inputs=_signal(samples))
        assert report.ok and len(report.outputs[0].shape) == (3 if samples == 4 else 4), report.summary()


def test_traced_targets_name_the_fix_for_open_sizes(tmp_path):
    pytest.importorskip("keras")
    with pytest.raises(UnsupportedError, match="condition reads tensor sizes: with them fixed by --input-shape"):
        tb.save(tb.load(_branch_on_frames(tmp_path)), tmp_path / "m_keras", to="keras")


def _reflected(tmp_path) -> str:
    """A reflect pad of 20 on each side of a signal of open length."""
    return save_model(tmp_path / "reflect.onnx", [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "samples"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "padded"])],
                      {"pads": np.array([0, 20, 0, 20], np.int64)})


@pytest.mark.parametrize("target", ["pt2", "tflite"])
def test_a_wide_reflect_pad_of_an_open_dim(tmp_path, target):
    """torch.export traces it on an example longer than the pad; LiteRT sizes it when fed, not at load (the
    default size of an open dim, 1, is narrower than the pad)."""
    pytest.importorskip(LIBRARY.get(target, "torch"))
    src = _reflected(tmp_path)
    dest = tb.save(tb.load(src), tmp_path / DEST.get(target, "m.pt2"), to=target)
    for samples in (25, 300):
        report = tb.verify(src, dest, inputs={"x": np.arange(samples, dtype=np.float32)[None]})
        assert report.ok and report.outputs[0].shape == [1, samples + 40], report.summary()


@pytest.mark.parametrize("target", ["torch", "keras", "tflite", "flax"])
def test_the_size_of_open_dims(tmp_path, target):
    """Size of a tensor whose dims are open: a direct rule (PyTorch's numel), or the product of its shape."""
    pytest.importorskip(LIBRARY[target])
    src = save_model(tmp_path / "size.onnx", [helper.make_node("Size", ["x"], ["n"]),
                                              helper.make_node("Cast", ["n"], ["n_f"], to=TensorProto.FLOAT),
                                              helper.make_node("Div", ["x", "n_f"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "length"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "length"])])
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    for shape in ((1, 3), (2, 7)):
        report = tb.verify(src, dest, inputs={"x": np.ones(shape, np.float32)})
        assert report.ok, report.summary()


def test_a_decided_branch_handing_on_an_outer_value_keeps_every_name():
    """The taken branch returns a value of the enclosing graph that is itself a model output: inlining the If
    gives its result an Identity, so neither that output nor the If's is renamed."""
    from tensorbridge.ir.graph import Graph
    from tensorbridge.passes.fold_constants import fold_constants

    f32 = np.dtype(np.float32)
    graph = Graph("handed_on")
    x = graph.add_input("x", f32, (2,))
    r = graph.op("Relu", x, name="r")
    then_branch, else_branch = graph.subgraph("then"), graph.subgraph("else")
    then_branch.outputs = [r]
    else_branch.outputs = [else_branch.op("Neg", r, name="negated")]
    chosen = graph.add_node("If", [graph.add_constant("yes", np.array(True))],
                            {"then_branch": then_branch, "else_branch": else_branch}, name="chosen").outputs[0]
    graph.outputs = [r, chosen]
    names = [v.name for v in graph.outputs]
    fold_constants(graph)
    assert [n.op for n in graph.nodes] == ["Relu", "Identity"] and [v.name for v in graph.outputs] == names
    out = tb.run(graph, {"x": np.array([-1.0, 2.0], np.float32)})
    assert np.array_equal(out[names[1]], [0.0, 2.0])
