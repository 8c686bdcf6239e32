"""ONNX files: weights are memory-mapped on read, streamed on write, external data both ways."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.backends.onnx.exporter import export
from tensorbridge.errors import ModelError
from tensorbridge.formats.onnx_proto import read_model
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.infer_shapes import infer_shapes
from tests.conftest import make_model


def _linear_model(n=256):
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], [w])


def test_weights_are_views_of_the_file(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_linear_model(), path)
    loaded = read_model(path)
    w = loaded.weights["w"]
    assert not w.flags.owndata and not w.flags.writeable
    np.testing.assert_array_equal(w, numpy_helper.to_array(onnx.load(path).graph.initializer[0]))


def test_streamed_writer_output_equals_onnx_serialisation(tmp_path):
    model = _linear_model()
    g = tb.load(model)
    path = tmp_path / "out.onnx"
    export(g, path)
    back = onnx.load(path)
    onnx.checker.check_model(back)
    np.testing.assert_array_equal(numpy_helper.to_array(back.graph.initializer[0]),
                                  numpy_helper.to_array(model.graph.initializer[0]))


def test_external_data_round_trip(tmp_path):
    g = tb.load(_linear_model())
    path = tmp_path / "ext.onnx"
    export(g, path, external=True)
    assert (tmp_path / "ext.onnx.data").stat().st_size >= 256 * 256 * 4
    onnx.checker.check_model(str(path))
    again = tb.load(path)
    assert isinstance(again.constants["w"].const, np.memmap)
    x = np.ones((1, 256), np.float32)
    np.testing.assert_allclose(tb.run(again, {"x": x})["y"], tb.run(g, {"x": x})["y"], rtol=1e-6)
    report = tb.verify(path, tb.save(again, tmp_path / "copy.tbir"))
    assert report.ok


def test_external_data_keeps_small_tensors_inline_for_the_runtime(tmp_path):
    """onnxruntime infers shapes from a Reshape's target at load time and cannot read it from the side file."""
    g = Graph()
    x = g.add_input("x", np.float32, (2, 256))
    w = g.add_constant("w", np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
    g.outputs = [g.op("Reshape", g.op("MatMul", x, w), g.add_constant("to", np.array([4, 128], np.int64)))]
    infer_shapes(g)
    path = tmp_path / "ext.onnx"
    export(g, path, external=True)
    inits = {t.name: t for t in onnx.load(str(path), load_external_data=False).graph.initializer}
    assert inits["w"].data_location == TensorProto.EXTERNAL and inits["to"].data_location == TensorProto.DEFAULT
    assert tb.verify(g, path).ok


def test_external_data_may_not_leave_the_model_folder(tmp_path):
    model = _linear_model(8)
    t = model.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../etc/passwd"), ("offset", "0"), ("length", "256")):
        e = t.external_data.add()
        e.key, e.value = k, v
    path = tmp_path / "evil.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(ModelError, match="leaves the model folder"):
        tb.load(path)


def test_legacy_opsets_are_normalised():
    """Opset 9 forms (Upsample, attribute-axes, flattening Softmax) import to current IR ops."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    nodes = [helper.make_node("Upsample", ["x", "scales"], ["u"], mode="nearest"),
             helper.make_node("Slice", ["u"], ["s"], starts=[0], ends=[3], axes=[3]),
             helper.make_node("ReduceSum", ["s"], ["r"], axes=[2], keepdims=1),
             helper.make_node("Unsqueeze", ["r"], ["q"], axes=[0]),
             helper.make_node("Squeeze", ["q"], ["z"], axes=[0]),
             helper.make_node("Softmax", ["z"], ["y"], axis=1)]
    model = make_model(nodes, [x], [y], [scales], opset=9)
    g = tb.load(model)
    assert set(g.op_histogram()) >= {"Resize", "Slice", "ReduceSum", "Flatten", "Softmax"}
    import onnxruntime as ort

    data = np.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(np.float32)
    model.ir_version = 4
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": data})[0]
    np.testing.assert_allclose(tb.run(g, {"x": data})["y"], expected, rtol=1e-5, atol=1e-7)
    from tensorbridge.backends.onnx.exporter import to_model

    again = to_model(g)
    onnx.checker.check_model(again)
    got = ort.InferenceSession(again.SerializeToString()).run(None, {"x": data})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_ir_only_ops_are_decomposed_on_export(tmp_path):

    g = Graph("own_ops")
    x = g.add_input("x", "float32", (2, 4))
    w = g.add_constant("w", np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    b = g.add_constant("b", np.ones(3, np.float32))
    h = g.op("Dense", x, w, b, name="dense")
    g.outputs.append(g.op("SiLU", g.op("HardSwish", h, name="hs"), name="silu"))

    infer_shapes(g)
    path = tb.save(g, tmp_path / "own.onnx")
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert not ops & {"Dense", "SiLU"} and "MatMul" in ops
    assert tb.verify(g, path).ok


def test_a_directory_is_a_clean_error(tmp_path):
    (tmp_path / "dir.onnx").mkdir()
    with pytest.raises(ModelError):
        tb.load(tmp_path / "dir.onnx")


@pytest.mark.slow
def test_model_over_2gb_round_trips_with_external_data(tmp_path):

    g = Graph("big")
    x = g.add_input("x", "float32", (1, 8192))
    for i in range(9):  # 9 x 256 MB > 2 GB
        w = np.full((8192, 8192), 1.0 / 8192, np.float32)
        x = g.op("MatMul", x, g.add_constant(f"w{i}", w), name=f"mm{i}")
    g.outputs.append(x)
    infer_shapes(g)
    path = tb.save(g, tmp_path / "big.onnx")
    assert path.stat().st_size < 1 << 20 and (tmp_path / "big.onnx.data").stat().st_size > 2 << 30
    onnx.checker.check_model(str(path))
    report = tb.verify(g, path)
    assert report.ok


def test_where_on_bool_values_runs_in_onnxruntime(tmp_path):
    """ONNX allows Where on bool values; onnxruntime has no kernel for it, so the file selects bytes."""
    g = Graph()
    c, a, b = (g.add_input(n, np.bool_, (2, 3)) for n in "cab")
    g.outputs = [g.op("Where", c, a, b)]
    infer_shapes(g)
    path = tmp_path / "where.onnx"
    export(g, path)
    assert [n.op_type for n in onnx.load(str(path)).graph.node] == ["Cast", "Cast", "Where", "Cast"]
    rng = np.random.default_rng(0)
    report = tb.verify(g, path, inputs={n: rng.integers(0, 2, (2, 3)).astype(bool) for n in "cab"})
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def test_zero_pad_before_max_pool_runs_in_onnxruntime(tmp_path):
    """onnxruntime folds a zero Pad into the MaxPool after it as -inf padding (Keras ZeroPadding2D +
    MaxPooling2D, as in ResNet50V2): on negative inputs the 0 of the padding must still win."""
    import onnxruntime as ort

    g = Graph()
    x = g.add_input("x", np.float32, (1, 2, 5, 5))
    padded = g.op("Pad", x, g.add_constant("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)))
    g.outputs = [g.op("MaxPool", padded, kernel_shape=[3, 3], strides=[2, 2])]
    infer_shapes(g)
    path = tmp_path / "pad_pool.onnx"
    export(g, path)
    feed = -np.random.default_rng(0).uniform(1, 2, (1, 2, 5, 5)).astype(np.float32)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": feed})[0]
    expected = np.zeros((1, 2, 3, 3), np.float32)
    expected[:, :, 1, 1] = feed[:, :, 1:4, 1:4].max(axis=(2, 3))
    np.testing.assert_array_equal(got, expected)
