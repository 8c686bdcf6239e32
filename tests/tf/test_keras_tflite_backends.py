"""Keras code and TFLite out: PyTorch and Keras models -> Keras code / TFLite, run against the source.

max|d| / max|ref| <= 1e-5 in float32 (<= 1e-3 with --fp16), top-10 agreement 100% on class
scores. Generated Keras code passes ruff and survives hostile names.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError

pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")
from tests.generated_lint import RUFF, ruff_check  # noqa: E402
from tests.models import faithful, keras_zoo  # noqa: E402
from tests.models.layout_models import transposes_in  # noqa: E402
from tests.models.torch_zoo import ZOO, imported  # noqa: E402

TORCH_MODELS = ["resnet18", "mobilenet_v2", "transformer_encoder", "lstm_tagger", "bert", "gpt2"]
CNNS = {"resnet18", "mobilenet_v2"}


def _ok(report, rtol=1e-5, classifier=False):
    out = report.outputs[0]
    assert out.robust_rel <= rtol, report.summary()
    if classifier and "top10" in out.topk:
        assert out.topk["top10"] == 1.0, report.summary()


@pytest.mark.parametrize("name", TORCH_MODELS)
def test_torch_models_to_keras_code_and_tflite(name, tmp_path):
    """With --io-layout target the CNNs take NHWC images and keep no TRANSPOSE inside."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module, args, classifier = ZOO[name]()
        graph = tb.load(module, example_inputs=args)
    src = tb.save(graph, tmp_path / f"{name}.onnx")  # the source runtime stands in for PyTorch here
    feeds = {v.name: a.numpy() for v, a in zip(graph.inputs, args)}
    with torch.no_grad():
        expected = module(*args).numpy()
    from tensorbridge.verification.compare import compare
    from tensorbridge.verification.runners.tf import KerasRunner, TFLiteRunner

    cnn = name in CNNS
    layout = tb.LayoutOptions(io_layout="target")
    target_feeds = {k: np.transpose(v, (0, 2, 3, 1)) if cnn else v for k, v in feeds.items()}
    for dst, runner in ((tb.save(graph, tmp_path / f"{name}_keras", to="keras", layout=layout), KerasRunner),
                        (tb.save(graph, tmp_path / f"{name}.tflite", layout=layout), TFLiteRunner)):
        got = list(runner(dst).run(target_feeds).values())[0]
        r = compare("y", "y", expected, got, rtol=1e-5, atol=0)
        assert r.ok, (dst, r)
        if cnn:
            assert transposes_in(dst) == 0, dst
        _ok(tb.verify(src, dst, inputs=feeds, rtol=1e-5, atol=0), classifier=classifier)


@pytest.mark.parametrize("name", [  # make test's matrix check takes MobileNetV3Small to Keras code and TFLite
    pytest.param(n, marks=pytest.mark.slow)
    for n in ("MobileNetV2", "ResNet50", "EfficientNetB0", "InceptionV3", "DenseNet121", "NASNetMobile")])
def test_keras_applications_to_keras_code_and_tflite(name, tmp_path):
    model, shape = keras_zoo.application(name)
    src = tmp_path / f"{name}.keras"
    model.save(src)
    graph = tb.load(src)
    x = np.random.default_rng(0).standard_normal((1, *shape)).astype(np.float32)
    feeds = {graph.inputs[0].name: x}
    truth = faithful.float64_truth(graph, feeds)
    faithful.check(tb.verify(src, tb.save(graph, tmp_path / f"{name}_keras", to="keras"), inputs=feeds), truth)
    tflite = tb.verify(src, tb.save(graph, tmp_path / f"{name}.tflite"), inputs=feeds, per_layer=True)
    faithful.check(tflite, truth)
    assert tflite.first_divergence["op"] is None, tflite.first_divergence  # its tensors carry IR names
    fp16 = tb.save(graph, tmp_path / f"{name}_fp16.tflite", fp16=True)
    assert fp16.stat().st_size < 0.6 * (tmp_path / f"{name}.tflite").stat().st_size
    # the float16 file computes what TF's own converter makes of the source model with --fp16
    from tensorbridge.verification.runners.tf import TFLiteRunner

    keras_zoo.to_tflite(model, tmp_path / f"{name}_tf_fp16.tflite", fp16=True)
    ours, theirs = TFLiteRunner(fp16), TFLiteRunner(tmp_path / f"{name}_tf_fp16.tflite")
    a, b = (list(r.run({r.inputs[0][0]: x}).values())[0] for r in (ours, theirs))
    assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max(), (name, np.abs(a - b).max() / np.abs(b).max())


