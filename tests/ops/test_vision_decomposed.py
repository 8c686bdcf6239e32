"""A spatial transformer (affine matrices predicted from the image, AffineGrid, GridSample in each padding and
sampling mode), a KV-cache update (TensorScatter) and a detector's box head (RoiAlign on boxes given at run time)
in targets without those ops: their decompositions, checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tests.ops.onnx_models import convert_and_verify, save_model


def _spatial_transformer(tmp_path, mode: str, padding: str) -> str:
    rng = np.random.default_rng(0)
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Flatten", ["x"], ["flat"]),
             helper.make_node("Gemm", ["flat", "loc_w", "loc_b"], ["params"]),
             helper.make_node("Reshape", ["params", "theta_shape"], ["theta"]),
             helper.make_node("AffineGrid", ["theta", "size"], ["grid"]),
             helper.make_node("GridSample", ["x", "grid"], ["warped"], mode=mode, padding_mode=padding),
             helper.make_node("Conv", ["warped", "conv_w"], ["y"], pads=[1, 1, 1, 1])]
    weights = {"loc_w": (rng.standard_normal((3 * 7 * 9, 6)) * 0.05).astype(np.float32),
               "loc_b": np.array([1.2, 0.1, 0.05, -0.1, 0.9, -0.05], np.float32),  # a turn, zoomed out
               "theta_shape": np.array([-1, 2, 3], np.int64), "size": np.array([2, 3, 7, 9], np.int64),
               "conv_w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)}
    return save_model(tmp_path / f"stn_{mode}_{padding}.onnx", nodes,
                      [helper.make_tensor_value_info("x", f, [2, 3, 7, 9])],
                      [helper.make_tensor_value_info("y", f, [2, 4, 7, 9])], weights, 20)


@pytest.mark.parametrize("target", ["torch", "keras", "flax", "tflite"])
@pytest.mark.parametrize("mode, padding", [("linear", "zeros"), ("nearest", "border"), ("cubic", "reflection")])
def test_a_spatial_transformer_runs_in_every_code_target(tmp_path, target, mode, padding):
    report = convert_and_verify(_spatial_transformer(tmp_path, mode, padding), tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def _cache_update(tmp_path, mode: str) -> str:
    """A [batch, heads, max_len, dim] cache written at per-batch positions; the attention reads it after."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("TensorScatter", ["past", "new", "positions"], ["present"], mode=mode),
             helper.make_node("ReduceSum", ["present", "axes"], ["y"], keepdims=0)]
    info = helper.make_tensor_value_info
    inputs = [info("past", f, [2, 3, 8, 4]), info("new", f, [2, 3, 3, 4]), info("positions", TensorProto.INT64, [2])]
    outputs = [info("present", f, [2, 3, 8, 4]), info("y", f, [2, 3, 4])]
    return save_model(tmp_path / f"cache_{mode}.onnx", nodes, inputs, outputs, {"axes": np.array([2], np.int64)}, 24)


@pytest.mark.parametrize("target", ["torch", "keras", "tflite"])
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_a_cache_update_runs_in_every_code_target(tmp_path, target, mode):
    src = _cache_update(tmp_path, mode)
    rng = np.random.default_rng(2)
    feeds = {"past": rng.standard_normal((2, 3, 8, 4)).astype(np.float32),
             "new": rng.standard_normal((2, 3, 3, 4)).astype(np.float32),
             "positions": np.array([1, 6 if mode == "circular" else 5], np.int64)}  # the circular one wraps
    report = convert_and_verify(src, tmp_path, target, inputs=feeds)
    assert report.ok, report.summary()


def _box_head(tmp_path, mode: str, sampling_ratio: int) -> str:
    """A backbone convolution, RoiAlign of the boxes (image coordinates, 1/4 scale features) and a classifier."""
    rng = np.random.default_rng(3)
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Conv", ["image", "conv_w"], ["features"], strides=[4, 4]),
             helper.make_node("RoiAlign", ["features", "boxes", "box_image"], ["pooled"], mode=mode,
                              output_height=3, output_width=4, sampling_ratio=sampling_ratio, spatial_scale=0.25),
             helper.make_node("Flatten", ["pooled"], ["flat"]),
             helper.make_node("Gemm", ["flat", "fc_w"], ["logits"])]
    weights = {"conv_w": rng.standard_normal((5, 3, 4, 4)).astype(np.float32),
               "fc_w": rng.standard_normal((5 * 3 * 4, 6)).astype(np.float32)}
    info = helper.make_tensor_value_info
    inputs = [info("image", f, [2, 3, 32, 40]), info("boxes", f, [4, 4]), info("box_image", TensorProto.INT64, [4])]
    return save_model(tmp_path / f"box_head_{mode}_{sampling_ratio}.onnx", nodes, inputs,
                      [info("logits", f, [4, 6])], weights, 16)


def _box_feeds():
    rng = np.random.default_rng(4)
    corners = rng.uniform(-6, 36, (4, 2, 2))  # some boxes reach past the image
    boxes = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    return {"image": rng.standard_normal((2, 3, 32, 40)).astype(np.float32), "boxes": boxes.astype(np.float32),
            "box_image": np.array([0, 1, 1, 0], np.int64)}


@pytest.mark.parametrize("target", ["torch", "keras", "flax", "tflite"])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_a_box_head_runs_in_every_code_target(tmp_path, target, mode):
    report = convert_and_verify(_box_head(tmp_path, mode, 2), tmp_path, target, inputs=_box_feeds())
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def test_adaptive_sampling_of_boxes_given_at_run_time_is_refused_with_the_reason(tmp_path):
    with pytest.raises(UnsupportedError, match=r"RoiAlign.*sampling_ratio \(0\) samples each box by its size"):
        tb.save(tb.load(_box_head(tmp_path, "avg", 0)), tmp_path / "model.py", to="torch")
    assert not (tmp_path / "model.py").exists()
