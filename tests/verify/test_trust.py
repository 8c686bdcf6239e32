"""Verification a user can trust: no vacuous PASS, any valid ONNX file runs, open dims get sizes the model
accepts (or a clear request), and a wrong conversion leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.cli.main import EXIT_INCONCLUSIVE, main
from tensorbridge.errors import ModelError
from tests.conftest import make_model


def _tensor(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def constant_output_model(path):
    """x -> x * 0 + 0.001: the same output whatever the input, like a softmax of random weights."""
    zero = numpy_helper.from_array(np.zeros(1, np.float32), "zero")
    c = numpy_helper.from_array(np.full(1, 0.001, np.float32), "c")
    nodes = [helper.make_node("Mul", ["x", "zero"], ["m"]), helper.make_node("Add", ["m", "c"], ["y"])]
    onnx.save(make_model(nodes, [_tensor("x", [2, 10])], [_tensor("y", [2, 10])], [zero, c]), path)
    return path


def test_a_constant_output_is_inconclusive(tmp_path):
    src = constant_output_model(tmp_path / "constant.onnx")
    report = tb.verify(src, src)
    assert report.ok and not report.conclusive and report.status == "INCONCLUSIVE"
    reason = report.outputs[0].inconclusive
    assert "same for two different inputs" in reason or "no spread" in reason
    assert "logits" in report.summary()
    assert main(["-q", "verify", str(src), str(src)]) == EXIT_INCONCLUSIVE


def test_a_varying_output_is_conclusive(small_cnn_path):
    report = tb.verify(small_cnn_path, small_cnn_path)
    assert report.status == "PASS" and report.conclusive


def test_an_ir_14_model_verifies(tmp_path):
    """onnx 1.23's helper.make_model writes IR version 14; onnxruntime 1.31 reads 13."""
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [_tensor("x", [2, 5])], [_tensor("y", [2, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    assert model.ir_version == 14
    path = tmp_path / "ir14.onnx"
    onnx.save(model, path)
    report = tb.verify(path, path)
    assert report.ok and any("IR version 14 was lowered to 13" in n for n in report.notes)
    out = tmp_path / "ir14.tbir"
    assert main(["-q", "convert", str(path), "-o", str(out)]) == 0 and out.exists()


def ocr_like_model(path):
    """Conv stride 2 five times on an open H x W: a 32x downsampling, as text detectors have."""
    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "x"
    for i in range(5):
        w = numpy_helper.from_array(rng.standard_normal((4, 3 if i == 0 else 4, 3, 3)).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], strides=[2, 2], pads=[0, 0, 0, 0]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x = f"r{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    onnx.save(make_model(nodes, [_tensor("x", [1, 3, "height", "width"])], [_tensor("y", [1, 4, 1, 1])], inits), path)
    return path


def test_open_dims_get_sizes_the_model_accepts(tmp_path):
    src = ocr_like_model(tmp_path / "ocr.onnx")
    report = tb.verify(src, src)
    h, w = report.inputs["x"]["shape"][2:]
    assert report.ok and h == w and h >= 63  # five valid 3x3 stride-2 convolutions need at least 63 pixels
    assert tb.verify(src, src, input_shapes={"x": [1, 3, 100, 80]}).inputs["x"]["shape"] == [1, 3, 100, 80]


def test_a_size_the_runtime_rejects_is_a_clear_error(tmp_path):
    src = ocr_like_model(tmp_path / "ocr.onnx")
    code = main(["-q", "verify", str(src), str(src), "--input-shape", "x=1,3,8,8"])
    assert code == 2


def test_a_size_too_small_for_the_model_is_refused_when_loading(tmp_path, capsys):
    src = ocr_like_model(tmp_path / "ocr.onnx")
    out = tmp_path / "ocr_torch"
    assert main(["-q", "convert", str(src), "-o", str(out), "--to", "torch", "--input-shape", "x=1,3,8,8"]) == 2
    err = capsys.readouterr().err
    assert "--input-shape" in err and "dim -1" in err and not out.exists()


def test_a_conversion_that_cannot_be_verified_exits_2_and_leaves_nothing(small_cnn_path, tmp_path, capsys,
                                                                       monkeypatch):
    from tensorbridge.verification import harness

    def runtime_fails(*args, **kwargs):  # the fault: the target's runtime cannot run the inputs
        raise ModelError("the target model failed on inputs x [1, 3, 8, 8]")

    monkeypatch.setattr(harness, "verify", runtime_fails)
    out = tmp_path / "cnn_torch"
    args = ["-q", "convert", str(small_cnn_path), "-o", str(out), "--to", "torch"]
    assert main(args) == 2
    assert not out.exists() and "could not be verified" in capsys.readouterr().err
    assert main([*args, "--keep-failed"]) == 2 and out.exists()


def test_a_wrong_conversion_exits_1_and_leaves_nothing(small_cnn_path, tmp_path, monkeypatch):
    from tensorbridge.codegen import pyast as P
    from tensorbridge.rules.torch import REGISTRY

    rule = REGISTRY.export_rule("Relu")  # the fault: ReLU written as a sigmoid
    monkeypatch.setitem(REGISTRY._exports, "Relu", type(rule)(rule.ops, lambda em, node: em.out(
        node, P.call("torch.sigmoid", em.tensor(node.inputs[0])))))
    out = tmp_path / "cnn_torch"
    assert main(["-q", "convert", str(small_cnn_path), "-o", str(out), "--to", "torch"]) == 1
    assert not out.exists() and not list(tmp_path.glob(".cnn_torch*"))
    assert main(["-q", "convert", str(small_cnn_path), "-o", str(out), "--to", "torch", "--keep-failed"]) == 1
    assert out.exists()


def test_convert_verifies_by_default_and_says_what_it_compared(small_cnn_path, tmp_path):
    p = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(small_cnn_path), "-o",
                        str(tmp_path / "c.tbir")], capture_output=True, text=True)
    assert p.returncode == 0 and "PASS" in p.stdout and "max|d|" in p.stdout
    p = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(small_cnn_path), "-o",
                        str(tmp_path / "d.tbir"), "--no-verify"], capture_output=True, text=True)
    assert p.returncode == 0 and "PASS" not in p.stdout