# Float16 weight storage moves calibrated logits by 1e-2 of their range (docs/tflite.md): the float16 file is
# held to TF's own converter run on the source model with its float16 path, within 1e-5.




@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
def test_generated_keras_code_is_lint_clean_and_safe(tmp_path, monkeypatch):
    from tests.torch.test_codegen import _hostile_model

    monkeypatch.chdir(tmp_path)
    src = tmp_path / "hostile.onnx"
    onnx.save(_hostile_model(), src)
    folder = tb.save(tb.load(src), tmp_path / "gen_keras", to="keras")
    assert tb.verify(src, folder, rtol=1e-5).ok
    assert not (tmp_path / "PWNED").exists()
    p = ruff_check(folder)
    assert p.returncode == 0, p.stdout + p.stderr
    from tensorbridge.codegen.folder import load_folder

    model = load_folder(folder).load_model()
    assert model.count_params() > 0


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize("name", ["resnet18", "bert"])
def test_generated_keras_code_reads_like_hand_written(name, tmp_path):
    folder = tb.save(imported(name)[2], tmp_path / name, to="keras")
    p = ruff_check(folder)
    assert p.returncode == 0, p.stdout + p.stderr
    code = (folder / "model.py").read_text()
    assert "dilation_rate=1" not in code and "groups=1" not in code  # only non-default arguments


def test_per_layer_names_a_faulty_keras_layer(tmp_path):
    _, _, graph = imported("resnet18", size=32)
    src = tb.save(graph, tmp_path / "resnet.onnx")
    folder = tb.save(graph, tmp_path / "resnet_keras", to="keras")
    from tensorbridge.codegen.folder import load_folder

    model = load_folder(folder).load_model()
    layer = model.get_layer("layer3_0_conv2")
    kernel, = layer.get_weights()
    layer.set_weights([kernel * 1.5])
    model.save(str(folder / "model.keras"))
    report = tb.verify(src, folder, per_layer=True)
    assert not report.ok
    assert report.first_divergence["node"] == "layer3.0.conv2", report.first_divergence


def test_per_layer_names_a_faulty_tflite_kernel(tmp_path):
    """Tensors of the converter-made .tflite carry IR value names; conv2's weights, with its BatchNorm
    folded in, are scaled, and the fused kernel's output (the BatchNorm's value) is named."""
    from tensorflow.lite.tools import flatbuffer_utils

    _, _, graph = imported("resnet18", size=32)
    src = tb.save(graph, tmp_path / "resnet.onnx")
    dst = tb.save(graph, tmp_path / "resnet.tflite")
    clean = tb.verify(src, dst, per_layer=True, rtol=1e-5)
    assert clean.ok and clean.first_divergence["op"] is None and clean.first_divergence["values_compared"] >= 25
    fb = flatbuffer_utils.read_model(str(dst))
    sg = fb.subgraphs[0]
    conv = next(op for op in sg.operators if sg.tensors[op.outputs[0]].name.startswith(b"layer3.0.bn2"))
    weights = fb.buffers[sg.tensors[conv.inputs[1]].buffer]
    weights.data = (np.frombuffer(bytes(weights.data), np.float32) * 1.5).view(np.uint8)
    flatbuffer_utils.write_model(fb, str(tmp_path / "faulty.tflite"))
    report = tb.verify(src, tmp_path / "faulty.tflite", per_layer=True)
    assert not report.ok
    assert report.first_divergence["node"] == "layer3.0.bn2", report.first_divergence


