"""Keras and TFLite in: keras.applications (seeded, no downloads) and small text/attention models.

Keras -> ONNX, Keras -> PyTorch code; TFLite (made by TF's converter) -> ONNX and -> PyTorch
code. Each result runs in its own runtime against Keras / LiteRT on the same seeded inputs (BatchNorm
statistics calibrated, logits compared): within float32 tolerance, top-10 agreement 100% on the class
scores, and no farther from the float64 truth than the source runtime is (tests/models/faithful.py).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.verification.compare import compare

pytest.importorskip("tensorflow")
pytest.importorskip("ai_edge_litert")
from tests.models import faithful, keras_zoo  # noqa: E402
from tests.models.layout_models import transposes_in  # noqa: E402

logging.disable(logging.WARNING)
#: each also in the matrix; MobileNetV2 runs in make test through tests/tf/test_keras_tflite_backends.py
SLOW = ["MobileNetV2", "EfficientNetB0", "ResNet50", "InceptionV3", "DenseNet121", "NASNetMobile"]


def _check(report, classifier=True, truth=None):
    if truth is None:  # a small model: float32 arithmetic noise is far below 1e-5 here
        out = report.outputs[0]
        assert report.conclusive and out.robust_rel <= 1e-5, report.summary()
        if classifier:
            assert out.topk.get("top10") == 1.0, report.summary()
        return
    faithful.check(report, truth, classifier)


def _targets(graph, tmp_path, stem, image_model=False):
    """ONNX and PyTorch code, each with the source's I/O layout and with the target's; in an image model
    the transposes left are one at the image input (`keep`) or none (`target`)."""
    out = []
    for io, allowed in (("keep", 1), ("target", 0)):
        layout = tb.LayoutOptions(io_layout=io)
        for dst in (tb.save(graph, tmp_path / f"{stem}_{io}.onnx", layout=layout),
                    tb.save(graph, tmp_path / f"{stem}_{io}_torch", to="torch", layout=layout)):
            assert not image_model or transposes_in(dst) == allowed, (dst, io)
            out.append(dst)
    return out


def _run_app(name, tmp_path):
    model, shape = keras_zoo.application(name)
    x = np.random.default_rng(0).standard_normal((2, *shape)).astype(np.float32)
    src = tmp_path / f"{name}.keras"
    model.save(src)
    graph = tb.load(src)
    feeds = {graph.inputs[0].name: x}
    truth = faithful.float64_truth(graph, feeds)
    for dst in _targets(graph, tmp_path, name, image_model=True):
        _check(tb.verify(src, dst, inputs=feeds), truth=truth)
    lite = tmp_path / f"{name}.tflite"
    keras_zoo.to_tflite(model, lite)
    lite_graph = tb.load(lite)
    lite_feeds = {lite_graph.inputs[0].name: x[:1]}
    lite_truth = faithful.float64_truth(lite_graph, lite_feeds)
    for dst in _targets(lite_graph, tmp_path, f"{name}_lite", image_model=True):
        _check(tb.verify(lite, dst, inputs=lite_feeds), truth=lite_truth)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_keras_application_slow(name, tmp_path):
    _run_app(name, tmp_path)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_keras_recurrent_text_model(kind, tmp_path):
    model, shape = keras_zoo.text_model(kind)
    src = tmp_path / "text.keras"
    model.save(src)
    graph = tb.load(src)
    tokens = np.random.default_rng(1).integers(0, 300, (3, *shape)).astype(np.int32)
    for dst in _targets(graph, tmp_path, "text"):
        _check(tb.verify(src, dst, inputs={"tokens": tokens}, rtol=1e-5, atol=0))


@pytest.mark.parametrize("causal", [False, True])
def test_keras_multi_head_attention_model(causal, tmp_path):
    model, shape = keras_zoo.attention_model(causal)
    src = tmp_path / "attention.keras"
    model.save(src)
    graph = tb.load(src)
    assert graph.op_histogram()["MultiHeadAttention"] == 1
    assert any(n.attrs.get("is_causal") for n in graph.nodes) == causal
    x = np.random.default_rng(2).standard_normal((2, *shape)).astype(np.float32)
    for dst in _targets(graph, tmp_path, "attention"):
        _check(tb.verify(src, dst, inputs={"sequence": x}, rtol=1e-5, atol=0))
    # the layer stays one layer where the target has it
    for to, layer in (("keras", "layers.MultiHeadAttention("), ("flax", "nnx.MultiHeadAttention(")):
        dst = tb.save(graph, tmp_path / f"attention_{to}", to=to)
        assert (dst / "model.py").read_text().count(layer) == 1
        _check(tb.verify(src, dst, inputs={"sequence": x}, rtol=1e-5, atol=0, trust_code=True))


def test_in_memory_keras_model_and_ir_reference():
    model, shape = keras_zoo.application("MobileNetV2")
    graph = tb.load(model)
    x = np.random.default_rng(3).standard_normal((1, *shape)).astype(np.float32)
    r = compare("y", "y", np.asarray(model(x, training=False)), tb.run(graph, {graph.inputs[0].name: x})[
        graph.outputs[0].name], rtol=1e-5, atol=0)
    assert r.ok, r
    assert graph.inputs[0].shape[0] == "batch"
    assert any(n.attrs.get("layout") == "NHWC" for n in graph.nodes)  # faithful to Keras's layout


def test_int8_tflite_loads_in_qdq_form_with_its_parameters(tmp_path):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    x_in = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(8, 3, activation="relu")(x_in)
    x = keras.layers.DepthwiseConv2D(3, padding="same")(x)
    model = keras.Model(x_in, keras.layers.Dense(5)(keras.layers.GlobalAveragePooling2D()(x)))
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    converter.representative_dataset = lambda: ([rng.standard_normal((1, 16, 16, 3)).astype(np.float32)]
                                                for _ in range(20))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    path = tmp_path / "int8.tflite"
    path.write_bytes(converter.convert())
    graph = tb.load(path)
    hist = graph.op_histogram()
    assert hist["DequantizeLinear"] >= 4 and hist["QuantizeLinear"] >= 3, hist
    assert graph.inputs[0].quant is not None and graph.inputs[0].dtype == np.int8
    per_channel = [v for v in graph.constants.values() if v.quant is not None and v.quant.axis is not None]
    assert per_channel, "per-channel weight scales must survive the import"
    report = tb.verify(path, tb.save(graph, tmp_path / "int8.tbir"), rtol=0, atol=1)  # within 1 LSB
    assert report.ok, report.summary()


def test_keras_attention_with_a_padding_mask(tmp_path):
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    x_in = keras.Input((6, 16), name="sequence")
    m_in = keras.Input((6, 6), dtype="bool", name="mask")
    y = layers.MultiHeadAttention(num_heads=2, key_dim=8)(x_in, x_in, attention_mask=m_in)
    model = keras.Model([x_in, m_in], layers.Dense(4)(y))
    src = tmp_path / "masked.keras"
    model.save(src)
    graph = tb.load(src)
    rng = np.random.default_rng(4)
    mask = np.tril(np.ones((6, 6), bool))[None].repeat(2, 0)
    mask[1, 3] = False  # a query that sees no key: Keras averages every value there
    feeds = {"sequence": rng.standard_normal((2, 6, 16)).astype(np.float32), "mask": mask}
    assert graph.op_histogram()["MultiHeadAttention"] == 1
    extra = [tb.save(graph, tmp_path / f"masked_{to}", to=to) for to in ("keras", "flax")]
    for dst in _targets(graph, tmp_path, "masked") + extra + [tb.save(graph, tmp_path / "masked.tflite")]:
        _check(tb.verify(src, dst, inputs=feeds, rtol=1e-5, atol=0, trust_code=True), classifier=False)
    for folder, layer in zip(extra, ("layers.MultiHeadAttention(", "nnx.MultiHeadAttention(")):
        assert layer in (folder / "model.py").read_text()
