"""TensorFlow in: SavedModel folders (Keras's export) and frozen GraphDefs, run against TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb

tf = pytest.importorskip("tensorflow")
from tests.models import faithful, keras_zoo  # noqa: E402


#: both also run in the conversion matrix
@pytest.mark.parametrize("name", ["MobileNetV2", pytest.param("ResNet50", marks=pytest.mark.slow)])
def test_saved_model_to_onnx_and_torch(name, tmp_path):
    model, shape = keras_zoo.application(name)
    saved = tmp_path / "saved_model"
    model.export(str(saved))
    graph = tb.load(saved)
    feeds = {graph.inputs[0].name: np.random.default_rng(0).standard_normal((2, *shape)).astype(np.float32)}
    truth = faithful.float64_truth(graph, feeds)
    for dst in (tb.save(graph, tmp_path / "m.onnx"), tb.save(graph, tmp_path / "m_torch", to="torch")):
        faithful.check(tb.verify(saved, dst, inputs=feeds), truth)


def test_frozen_graphdef_with_dense_and_batchnorm_recovered(tmp_path):
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    w = tf.constant(np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32))
    b = tf.constant(np.arange(4, dtype=np.float32))
    scale, offset = tf.constant(np.full(3, 1.5, np.float32)), tf.constant(np.full(3, 0.1, np.float32))
    mean, var = tf.constant(np.full(3, 0.2, np.float32)), tf.constant(np.full(3, 0.8, np.float32))
    k = tf.constant(np.random.default_rng(2).standard_normal((3, 3, 2, 3)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 5, 5, 2], tf.float32, name="image")])
    def f(x):
        y = tf.nn.conv2d(x, k, strides=1, padding="SAME")
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(y, scale, offset, mean, var, is_training=False)[:3]
        y = tf.nn.relu6(y)
        y = tf.reduce_mean(y, axis=[1, 2])
        y = tf.concat([y, y], axis=1)
        return tf.nn.softmax(tf.nn.bias_add(tf.matmul(y, w), b))

    frozen = convert_variables_to_constants_v2(f.get_concrete_function())
    pb = tmp_path / "frozen.pb"
    pb.write_bytes(frozen.graph.as_graph_def().SerializeToString())
    graph = tb.load(pb)
    hist = graph.op_histogram()
    assert hist.get("Dense") == 1 and hist.get("BatchNormalization") == 1, hist
    x = np.random.default_rng(3).standard_normal((2, 5, 5, 2)).astype(np.float32)
    expected = f(tf.constant(x)).numpy()
    got = tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.slow  # per-layer verification's fault tracing runs in make test on ONNX and TFLite targets
def test_per_layer_against_a_saved_model_target(tmp_path):
    """A SavedModel exported from a Keras model is compared layer by layer with that model; a weight
    scaled before a second export is traced to its layer."""
    model, shape = keras_zoo.application("MobileNetV2")
    src = tmp_path / "mobilenet.keras"
    model.save(src)
    model.export(str(tmp_path / "saved"), verbose=False)
    feeds = {tb.load(src).inputs[0].name: np.random.default_rng(0).standard_normal((1, *shape)).astype(np.float32)}
    clean = tb.verify(src, tmp_path / "saved", inputs=feeds, per_layer=True)
    assert clean.ok and clean.first_divergence["op"] is None and clean.first_divergence["values_compared"] > 100
    layer = model.get_layer("block_3_project")
    kernel, = layer.get_weights()
    layer.set_weights([kernel * 1.5])
    model.export(str(tmp_path / "faulty"), verbose=False)
    report = tb.verify(src, tmp_path / "faulty", inputs=feeds, per_layer=True)
    assert report.first_divergence["node"] == "block_3_project", report.first_divergence


def test_keras2_saved_model_with_legacy_optimizer_slots(tmp_path):
    """Recorded by tests/tf/data/make_keras2_savedmodel.py (tf.keras 2, legacy Adam after training): TensorFlow's
    loader alone fails on its slots ('_UserObject' object has no attribute 'add_slot')."""
    from pathlib import Path

    from tensorbridge.reference.interpreter import run

    saved = Path(__file__).parent / "data" / "keras2_legacy_adam"
    recorded = np.load(saved.with_suffix(".npz"))
    with pytest.raises(Exception, match="add_slot"):
        tf.saved_model.load(str(saved))
    graph = tb.load(saved)
    got = run(graph, {graph.inputs[0].name: recorded["x"]})
    np.testing.assert_allclose(next(iter(got.values())), recorded["y"], rtol=1e-5, atol=1e-6)  # trained weights
    assert tb.convert(saved, tmp_path / "keras2.onnx", verify=True).status == "PASS"


def test_keras_saved_model_with_grouped_conv_tensordot_and_gelu(tmp_path):
    """What a Keras 3 ConvNeXt-style block becomes in a SavedModel: a grouped Conv2D is a call of Keras's own
    XLA-compiled function (a StatefulPartitionedCall, inlined), a Dense over a 4-D tensor is TensorFlow's
    tensordot (read back as one Dense), and gelu is 0.5 x erfc(-x / sqrt 2) (read back as Gelu, which LiteRT has
    while it has no erf). Every target takes the model; TFLite is run here."""
    import keras

    keras.utils.set_random_seed(0)
    x = keras.Input((8, 8, 4))
    h = keras.layers.Conv2D(4, 3, padding="same", groups=4)(x)
    h = keras.layers.Dense(8, activation="gelu")(h)
    model = keras.Model(x, keras.layers.Dense(3)(h))
    saved = tmp_path / "saved"
    model.export(str(saved), verbose=False)
    graph = tb.load(saved)
    ops = graph.op_histogram()
    assert ops.get("Gelu") == 1 and ops.get("Dense") == 2 and not {"Erf", "Reshape"} & set(ops), ops
    assert tb.convert(saved, tmp_path / "m.tflite", verify=True).status == "PASS"


def test_a_signature_returning_a_dict_pairs_its_outputs_by_name(tmp_path):
    """A signature's outputs are a dict (basic-pitch's note, onset, contour): read in tf.nest's order (sorted
    names), and run in that order, so a target that does not keep the names (PyTorch code) pairs them right."""
    pytest.importorskip("torch")

    class Heads(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32)])
        def serve(self, x):
            return {"note": tf.nn.relu(x), "onset": tf.reduce_sum(x, axis=1), "contour": tf.concat([x, x], axis=1)}

    module = Heads()
    saved = tmp_path / "heads"
    tf.saved_model.save(module, str(saved), signatures={"serving_default": module.serve})
    report = tb.verify(saved, tb.save(tb.load(saved), tmp_path / "heads_torch", to="torch"))
    assert report.ok and [o.shape for o in report.outputs] == [[1, 8], [1, 4], [1]], report.summary()