def test_a_learned_tensor_is_a_trainable_weight_of_the_generated_keras_model(tmp_path):
    import torch

    from tensorbridge.codegen.folder import load_folder

    class PositionalEmbedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = torch.nn.Parameter(torch.randn(1, 5, 8))
            self.proj = torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.proj(x + self.pos)

    torch.manual_seed(0)
    module, x = PositionalEmbedding().eval(), torch.randn(1, 5, 8)
    folder = tb.save(tb.load(module, example_inputs=(x,)), tmp_path / "k", to="keras")
    model = load_folder(folder).load_model()
    weights = {w.path.split("/")[0]: w for w in model.trainable_weights}
    assert "pos" in weights and tuple(weights["pos"].shape) == (1, 5, 8)  # trained with the model, not a constant
    np.testing.assert_allclose(np.asarray(model(x.numpy())), module(x).detach().numpy(), atol=1e-5)
    assert [n.op for n in tb.load(str(folder)).nodes] == ["Add", "Dense"]  # and read back as a weight


def _onnx_graph(tmp_path, name: str, nodes, x_shape, initializers, y_shape=None):
    """A one-input ONNX model of `nodes` (input "x" of `x_shape`, output "y" of `y_shape`), saved and read."""
    from onnx import TensorProto
    from onnx import helper as h

    graph = h.make_graph(nodes, name, [h.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], initializers)
    src = tmp_path / f"{name}.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8), src)
    return tb.load(src)


def _run_written(graph, tmp_path, to: str, feeds):
    """`graph` written as `to` and run in that format's runtime on `feeds` (in its inputs' order): its first
    output."""
    from tensorbridge import trust
    from tensorbridge.verification.harness import runner_for

    dest = tb.save(graph, tmp_path / ("model.tflite" if to == "tflite" else f"model_{to}"), to=to)
    with trust.trusting(True):  # the folder this test wrote
        runner = runner_for(str(dest))
    return runner.run({name: f for (name, _, _), f in zip(runner.inputs, feeds)})[runner.outputs[0]]


