"""An ONNX model that computes shapes when it runs (Shape -> Gather -> Concat -> Reshape, Range for position ids,
ConstantOfShape for a mask) reaches Keras code and TFLite with its batch and sequence dims left dynamic, and
matches onnxruntime at several sequence lengths."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tests.ops.onnx_models import DEST, save_model

pytest.importorskip("keras")


def _dynamic_model(tmp_path) -> str:
    """x [batch, seq, 8] plus a learned position table read at range(seq), split into 2 heads of 4 by a reshape
    whose target is computed from x's shape, summed per head, times a mask of ones shaped [batch, 1, seq]."""
    node = helper.make_node
    nodes = [node("Shape", ["x"], ["dims"]),
             node("Gather", ["dims", "zero"], ["batch"]), node("Gather", ["dims", "one"], ["seq"]),
             node("Range", ["zero", "seq", "one"], ["positions"]),
             node("Gather", ["table", "positions"], ["embedded"]),
             node("Add", ["x", "embedded"], ["h"]),
             node("Unsqueeze", ["batch", "axis0"], ["batch1"]), node("Unsqueeze", ["seq", "axis0"], ["seq1"]),
             node("Concat", ["batch1", "seq1", "heads"], ["split_shape"], axis=0),
             node("Reshape", ["h", "split_shape"], ["split"]),
             node("Transpose", ["split"], ["by_head"], perm=[0, 2, 1, 3]),
             node("ReduceSum", ["by_head", "last"], ["summed"], keepdims=0),
             node("Concat", ["batch1", "one1", "seq1"], ["mask_shape"], axis=0),
             node("ConstantOfShape", ["mask_shape"], ["mask"],
                  value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
             node("Mul", ["summed", "mask"], ["y"])]
    weights = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "axis0": np.array([0], np.int64),
               "one1": np.array([1], np.int64), "heads": np.array([2, 4], np.int64), "last": np.array([3], np.int64),
               "table": np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)}
    info = helper.make_tensor_value_info
    return save_model(tmp_path / "dynamic.onnx", nodes, [info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
                      [info("y", TensorProto.FLOAT, ["batch", 2, "seq"])], weights)


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_computed_shapes_stay_dynamic(tmp_path, target):
    src = _dynamic_model(tmp_path)
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    rng = np.random.default_rng(1)
    for batch, seq in ((2, 5), (1, 9), (3, 1)):
        x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
        report = tb.verify(src, dest, inputs={"x": x})
        assert report.ok and report.outputs[0].shape == [batch, 2, seq], report.summary()
