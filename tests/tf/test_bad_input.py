"""Keras and TFLite bad input: clean errors, exit 2, every blocker listed, no partial output."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from tests.cli.test_cli import _no_output, run_cli

pytest.importorskip("tensorflow")
from tests.models import keras_zoo  # noqa: E402


def _small_cnn():
    import keras

    x_in = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(4, 3, activation="relu")(x_in)
    return keras.Model(x_in, keras.layers.Dense(5)(keras.layers.GlobalAveragePooling2D()(x)))


def test_truncated_tflite(tmp_path):
    model = _small_cnn()
    lite = tmp_path / "m.tflite"
    keras_zoo.to_tflite(model, lite)
    data = lite.read_bytes()
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(data[: len(data) // 3])
    code, _, err = run_cli("convert", bad, "-o", tmp_path / "out.onnx")
    assert code == 2 and "error:" in err and "Traceback" not in err
    assert _no_output(tmp_path)


def test_keras_zip_without_weights(tmp_path):
    model, _ = keras_zoo.text_model("gru")
    src = tmp_path / "m.keras"
    model.save(src)
    bad = tmp_path / "bad.keras"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            if not item.filename.endswith(".h5"):
                zout.writestr(item, zin.read(item.filename))
    code, _, err = run_cli("convert", bad, "-o", tmp_path / "out.onnx")
    assert code == 2 and "error:" in err and "Traceback" not in err
    assert _no_output(tmp_path)


def test_custom_layers_are_traced_and_what_cannot_be_traced_is_listed(tmp_path):
    import keras

    import tensorbridge as tb

    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.gain = self.add_weight(shape=(shape[-1],), initializer="ones", name="gain")

        def call(self, x):
            return x * self.gain + 1.0

    class Eager(keras.layers.Layer):  # reads values at call time: no symbolic trace
        def compute_output_shape(self, shape):
            return shape

        def call(self, x):
            return x * float(keras.ops.convert_to_numpy(x).max())

    x_in = keras.Input((4,), name="x")
    model = keras.Model(x_in, Scale(name="scale_a")(keras.layers.Dense(3)(x_in)))
    model.layers[-1].gain.assign(np.array([0.5, 2.0, -1.0], np.float32))
    graph = tb.load(model)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name],
                               np.asarray(model(x)), rtol=1e-5)
    assert any(v.is_constant and v.meta.get("role") != "literal" for v in graph.values() if "gain" in v.name)

    bad = keras.Model(x_in, Eager(name="eager_b")(Eager(name="eager_a")(keras.layers.Dense(3)(x_in))))
    with pytest.raises(tb.errors.UnsupportedError) as e:
        tb.load(bad)
    msg = str(e.value)
    assert "Eager" in msg and "eager_a" in msg and "eager_b" in msg and "cannot be traced" in msg


def test_flex_ops_are_listed_by_name(tmp_path):
    import tensorflow as tf

    model, _ = keras_zoo.text_model("gru")
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
    converter._experimental_lower_tensor_list_ops = False
    lite = tmp_path / "flex.tflite"
    lite.write_bytes(converter.convert())
    code, _, err = run_cli("convert", lite, "-o", tmp_path / "out.onnx")
    assert code == 2 and "Flex" in err and "TensorList" in err and "Traceback" not in err
    assert _no_output(tmp_path)


def test_an_absent_index_vector_reads_as_no_tensors():
    """The flatbuffer reader gives an absent vector (a branch subgraph that takes no inputs, as other
    converters write it) as the number 0, not as an empty array."""
    from tensorbridge.frontends.tflite.importer import tensor_indices

    class Absent:
        def InputsLength(self):
            return 0

        def InputsAsNumpy(self):
            return 0

    assert tensor_indices(Absent(), "Inputs") == []