@pytest.mark.parametrize("to", ["keras", "tflite"])
def test_a_reshape_computed_from_the_batch_size_keeps_the_batch_open(tmp_path, to):
    """Shape -> Gather -> Concat -> Reshape, as exporters write a flatten that keeps the batch dynamic: the target
    is what shape inference knows ([N, 12]), written with -1; the model runs at any batch size."""
    from onnx import helper as h
    from onnx import numpy_helper as nh

    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             h.make_node("Unsqueeze", ["n", "axis"], ["n1"]), h.make_node("Concat", ["n1", "rest"], ["shape"], axis=0),
             h.make_node("Reshape", ["x", "shape"], ["flat"]), h.make_node("Relu", ["flat"], ["y"])]
    graph = _onnx_graph(tmp_path, "flatten", nodes, ["N", 3, 4],
                        [nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array([0], np.int64), "axis"),
                         nh.from_array(np.array([12], np.int64), "rest")], y_shape=["N", 12])
    x = np.random.default_rng(0).standard_normal((3, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(_run_written(graph, tmp_path, to, [x]), np.maximum(x.reshape(3, 12), 0), rtol=1e-6)


@pytest.mark.parametrize("to", ["keras", "tflite"])
@pytest.mark.parametrize("padding", ["explicit", "same"])
def test_a_strided_dilated_convolution_reaches_keras(tmp_path, to, padding):
    """Keras convolutions take strides or dilations above 1, not both (SKNet's dilated branch at stride 2): the
    convolution is written dilated at stride 1 with every second output kept, plain and depthwise, and an ONNX
    SAME-padded one after its pads are made explicit."""
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(0)
    pads = {"pads": [2, 1, 2, 1]} if padding == "explicit" else {"auto_pad": "SAME_UPPER"}
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], dilations=[2, 2], **pads),
             h.make_node("Conv", ["c", "dw"], ["y"], strides=[2, 1], dilations=[1, 2], group=4, **pads)]
    graph = _onnx_graph(tmp_path, "strided_dilated", nodes, [1, 3, 13, 12],
                        [nh.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
                         nh.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "dw")])
    x = rng.standard_normal((1, 3, 13, 12)).astype(np.float32)
    expected = tb.run(graph, {"x": x})["y"]
    np.testing.assert_allclose(_run_written(graph, tmp_path, to, [x]), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("to", ["keras", "tflite"])
def test_attention_over_values_of_another_depth(tmp_path, to):
    """Values deeper than the queries and keys (iFormer's attention): Keras' dot_product_attention computes them
    but gives the queries' shape while a model is built, so the product is written out."""
    class Deeper(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v).flatten(2) * 2

    rng = np.random.default_rng(0)
    feeds = [rng.standard_normal(s).astype(np.float32) for s in ((1, 2, 5, 4), (1, 2, 6, 4), (1, 2, 6, 7))]
    expected = Deeper()(*map(torch.from_numpy, feeds)).numpy()
    graph = tb.load(Deeper(), example_inputs=tuple(map(torch.from_numpy, feeds)))
    np.testing.assert_allclose(_run_written(graph, tmp_path, to, feeds), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("to", ["keras", "tflite", "flax"])
def test_a_pad_with_negative_widths_crops(tmp_path, to):
    """ONNX's Pad removes where a width is negative (VOLO's fold writes one); Keras, LiteRT and jnp.pad take widths
    of zero or more, so the pad is written as the pad of its positive widths and a slice."""
    from onnx import helper as h
    from onnx import numpy_helper as nh

    if to == "flax":
        pytest.importorskip("flax")
    graph = _onnx_graph(tmp_path, "crop", [h.make_node("Pad", ["x", "pads"], ["y"])], [1, 3, 6, 7],
                        [nh.from_array(np.array([0, 0, -1, 2, 0, 0, 1, -2], np.int64), "pads")])
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 7)).astype(np.float32)
    np.testing.assert_array_equal(_run_written(graph, tmp_path, to, [x]),
                                  np.pad(x, [(0, 0), (0, 0), (0, 1), (2, 0)])[:, :, 1:, :-2])


def _index_arithmetic(tmp_path, name: str, index_node):
    """y = x * float(i // 2 + |i - 3|) for int64 `i` made by `index_node` from x [2, 6] (as "i")."""
    from onnx import TensorProto
    from onnx import helper as h
    from onnx import numpy_helper as nh

    nodes = [index_node,
             h.make_node("Div", ["i", "two"], ["half"]), h.make_node("Sub", ["i", "three"], ["shifted"]),
             h.make_node("Abs", ["shifted"], ["distance"]), h.make_node("Add", ["half", "distance"], ["total"]),
             h.make_node("Cast", ["total"], ["scale"], to=TensorProto.FLOAT), h.make_node("Mul", ["x", "scale"], ["y"])]
    consts = [nh.from_array(np.array(v, np.int64), n) for n, v in (("two", 2), ("three", 3), ("k", [6]))]
    return _onnx_graph(tmp_path, name, nodes, [2, 6], consts, [2, 6])


