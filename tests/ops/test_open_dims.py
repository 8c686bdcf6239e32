"""Published ONNX files with open dims, as their exporters write them: a Resize by constant scales of open
spatial dims keeps the channel count (Keras builds its convolutions with it), a declared size of -1 (paddle2onnx)
is an open dim, and a broadcast to a shape computed from the batch reaches Flax."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tests.ops.onnx_models import DEST, LIBRARY, save_model


@pytest.mark.parametrize("target", ["keras", "tflite", "flax"])
def test_a_convolution_after_an_upsampling_of_open_dims(tmp_path, target):
    """YOLOv8's and PP-OCR's upsampling before a convolution, sizes open: TensorFlow's TFLite converter loses the
    channel count of UpSampling2D (its tf.repeat), which its convolutions need: the TFLite path reshapes to it."""
    pytest.importorskip(LIBRARY[target])
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    src = save_model(tmp_path / "upsampled.onnx",
                     [helper.make_node("Resize", ["x", "", "scales"], ["up"], mode="nearest", nearest_mode="floor",
                                       coordinate_transformation_mode="asymmetric"),
                      helper.make_node("Conv", ["up", "w"], ["y"], pads=[1, 1, 1, 1])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h2", "w2"])],
                     {"scales": np.array([1, 1, 2, 2], np.float32), "w": w})
    graph = tb.load(src)
    assert graph.nodes[0].outputs[0].shape[:2] == (1, 3)
    if target == "flax":  # JAX traces fixed sizes
        graph = tb.load(src, input_shapes={"x": [1, 3, 5, 6]})
    report = tb.verify(src, tb.save(graph, tmp_path / DEST[target], to=target),
                       inputs={"x": np.random.default_rng(1).standard_normal((1, 3, 5, 6)).astype(np.float32)})
    assert report.ok, report.summary()


def test_a_declared_size_of_minus_one_is_an_open_dim(tmp_path):
    src = save_model(tmp_path / "declared.onnx", [helper.make_node("Relu", ["x"], ["h"]),
                                                  helper.make_node("Neg", ["h"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3])])
    import onnx

    model = onnx.load(src)
    model.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [-1, 3]))
    onnx.save(model, src)
    graph = tb.load(src)
    assert graph.inputs[0].shape == (None, 3) and graph.nodes[0].outputs[0].shape == (None, 3)


def test_a_broadcast_to_the_batch_in_flax(tmp_path):
    """Expand to Concat(Shape(x)[:1], [4, 1]) of x reshaped to [-1, 4, 1] (magika's one-hot): broadcast_to the
    input's own batch, which JAX knows when it traces."""
    pytest.importorskip("flax")
    src = save_model(tmp_path / "spread.onnx",
                     [helper.make_node("Reshape", ["x", "column"], ["col"]),
                      helper.make_node("Shape", ["x"], ["x_shape"]),
                      helper.make_node("Slice", ["x_shape", "zero", "one"], ["batch"]),
                      helper.make_node("Concat", ["batch", "rest"], ["target"], axis=0),
                      helper.make_node("Expand", ["col", "target"], ["spread"]),
                      helper.make_node("Equal", ["spread", "values"], ["hit"]),
                      helper.make_node("Cast", ["hit"], ["y"], to=TensorProto.FLOAT)],
                     [helper.make_tensor_value_info("x", TensorProto.INT32, ["batch", 4])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 3])],
                     {"column": np.array([-1, 4, 1], np.int64), "zero": np.array([0], np.int64),
                      "one": np.array([1], np.int64), "rest": np.array([4, 1], np.int64),
                      "values": np.arange(3, dtype=np.int32)})
    dest = tb.save(tb.load(src), tmp_path / "m_flax", to="flax")
    assert ".shape[0], 4, 1)" in (dest / "model.py").read_text()
    for batch in (1, 3):
        x = np.random.default_rng(batch).integers(0, 3, (batch, 4)).astype(np.int32)
        report = tb.verify(src, dest, inputs={"x": x})
        assert report.ok, report.summary()


def test_an_upsampling_of_sizes_the_ir_does_not_know_repeats_in_flax(tmp_path):
    """Two unknown sizes are not equal sizes: a Resize by 2 of a strided convolution's open output repeats each
    element (was written as no resize at all, both sides' sizes being unknown)."""
    pytest.importorskip("flax")
    w = np.random.default_rng(0).standard_normal((3, 3, 3, 3)).astype(np.float32)
    src = save_model(tmp_path / "strided.onnx",
                     [helper.make_node("Conv", ["x", "w"], ["down"], strides=[2, 2], pads=[1, 1, 1, 1]),
                      helper.make_node("Resize", ["down", "", "scales"], ["y"], mode="nearest", nearest_mode="floor",
                                       coordinate_transformation_mode="asymmetric")],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "h", "w"])],
                     {"scales": np.array([1, 1, 2, 2], np.float32), "w": w})
    graph = tb.load(src)
    assert graph.nodes[-1].outputs[0].shape[2:] == (None, None)
    dest = tb.save(graph, tmp_path / "m_flax", to="flax")
    assert "jnp.repeat" in (dest / "model.py").read_text()
    report = tb.verify(src, dest, inputs={"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8))
                                          .astype(np.float32)})
    assert report.ok, report.summary()