def test_nothing_from_tensorflow_reaches_the_user(tmp_path):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.save(tmp_path / "k.keras")
    p = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(tmp_path / "k.keras"), "-o",
                        str(tmp_path / "k.onnx")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for noise in ("absl", "oneDNN", "cpu_feature_guard", "I0000", "W0000", "UserWarning", "tensorflow/", "keras/src"):
        assert noise not in p.stderr + p.stdout, (noise, p.stderr)


def _report_with_a_divergence(tmp_path):
    """A torch-code target with one faulty layer, verified per layer into an HTML report."""
    from tests.models import torch_zoo

    _, _, graph = torch_zoo.imported("resnet18", batch=1, size=32)
    src = tb.save(graph, tmp_path / "resnet.onnx")
    dst = tb.save(graph, tmp_path / "resnet_torch", to="torch")
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(dst / "weights.safetensors"))
    key = next(k for k in weights if "layer2" in k and "conv1" in k and k.endswith("weight"))
    weights[key] = weights[key] * 1.5
    save_file(weights, str(dst / "weights.safetensors"))
    html_path = tmp_path / "report.html"
    code = main(["-q", "verify", str(src), str(dst), "--per-layer", "--report", str(html_path)])
    return code, html_path


def test_html_report_holds_the_verdict_the_metrics_and_the_curve(tmp_path):
    from html.parser import HTMLParser

    code, path = _report_with_a_divergence(tmp_path)
    assert code == 1
    text = path.read_text()

    class Parts(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags, self.h2 = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

        def handle_data(self, data):
            if self.tags and self.tags[-1] == "h2":
                self.h2.append(data)

    parts = Parts()
    parts.feed(text)
    assert {"Outputs", "Per layer", "Inputs"} <= set(parts.h2)
    assert parts.tags.count("circle") > 20 and "polyline" in parts.tags and "FAIL" in text
    assert "first divergence" in text and "http" not in text.replace("http://www.w3.org/2000/svg", "")


def test_html_report_renders_in_a_real_browser(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium installed (Debian's `chromium` package): the browser check needs one")
    _, path = _report_with_a_divergence(tmp_path)
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,900",
                    f"--screenshot={shot}", path.as_uri()], capture_output=True, timeout=120, check=False)
    assert shot.exists(), "Chromium wrote no screenshot"
    pixels = _png_pixels(shot)
    red = (pixels[..., 0] > 180) & (pixels[..., 1] < 80) & (pixels[..., 2] < 80)
    blue = (pixels[..., 0] < 60) & (pixels[..., 1] < 120) & (pixels[..., 2] > 160)
    assert blue.sum() > 500, "the error curve was not drawn"
    assert red.sum(axis=0).max() > 100, "no divergence mark: a red line down the chart at the first diverging value"


def _png_pixels(path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB"))


def test_integer_inputs_stay_within_the_tables_they_index(tmp_path):
    """Token ids index a table of 50 rows and token types one of 2: drawn inputs stay below each (Keras's embedding
    fails on an index past its table), through the casts between."""
    from tensorbridge.ops.integer_range import index_limits
    from tensorbridge.verification.inputs import make_inputs

    words, types = (numpy_helper.from_array(np.ones((n, 4), np.float32), name) for n, name in ((50, "w"), (2, "t")))
    nodes = [helper.make_node("Gather", ["w", "ids"], ["a"]), helper.make_node("Cast", ["kinds"], ["k"], to=7),
             helper.make_node("Gather", ["t", "k"], ["b"]), helper.make_node("Add", ["a", "b"], ["y"])]
    src = tmp_path / "tables.onnx"
    inputs = [_tensor("ids", [1, 30], TensorProto.INT64), _tensor("kinds", [1, 30], TensorProto.INT32)]
    onnx.save(make_model(nodes, inputs, [_tensor("y", [1, 30, 4])], [words, types]), src)
    limits = index_limits(tb.load(src))
    assert limits == {"ids": 50, "kinds": 2}
    feeds = make_inputs([("ids", "int64", (1, 30)), ("kinds", "int32", (1, 30))], limits=limits)
    assert feeds["kinds"].max() == 1 and feeds["ids"].max() > 1
    assert tb.verify(src, src).ok
