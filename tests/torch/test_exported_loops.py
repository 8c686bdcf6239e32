"""A Loop in `.pt2`: torch.while_loop carries the step index, the going flag and the carried values, and each
scan output fills the rows of a buffer sized by the trip count, cut to the steps run; read back, the program's
while_loop is a Loop again. Checked against onnxruntime on trip counts and early exits the export never saw."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.reference.interpreter import run
from tests.conftest import make_model

torch = pytest.importorskip("torch")


def _accumulating_loop():
    """y += x[i] each step, stopping once y's sum reaches 10; every step's y is scanned."""
    x = numpy_helper.from_array((np.arange(1, 9).reshape(8, 1) * [[1.0, 0.5]]).astype(np.float32), "x")
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    limit = numpy_helper.from_array(np.array(10.0, np.float32), "limit")
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["next"]),
         helper.make_node("Unsqueeze", ["i", "zero"], ["start"]),
         helper.make_node("Unsqueeze", ["next", "zero"], ["end"]),
         helper.make_node("Slice", ["x", "start", "end", "zero"], ["row"]),
         helper.make_node("Squeeze", ["row", "zero"], ["row_flat"]),
         helper.make_node("Add", ["y_in", "row_flat"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["going"]),
         helper.make_node("Identity", ["y_out"], ["y_step"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("going", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y_step", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array([0], np.int64), "zero")])
    model = make_model([helper.make_node("Loop", ["trips", "cond", "y"], ["y_final", "ys"], body=body)],
                       [helper.make_tensor_value_info("trips", TensorProto.INT64, []),
                        helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                        helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                       [helper.make_tensor_value_info("y_final", TensorProto.FLOAT, [2]),
                        helper.make_tensor_value_info("ys", TensorProto.FLOAT, [None, 2])],
                       [x, one, limit])
    return model


@pytest.mark.parametrize("trips,start", [(3, 0.0), (8, 4.0), (0, 0.0)])  # the trip count, the test, no step
def test_a_loop_runs_in_an_exported_program(tmp_path, trips, start):
    model = _accumulating_loop()
    feeds = {"trips": np.array(trips, np.int64), "cond": np.array(True), "y": np.full(2, start, np.float32)}
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    dest = tmp_path / "loop.pt2"
    tb.save(tb.load(model), dest)
    program = torch.export.load(str(dest))
    assert any(n.target is torch.ops.higher_order.while_loop for n in program.graph.nodes)
    got = program.module()(*(torch.from_numpy(np.asarray(v)) for v in feeds.values()))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.detach().numpy(), e, rtol=1e-6)
    back = tb.load(str(dest))
    assert "Loop" in back.op_histogram()
    for v, e in zip(back.outputs, expected):
        np.testing.assert_allclose(run(back, dict(zip([i.name for i in back.inputs], feeds.values())))[v.name], e,
                                   rtol=1e-6)


@pytest.mark.slow
def test_non_max_suppression_runs_in_an_exported_program(tmp_path):
    """ONNX's NonMaxSuppression cases in `.pt2`: each class's boxes visited in a torch.while_loop (the program is
    exported on zeros, so every selection it makes on the cases' boxes is made when it runs)."""
    from tests.cases.catalogue import cases

    checked = 0
    for case in cases("NonMaxSuppression", limit=30):
        tb.save(case.graph, tmp_path / "nms.pt2")
        program = torch.export.load(str(tmp_path / "nms.pt2")).module()
        got = program(*(torch.from_numpy(np.asarray(v)) for v in case.feeds.values()))
        np.testing.assert_array_equal((got[0] if isinstance(got, (tuple, list)) else got).numpy(), case.expected[0],
                                      err_msg=case.name)
        checked += 1
    assert checked >= 8


def test_scan_outputs_of_an_unbounded_loop_are_refused(tmp_path):
    """tf2onnx writes a loop run until its condition fails with a trip count of INT64_MAX: a buffer that size is no
    buffer, so `.pt2` refuses its scan outputs (PyTorch code stacks the steps run)."""
    model = _accumulating_loop()
    trips = next(i for i in model.graph.input if i.name == "trips")
    model.graph.input.remove(trips)
    model.graph.initializer.append(numpy_helper.from_array(np.array(np.iinfo(np.int64).max, np.int64), "trips"))
    with pytest.raises(tb.errors.UnsupportedError, match="trip count is unbounded"):
        tb.save(tb.load(model), tmp_path / "loop.pt2")
    assert not (tmp_path / "loop.pt2").exists()