def test_a_reshape_keeping_the_batch_with_another_open_dim_in_flax(tmp_path):
    """YOLOv8's head: x [batch, 4, h, w] reshaped to [batch, 4, -1] by a target made of Shape(x)[0]: two open dims,
    the batch read from the input's shape (JAX traces fixed sizes), the other -1."""
    pytest.importorskip("flax")
    src = save_model(tmp_path / "head.onnx",
                     [helper.make_node("Shape", ["x"], ["x_shape"]),
                      helper.make_node("Slice", ["x_shape", "zero", "one"], ["batch"]),
                      helper.make_node("Concat", ["batch", "rest"], ["target"], axis=0),
                      helper.make_node("Reshape", ["x", "target"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, "h", "w"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, "hw"])],
                     {"zero": np.array([0], np.int64), "one": np.array([1], np.int64),
                      "rest": np.array([4, -1], np.int64)})
    dest = tb.save(tb.load(src), tmp_path / "m_flax", to="flax")
    assert ".shape[0], 4, -1)" in (dest / "model.py").read_text()
    for shape in ((1, 4, 3, 5), (2, 4, 6, 2)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        report = tb.verify(src, dest, inputs={"x": x})
        assert report.ok, report.summary()


@pytest.mark.parametrize("target", ["flax", "torch"])  # .pt2: torch.export fixes a Range's run-time bound
def test_an_anchor_grid_of_the_feature_maps_open_size(tmp_path, target):
    """YOLOv8's anchors (NudeNet with its sizes open): a grid of Range(0, float(h)) x Range(0, float(w)) cell
    centres Expanded to [h, w], h and w read from a strided convolution's open output by Shape; and ddddocr's
    LSTM head: a Reshape to [Shape(f)[2], -1], a size the IR knows no name for. Flax code computes both in Python
    from `x.shape` (ints when JAX traces); verified at two sizes by the one written folder."""
    pytest.importorskip(LIBRARY[target])
    i64 = {name: np.array(v, np.int64) for name, v in {"rows": 2, "cols": 3, "column": [-1, 1], "row": [1, -1],
                                                       "axes": [0, 1], "first": [0], "rest": [-1]}.items()}
    src = save_model(tmp_path / "anchors.onnx", [
        helper.make_node("Conv", ["x", "w"], ["f"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Shape", ["f"], ["f_shape"]),
        helper.make_node("Gather", ["f_shape", "rows"], ["h"]), helper.make_node("Gather", ["f_shape", "cols"], ["w_"]),
        helper.make_node("Cast", ["h"], ["h_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["w_"], ["w_f"], to=TensorProto.FLOAT),
        helper.make_node("Range", ["zero", "h_f", "step"], ["ys"]),
        helper.make_node("Range", ["zero", "w_f", "step"], ["xs"]),
        helper.make_node("Add", ["ys", "half"], ["cy"]), helper.make_node("Add", ["xs", "half"], ["cx"]),
        helper.make_node("Reshape", ["cy", "column"], ["cy_col"]),
        helper.make_node("Reshape", ["cx", "row"], ["cx_row"]),
        helper.make_node("Shape", ["cy"], ["cy_n"]), helper.make_node("Shape", ["cx"], ["cx_n"]),
        helper.make_node("Concat", ["cy_n", "cx_n"], ["grid"], axis=0),
        helper.make_node("Expand", ["cy_col", "grid"], ["gy"]), helper.make_node("Expand", ["cx_row", "grid"], ["gx"]),
        helper.make_node("Mul", ["gy", "gx"], ["cells"]),
        helper.make_node("Unsqueeze", ["cells", "axes"], ["cells4"]),
        helper.make_node("Add", ["f", "cells4"], ["y"]),
        helper.make_node("Unsqueeze", ["h", "first"], ["h1"]),
        helper.make_node("Concat", ["h1", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["f", "target"], ["rows_out"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("rows_out", TensorProto.FLOAT, None)],
        {**i64, "w": np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32),
         "zero": np.float32(0), "step": np.float32(1), "half": np.float32(0.5)})
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    for size in ((8, 12), (14, 6)):
        x = np.random.default_rng(size[0]).standard_normal((1, 3, *size)).astype(np.float32)
        report = tb.verify(src, dest, inputs={"x": x})
        assert report.ok, report.summary()


def test_a_u_net_whose_sizes_are_multiples_exports_with_them_open(tmp_path):
    """PP-OCRv5's detector adds each upsampled map to the skip it came from, so its sizes are multiples of 4 here
    (of 32 there): torch.export specialises the smallest example size, which is too small for the model, and the
    next one keeps the sizes open as multiples (was refused: "the open dim ... runs at one size only")."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((3, 3, 3, 3)).astype(np.float32) for _ in range(2))
    src = save_model(tmp_path / "unet.onnx",
                     [helper.make_node("Conv", ["x", "w1"], ["d1"], strides=[2, 2], pads=[1, 1, 1, 1]),
                      helper.make_node("Conv", ["d1", "w2"], ["d2"], strides=[2, 2], pads=[1, 1, 1, 1]),
                      helper.make_node("Resize", ["d2", "", "scales"], ["u1"], mode="nearest", nearest_mode="floor",
                                       coordinate_transformation_mode="asymmetric"),
                      helper.make_node("Add", ["u1", "d1"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "h2", "w2"])],
                     {"scales": np.array([1, 1, 2, 2], np.float32), "w1": w1, "w2": w2})
    dest = tb.save(tb.load(src), tmp_path / "m.pt2", to="pt2")
    for size in ((8, 12), (20, 4)):
        report = tb.verify(src, dest, inputs={"x": rng.standard_normal((1, 3, *size)).astype(np.float32)})
        assert report.ok, report.summary()


def test_same_padding_of_open_sizes_in_pytorch_code(tmp_path):
    """PP-OCRv6's detector pads its convolutions and pools SAME_UPPER over open sizes: PyTorch code computes the
    padding from the input's sizes when it runs (was refused: "auto_pad=SAME_UPPER needs static spatial dims";
    .pt2 writes the same code)."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    src = save_model(tmp_path / "same.onnx",
                     [helper.make_node("Conv", ["x", "w3"], ["a"], strides=[2, 2], auto_pad="SAME_UPPER"),
                      helper.make_node("Conv", ["a", "w2"], ["b"], auto_pad="SAME_LOWER"),
                      helper.make_node("MaxPool", ["b"], ["c"], kernel_shape=[2, 2], strides=[2, 2],
                                       auto_pad="SAME_UPPER"),
                      helper.make_node("AveragePool", ["c"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                       auto_pad="SAME_UPPER")],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                     {"w3": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                      "w2": rng.standard_normal((4, 4, 2, 2)).astype(np.float32)})
    dest = tb.save(tb.load(src), tmp_path / "m_torch", to="torch")
    for size in ((7, 10), (16, 5)):
        report = tb.verify(src, dest, inputs={"x": rng.standard_normal((1, 3, *size)).astype(np.float32)})
        assert report.ok, report.summary()


@pytest.mark.parametrize("target", ["keras", "tflite", "flax"])
def test_reshapes_copying_an_open_dim_beside_another(tmp_path, target):
    """PP-OCRv5's recogniser (paddle2onnx): Reshape targets [0, 1, -1, 120] (a constant) and [0, 1, Shape(x)[1],
    120] (computed), whose 0 copies the open batch while another dim is open too: Keras reads the batch from the
    input's shape as the model runs (TensorFlow's reshape would take 0 as an empty dim), Flax from its own."""
    pytest.importorskip(LIBRARY[target])
    i64 = {name: np.array(v, np.int64) for name, v in {"fixed": [0, 1, -1, 6], "head": [0, 1], "tail": [6],
                                                       "one": [1], "two": [2]}.items()}
    src = save_model(tmp_path / "copies.onnx", [
        helper.make_node("Reshape", ["x", "fixed"], ["a"]),
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Slice", ["x_shape", "one", "two"], ["length"]),
        helper.make_node("Concat", ["head", "length", "tail"], ["computed"], axis=0),
        helper.make_node("Reshape", ["x", "computed"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "t", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], i64)
    dest = tb.save(tb.load(src), tmp_path / DEST[target], to=target)
    for shape in ((1, 5, 6), (2, 3, 6)):
        report = tb.verify(src, dest, inputs={"x": np.random.default_rng(shape[1]).standard_normal(shape)
                                              .astype(np.float32)})
        assert report.ok, report.summary()


def test_a_squeeze_of_a_dim_only_shape_inference_knows_is_one(tmp_path):
    """PP-OCRv4's recogniser concatenates a map of open height with one of height 1, then squeezes the height:
    shape inference knows it is 1, Keras's own shapes do not (ops.squeeze refused it when the model was built:
    an internal error); the code indexes the axis at 0."""
    pytest.importorskip("keras")
    nhwc = [helper.make_node("Transpose", [name], [f"{name}_t"], perm=[0, 3, 1, 2]) for name in ("a", "b")]
    src = save_model(tmp_path / "squeezed.onnx", nhwc + [
        helper.make_node("Concat", ["a_t", "b_t"], ["c"], axis=1),
        helper.make_node("Squeeze", ["c", "height"], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", "h", "w", 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n", 1, "w", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], {"height": np.array([2], np.int64)})
    dest = tb.save(tb.load(src), tmp_path / "m_keras", to="keras")
    rng = np.random.default_rng(0)
    report = tb.verify(src, dest, inputs={"a": rng.standard_normal((2, 1, 5, 4)).astype(np.float32),
                                          "b": rng.standard_normal((2, 1, 5, 2)).astype(np.float32)})
    assert report.ok, report.summary()
