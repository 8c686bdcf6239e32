"""Edge and wrap pads reach the targets without those modes (Keras's TensorFlow backend, TFLite) through their
decomposition into slices, repeats and joins, equal to the op on every rank."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.ops.schema import get
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.harness import runner_for
from tests.conftest import make_model

CASES = [((6, 7), [1, 2, 2, 1]), ((2, 6, 7), [0, 0, 2, 0, 0, 1]), ((1, 2, 5, 6), [0, 0, 5, 1, 0, 0, 2, 6])]


def _graph(mode, shape, pads):
    return tb.load(make_model([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(pads, np.int64), "p")]))


def _expected(x, mode, pads):
    rank = x.ndim
    return np.pad(x, list(zip(pads[:rank], pads[rank:])), mode=mode)


@pytest.mark.parametrize("mode", ["edge", "wrap"])
@pytest.mark.parametrize("shape,pads", CASES)
def test_decomposition_equals_the_op(mode, shape, pads):
    graph = _graph(mode, shape, pads)
    node = graph.nodes[0]
    assert get("Pad").decompose(graph, node)
    assert "Pad" not in graph.op_histogram()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(run(graph, {"x": x})[graph.outputs[0].name], _expected(x, mode, pads))


@pytest.mark.slow
@pytest.mark.parametrize("to", ["keras", "tflite"])
@pytest.mark.parametrize("mode", ["edge", "wrap", "reflect"])
def test_tensorflow_targets_pad_in_every_mode(tmp_path, to, mode):
    shape, pads = CASES[1]
    dest = tmp_path / ("m.tflite" if to == "tflite" else "m_keras")
    tb.save(_graph(mode, shape, pads), dest, to=to)
    runner = runner_for(str(dest))
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(runner.run({runner.inputs[0][0]: x})[runner.outputs[0]], _expected(x, mode, pads))
