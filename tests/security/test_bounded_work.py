"""Bounded work on any input: constant folding has a budget, and a loop that would not end is not run."""

import onnx
from onnx import TensorProto as T
from onnx import helper as h

import tensorbridge as tb
from tensorbridge.cli.main import main


def _save(nodes, inputs, outputs, path, **graph):
    model = h.make_model(h.make_graph(nodes, "g", inputs, outputs, **graph), opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_folding_does_not_materialise_a_constant_bomb(tmp_path):
    """Two 2 GiB ConstantOfShape results summed: folded, they would take 6 GiB; kept, they take nothing."""
    big = h.make_tensor("s", T.INT64, [1], [1 << 29])
    nodes = [h.make_node("Constant", [], ["s"], value=big),
             h.make_node("ConstantOfShape", ["s"], ["a"], value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
             h.make_node("ConstantOfShape", ["s"], ["b"], value=h.make_tensor("v", T.FLOAT, [1], [2.0])),
             h.make_node("Add", ["a", "b"], ["ab"]),
             h.make_node("ReduceSum", ["ab"], ["r"], keepdims=0),
             h.make_node("Add", ["x", "r"], ["y"])]
    path = _save(nodes, [h.make_tensor_value_info("x", T.FLOAT, [])], [h.make_tensor_value_info("y", T.FLOAT, [])],
                 tmp_path / "bomb.onnx")
    graph = tb.load(path)
    from tensorbridge.passes.fold_constants import fold_constants

    fold_constants(graph)
    assert graph.weight_bytes() < 1 << 20
    assert {"ConstantOfShape", "ReduceSum"} <= set(graph.op_histogram())


def test_an_endless_loop_is_converted_but_not_run(tmp_path, capsys):
    body = h.make_graph(
        [h.make_node("Identity", ["v_in"], ["v_out"]), h.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("v_in", T.FLOAT, [2])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.FLOAT, [2])])
    nodes = [h.make_node("Constant", [], ["M"], value=h.make_tensor("M", T.INT64, [], [1 << 62])),
             h.make_node("Constant", [], ["c"], value=h.make_tensor("c", T.BOOL, [], [True])),
             h.make_node("Loop", ["M", "c", "x"], ["vf"], body=body),
             h.make_node("Add", ["x", "vf"], ["y"])]
    path = _save(nodes, [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("y", T.FLOAT, [2])],
                 tmp_path / "loop.onnx")
    out = tmp_path / "out.onnx"
    assert main(["-q", "convert", str(path), "-o", str(out)]) == 2
    assert "would not end" in capsys.readouterr().err and not out.exists()
    assert main(["-q", "convert", str(path), "-o", str(out), "--no-verify"]) == 0
