"""A Concat part of no elements along the axis adds nothing (Qwen3.5's chunked delta rule joins an empty slice):
where a target holds no empty tensor (LiteRT allocates none), the Concat of the other parts computes the same."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.verification.harness import runner_for
from tests.conftest import make_model


def _joins_an_empty_slice():
    ints = {name: numpy_helper.from_array(np.array(v, np.int64), name)
            for name, v in (("start", [5]), ("end", [9]), ("axis", [1]))}
    nodes = [helper.make_node("Slice", ["x", "start", "end", "axis"], ["past_the_end"]),
             helper.make_node("Concat", ["x", "past_the_end", "x"], ["joined"], axis=1),
             helper.make_node("Mul", ["joined", "joined"], ["y"])]
    return tb.load(make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(ints.values())))


@pytest.mark.parametrize("to", ["tflite", "keras"])
def test_an_empty_part_of_a_concat_is_left_out(to, tmp_path):
    dest = tmp_path / ("m.tflite" if to == "tflite" else "m_keras")
    tb.save(_joins_an_empty_slice(), dest, to=to)
    runner = runner_for(str(dest))
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    got = runner.run({runner.inputs[0][0]: x})[runner.outputs[0]]
    np.testing.assert_array_equal(got, np.concatenate([x, x], 1) ** 2)