def test_int64_index_arithmetic_reaches_tflite_in_int32(tmp_path):
    """LiteRT has no int64 division or ABS: indices into an axis (a sort's order, Mixtral's routing) are proven
    to fit int32, so their arithmetic is written in int32 and matches the reference."""
    from onnx import helper as h

    graph = _index_arithmetic(tmp_path, "order", h.make_node("TopK", ["x", "k"], ["values", "i"], axis=1))
    x = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    expected = tb.run(graph, {"x": x})["y"]
    assert len(np.unique(expected / x)) > 2  # the scale varies with the order
    np.testing.assert_allclose(_run_written(graph, tmp_path, "tflite", [x]), expected, rtol=1e-6)


def test_int64_division_of_unbounded_values_is_refused_for_tflite(tmp_path):
    """int64 values cast from floats have no proven bound: narrowing them could wrap, so LiteRT is refused."""
    from onnx import TensorProto
    from onnx import helper as h

    graph = _index_arithmetic(tmp_path, "unbounded", h.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64))
    with pytest.raises(UnsupportedError, match="not proven to lie in int32's range"):
        tb.save(graph, tmp_path / "model.tflite", to="tflite")
    assert not (tmp_path / "model.tflite").exists()


@pytest.mark.parametrize("to", ["keras", "tflite"])
@pytest.mark.parametrize("center_point_box", [0, 1])
def test_non_max_suppression_of_a_detection_head(tmp_path, to, center_point_box):
    """Greedy NMS of many overlapping boxes, two images and three classes, a score threshold and a limit per class
    (as detection models export it): the same rows as onnxruntime, in its order."""
    import onnxruntime as ort
    from onnx import TensorProto
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(0)
    corners = rng.uniform(0, 0.6, (2, 40, 2)).astype(np.float32)
    sizes = rng.uniform(0.3, 0.8, (2, 40, 2)).astype(np.float32)
    boxes = np.concatenate([corners, sizes] if center_point_box else [corners, corners + sizes], axis=-1)
    scores = rng.uniform(0, 1, (2, 3, 40)).astype(np.float32)
    node = h.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou", "score"], ["y"],
                       center_point_box=center_point_box)
    consts = [nh.from_array(np.array([6], np.int64), "limit"), nh.from_array(np.array([0.3], np.float32), "iou"),
              nh.from_array(np.array([0.3], np.float32), "score")]
    onnx_graph = h.make_graph([node], "nms", [h.make_tensor_value_info("boxes", TensorProto.FLOAT, [2, 40, 4]),
                                              h.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3, 40])],
                              [h.make_tensor_value_info("y", TensorProto.INT64, [None, 3])], consts)
    src = tmp_path / "nms.onnx"
    onnx.save(h.make_model(onnx_graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8), src)
    expected = ort.InferenceSession(str(src)).run(None, {"boxes": boxes, "scores": scores})[0]
    per_class = np.bincount(expected[:, 0] * 3 + expected[:, 1], minlength=6)
    assert per_class.max() == 6 and per_class.min() < 6  # the limit and the overlaps both remove boxes
    got = _run_written(tb.load(src), tmp_path, to, [boxes, scores])
    np.testing.assert_array_equal(got, expected)


def test_non_zero_of_a_static_shape_reaches_tflite(tmp_path):
    """LiteRT cannot split WHERE's indices of a computed count (Keras's nonzero): the positions are sorted out
    instead, their number given by the data."""
    from onnx import TensorProto
    from onnx import helper as h
    from onnx import numpy_helper as nh

    nodes = [h.make_node("Greater", ["x", "threshold"], ["mask"]), h.make_node("NonZero", ["mask"], ["y"])]
    graph = h.make_graph(nodes, "nonzero", [h.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2, 4])],
                         [h.make_tensor_value_info("y", TensorProto.INT64, [3, None])],
                         [nh.from_array(np.array(0.3, np.float32), "threshold")])
    src = tmp_path / "nonzero.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8), src)
    loaded = tb.load(src)
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((3, 2, 4)).astype(np.float32)
        got = _run_written(loaded, tmp_path / str(seed), "tflite", [x])
        np.testing.assert_array_equal(got, np.array(np.nonzero(x > 0.3)))
