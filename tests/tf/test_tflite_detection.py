"""TFLite_Detection_PostProcess, the custom op ending TensorFlow's object-detection SSD models, made as TensorFlow's
detection exporter makes it (a function implementing the op, fused by the converter) and read against LiteRT:
boxes decoded against the anchors, the best class per box, one NMS, outputs padded to max_detections."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError
from tensorbridge.reference.interpreter import run

tf = pytest.importorskip("tensorflow")
from tests.tf.seeded import litert_outputs  # noqa: E402

BOXES, CLASSES, MAX_DETECTIONS = 40, 3, 12


def _options(**given) -> str:
    values = {"max_detections": ("i", MAX_DETECTIONS), "max_classes_per_detection": ("i", 1),
              "detections_per_class": ("i", 100), "use_regular_nms": ("b", "false"),
              "nms_score_threshold": ("f", 0.3), "nms_iou_threshold": ("f", 0.5), "y_scale": ("f", 10.0),
              "x_scale": ("f", 10.0), "h_scale": ("f", 5.0), "w_scale": ("f", 5.0), "num_classes": ("i", CLASSES)}
    values.update(given)
    return 'name: "TFLite_Detection_PostProcess"\n' + "".join(
        f'attr {{ key: "{k}" value {{ {kind}: {v} }} }}\n' for k, (kind, v) in values.items())


def _detector(path, options: str, anchors: np.ndarray) -> None:
    @tf.function(experimental_implements=options)
    def postprocess(box_encodings, class_predictions, anchors):  # the converter puts the custom op in its place
        nothing = tf.constant(0.0)
        return nothing, nothing, nothing, nothing

    @tf.function(input_signature=[tf.TensorSpec([1, BOXES, 4], tf.float32),
                                  tf.TensorSpec([1, BOXES, CLASSES + 1], tf.float32)])
    def detect(encodings, logits):
        return postprocess(encodings, tf.sigmoid(logits), tf.constant(anchors))

    module = tf.Module()
    module.detect = detect
    tf.saved_model.save(module, str(path.with_suffix("")), signatures=detect.get_concrete_function())
    converter = tf.lite.TFLiteConverter.from_saved_model(str(path.with_suffix("")))
    converter.allow_custom_ops = True
    path.write_bytes(converter.convert())


@pytest.fixture(scope="module")
def seeded():
    rng = np.random.default_rng(3)
    anchors = np.concatenate([rng.uniform(0.2, 0.8, (BOXES, 2)), rng.uniform(0.1, 0.4, (BOXES, 2))], 1)
    inputs = [rng.normal(0, 1, (1, BOXES, 4)).astype(np.float32),
              rng.normal(0, 1.5, (1, BOXES, CLASSES + 1)).astype(np.float32)]
    return anchors.astype(np.float32), inputs


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("threshold", [0.3, 0.85], ids=["full", "padded"])
def test_detection_postprocess_reads_as_litert_computes(threshold, regular, seeded, tmp_path):
    """The fast form (one NMS over each box's best class) and the regular one (an NMS per class, up to
    detections_per_class each, then the best of all)."""
    anchors, inputs = seeded
    path = tmp_path / "detector.tflite"
    _detector(path, _options(nms_score_threshold=("f", threshold), use_regular_nms=("b", str(regular).lower()),
                             detections_per_class=("i", 5)), anchors)
    graph = tb.load(path)
    assert "NonMaxSuppression" in {n.op for n in graph.nodes}
    got = run(graph, dict(zip([v.name for v in graph.inputs], inputs)))
    expected = litert_outputs(path, inputs)
    count = int(expected[graph.outputs[3].name][0])
    assert (count == MAX_DETECTIONS) == (threshold == 0.3) and count > 0  # both cases are what they claim
    np.testing.assert_array_equal(got[graph.outputs[3].name], expected[graph.outputs[3].name])
    for v in graph.outputs[:3]:  # LiteRT leaves the rows past the count as they were in memory; here they are 0
        np.testing.assert_allclose(got[v.name][:, :count], expected[v.name][:, :count], rtol=1e-6, atol=1e-6,
                                   err_msg=v.name)
        assert not got[v.name][:, count:].any()


@pytest.mark.parametrize("regular", ["false", "true"], ids=["fast", "regular"])
def test_detector_converts_to_onnx_and_pytorch_verified(regular, seeded, tmp_path):
    anchors, _ = seeded
    path = tmp_path / "detector.tflite"
    _detector(path, _options(use_regular_nms=("b", regular)), anchors)
    for to, dest in (("onnx", tmp_path / "detector.onnx"), ("torch", tmp_path / "detector_torch")):
        assert tb.convert(path, dest, to=to, verify=True).status == "PASS"


def test_several_classes_per_detection_are_refused_with_the_reason(seeded, tmp_path):
    anchors, _ = seeded
    path = tmp_path / "detector.tflite"
    _detector(path, _options(max_classes_per_detection=("i", 2)), anchors)
    with pytest.raises(ModelError, match="max_classes_per_detection"):
        tb.load(path)
