"""Caffe in and out, checked against Caffe 1.0's own outputs.

`data/layers.prototxt` holds every BVLC Caffe layer the frontend reads; its weights and Caffe's value of every
blob for one image were recorded by tests/caffe/record.py, as were the outputs of the architectures of
tests/caffe/models.py (whose weights the tests regenerate from their seeds), so these tests need no Caffe.
Where the Caffe chroot is set up (`make runtimes`), the live tests run the models the writer produces in it;
without it they skip, saying so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError, UnsupportedError
from tensorbridge.formats.caffe import format_prototxt, messages, read_prototxt, read_weights, write_caffemodel
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.harness import runner_for
from tensorbridge.verification.runners import caffe as runtime
from tests.caffe.models import Net, build, write
from tests.caffe.record import WRITTEN, image, written_zoo_model
from tests.models.faithful import close, digest, float64_truth, image_feeds, no_farther_from_truth

DATA = Path(__file__).with_name("data")
LIVE = pytest.mark.skipif(runtime.missing() is not None, reason=f"no Caffe: {runtime.missing()}")


#: cells where the target and Caffe each round 6e-6 to 9e-6 away from the float64 result, on opposite sides
#: (docs/caffe.md): held to 2e-5 of Caffe, and to the float64 result like every cell
ROUNDING = {("mobilenet_ssd", "tflite"): 2e-5}


@pytest.fixture(scope="module")
def recorded():
    with np.load(DATA / "layers.caffe.npz") as f:
        return dict(f)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tensorbridge", *map(str, args)], capture_output=True, text=True)


def test_every_blob_reads_as_caffe_computed_it(recorded):
    graph = tb.load(DATA / "layers.prototxt")
    got = run(graph, {"data": recorded["data"]}, intermediates=True)
    blobs = set(graph.metadata["caffe"]["blobs"].values()) - {"data"}
    assert blobs <= set(recorded) and len(blobs) > 40
    for name in blobs:
        assert np.std(recorded[name]) > 1e-2, f"{name} is degenerate: the comparison would prove nothing"
        close(name, recorded[name], got[name])
    kinds = {n.meta.get("source_op") for n in graph.nodes}
    assert kinds >= {"Convolution", "Deconvolution", "Pooling", "InnerProduct", "BatchNorm", "Scale", "Bias", "LRN",
                     "PReLU", "ELU", "Eltwise", "Concat", "Slice", "Crop", "Tile", "Power", "Exp", "Log", "BNLL",
                     "Threshold", "Reshape", "Flatten", "Softmax"}


@pytest.mark.parametrize("to", ["onnx", "torch", pytest.param("keras", marks=pytest.mark.slow),
                                pytest.param("tflite", marks=pytest.mark.slow)])
def test_converted_model_computes_what_caffe_did(recorded, tmp_path, to):
    graph = tb.load(DATA / "layers.prototxt")
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
    tb.save(graph, dest, to=to)
    target = runner_for(str(dest))
    out = target.run({target.inputs[0][0]: recorded["data"]})
    assert len(target.outputs) == len(graph.outputs)
    for value, theirs in zip(graph.outputs, target.outputs):
        close(value.name, recorded[value.name], out[theirs])


def test_round_trip_gives_back_every_blob_bit_for_bit(tmp_path):
    tb.save(tb.load(DATA / "layers.prototxt"), tmp_path / "again.prototxt")
    before, after = read_weights(DATA / "layers.caffemodel"), read_weights(tmp_path / "again.caffemodel")
    assert sorted(before) == sorted(after)
    for layer, blobs in before.items():
        assert [b.shape for b in blobs] == [b.shape for b in after[layer]], layer
        assert all(a.tobytes() == b.tobytes() for a, b in zip(blobs, after[layer])), layer
    assert read_prototxt(tmp_path / "again.prototxt").name == "layers"


@LIVE
def test_round_trip_runs_in_caffe_as_the_original(recorded, tmp_path):
    tb.save(tb.load(DATA / "layers.prototxt"), tmp_path / "again.prototxt")
    original, again = runtime.CaffeRunner(DATA / "layers.prototxt"), runtime.CaffeRunner(tmp_path / "again.prototxt")
    feeds = {"data": recorded["data"]}
    assert original.outputs == again.outputs
    for name, value in again.run(feeds).items():
        np.testing.assert_array_equal(value, original.run(feeds)[name])


def _v1_net(tmp_path) -> Path:
    """A net in Caffe's V1 form (`layers`, enum types, blobs in the 4-D legacy shape), as 2014 models are."""
    m = messages()
    net = m.NetParameter(name="v1", input=["data"], input_dim=[1, 2, 6, 6])
    conv = net.layers.add(name="conv", type=m.V1LayerParameter.CONVOLUTION, bottom=["data"], top=["conv"])
    conv.convolution_param.num_output, conv.convolution_param.kernel_size[:] = 3, [3]
    net.layers.add(name="relu", type=m.V1LayerParameter.RELU, bottom=["conv"], top=["conv"])
    fc = net.layers.add(name="fc", type=m.V1LayerParameter.INNER_PRODUCT, bottom=["conv"], top=["fc"])
    fc.inner_product_param.num_output = 4
    rng = np.random.default_rng(0)
    for layer, shapes in ((conv, [(3, 2, 3, 3), (1, 1, 1, 3)]), (fc, [(1, 1, 4, 48), (1, 1, 1, 4)])):
        for shape in shapes:
            blob = layer.blobs.add(num=shape[0], channels=shape[1], height=shape[2], width=shape[3])
            blob.data[:] = rng.standard_normal(int(np.prod(shape))).astype(np.float32)
    (tmp_path / "v1.prototxt").write_text(format_prototxt(m.NetParameter(name="v1", input=["data"],
                                                                         input_dim=[1, 2, 6, 6], layers=[
        m.V1LayerParameter(name=lay.name, type=lay.type, bottom=lay.bottom, top=lay.top,
                           convolution_param=lay.convolution_param, inner_product_param=lay.inner_product_param)
        for lay in net.layers])))
    (tmp_path / "v1.caffemodel").write_bytes(net.SerializeToString())
    return tmp_path / "v1.prototxt"


def test_v1_nets_read_as_caffe_upgrades_them(tmp_path):
    graph = tb.load(_v1_net(tmp_path))
    assert [n.op for n in graph.nodes] == ["Conv", "Relu", "Flatten", "Dense"]
    weights = read_weights(tmp_path / "v1.caffemodel")
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    w, b = weights["conv"][0], weights["conv"][1].reshape(-1)
    conv = np.stack([sum(np.correlate(x[0, c, i + dy, :], w[o, c, dy], "valid") for c in range(2) for dy in range(3))
                     for o in range(3) for i in range(4)]).reshape(3, 4, 4) + b[:, None, None]
    fc_w, fc_b = weights["fc"][0].reshape(4, 48), weights["fc"][1].reshape(-1)
    expected = fc_w @ np.maximum(conv, 0).reshape(-1) + fc_b
    close("fc", expected[None], run(graph, {"data": x})["fc"])


@pytest.mark.parametrize("name", WRITTEN)
def test_pytorch_model_written_as_caffe(tmp_path, name):
    """A torch ResNet (its max pooling rounds down, Caffe's up: the extra row is sliced off) and a MobileNetV2
    (ReLU6, which Caffe 1.0 writes as ReLU, Power and Eltwise) run in Caffe as in PyTorch: Caffe's output of the
    files written, recorded (python -m tests.caffe.record) and, with the chroot, live."""
    prototxt, feeds, expected = written_zoo_model(name, tmp_path)
    with np.load(DATA / f"{name}.written.caffe.npz") as f:
        recorded = dict(f)
    assert str(recorded["digest"]) == digest(prototxt, prototxt.with_suffix(".caffemodel")), \
        "the writer's output changed: record Caffe's output again (python -m tests.caffe.record)"
    close(name, expected, recorded["output"])
    graph = tb.load(prototxt)
    close(name, expected, run(graph, feeds)[graph.outputs[0].name])
    if runtime.missing() is None:
        caffe = runtime.CaffeRunner(prototxt)
        close(name, expected, caffe.run(feeds)[caffe.outputs[0]])


def test_what_caffe_cannot_express_is_listed_at_once(tmp_path):
    import torch
    from torch import nn

    class Odd(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1).permute(0, 2, 3, 1) + torch.erf(x).permute(0, 2, 3, 1)

    with pytest.raises(UnsupportedError) as e:
        tb.save(tb.load(Odd(), example_inputs=(torch.rand(1, 2, 4, 4),)), tmp_path / "m.prototxt")
    message = str(e.value)
    assert "CumSum" in message and "Transpose" in message and "Erf" in message
    assert not list(tmp_path.iterdir())


def test_truncated_or_missing_weights_are_refused(tmp_path):
    shutil.copyfile(DATA / "layers.prototxt", tmp_path / "m.prototxt")
    data = (DATA / "layers.caffemodel").read_bytes()
    (tmp_path / "m.caffemodel").write_bytes(data[:-100])
    done = _cli("convert", tmp_path / "m.prototxt", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2 and "truncated" in done.stderr, done.stderr
    assert not (tmp_path / "m.onnx").exists()
    (tmp_path / "m.caffemodel").unlink()
    with pytest.raises(ModelError, match="needs its weights"):
        tb.load(tmp_path / "m.prototxt")


def test_unknown_layers_and_datasets_are_all_listed(tmp_path):
    text = (DATA / "layers.prototxt").read_text()
    text = text.replace('type: "ELU"', 'type: "Sparkle"').replace('type: "Tile"', 'type: "Wobble"')
    text = 'layer {\n  name: "db"\n  type: "Data"\n  top: "label"\n}\n' + text
    (tmp_path / "m.prototxt").write_text(text)
    shutil.copyfile(DATA / "layers.caffemodel", tmp_path / "m.caffemodel")
    done = _cli("convert", tmp_path / "m.prototxt", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2
    for expected in ("Sparkle", "Wobble", "reads a dataset"):
        assert expected in done.stderr, done.stderr
    (tmp_path / "m.prototxt").write_text(text.replace("negative_slope: 0.1", "negative_slop: 0.1"))
    done = _cli("convert", tmp_path / "m.prototxt", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2 and "negative_slop" in done.stderr, done.stderr
    (tmp_path / "m.prototxt").write_bytes(b"\x00\xff" * 40)
    done = _cli("convert", tmp_path / "m.prototxt", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2 and "not a Caffe prototxt" in done.stderr, done.stderr
    assert not (tmp_path / "m.onnx").exists()


def _ssd_head() -> Net:
    """SSD's head layers on two feature maps: Normalize, Permute, Flatten, Concat, PriorBox."""
    m = Net("ssd_head", (1, 3, 32, 32))
    a = m.conv("data", "conv_a", 8, 3, s=4, p=1)
    m.conv(a, "conv_b", 8, 3, s=2, p=1)
    m.add("Normalize", [a], "a_norm", norm_param={"across_spatial": False, "channel_shared": False})
    flats, priors = [], []
    for feature, sizes in (("a_norm", (8.0, 16.0)), ("conv_b", (16.0, 28.0))):
        loc = m.add("Convolution", [feature], f"{feature}_loc",
                    convolution_param={"num_output": 16, "kernel_size": [1]})
        m.add("Permute", [loc], f"{loc}_perm", permute_param={"order": [0, 2, 3, 1]})
        flats.append(m.add("Flatten", [f"{loc}_perm"], f"{loc}_flat"))
        priors.append(m.add("PriorBox", [feature, "data"], f"{feature}_priors", prior_box_param={
            "min_size": [sizes[0]], "max_size": [sizes[1]], "aspect_ratio": [2.0], "flip": True, "clip": True,
            "variance": [0.1, 0.1, 0.2, 0.2]}))
    m.add("Concat", flats, "mbox_loc")
    m.add("Concat", priors, "mbox_priorbox", concat_param={"axis": 2})
    return m


def test_ssd_layers_read_and_detection_output_is_cut_off(tmp_path):
    net, blobs = build(_ssd_head().net)
    net.layer.add(name="detections", type="DetectionOutput", bottom=["mbox_loc", "mbox_loc", "mbox_priorbox"],
                  top=["detections"]).detection_output_param.num_classes = 2
    (tmp_path / "ssd.prototxt").write_text(format_prototxt(net))
    write_caffemodel(tmp_path / "ssd.caffemodel", net, blobs)
    with pytest.raises(UnsupportedError, match="DetectionOutput.*outputs="):
        tb.load(tmp_path / "ssd.prototxt")
    graph = tb.load(tmp_path / "ssd.prototxt", outputs=["mbox_loc", "mbox_priorbox"])
    x = image((1, 3, 32, 32))
    ours = run(graph, {"data": x}, intermediates=True)
    # PriorBox: 4 priors per pixel (min, sqrt(min*max), ratios 2 and 1/2) on an 8x8 and a 4x4 map of a 32x32 image
    priors = ours["mbox_priorbox"]
    assert priors.shape == (1, 2, (64 + 16) * 4 * 4)
    first = priors[0, 0, :16].reshape(4, 4)  # the pixel at (0, 0): centre (2, 2) pixels, clipped to the image

    def box(w, h):
        return np.clip([(2 - w / 2) / 32, (2 - h / 2) / 32, (2 + w / 2) / 32, (2 + h / 2) / 32], 0, 1)

    side, r = np.sqrt(8 * 16), np.sqrt(2)
    for got, (w, h) in zip(first, [(8, 8), (side, side), (8 * r, 8 / r), (8 / r, 8 * r)]):
        np.testing.assert_allclose(got, box(w, h), atol=1e-6)
    np.testing.assert_allclose(priors[0, 1, :4], [0.1, 0.1, 0.2, 0.2])
    # Normalize: each pixel's channels have unit norm before the scale
    a = ours[graph.metadata["caffe"]["blobs"]["conv_a"]]  # after its in-place ReLU
    expected = a / np.sqrt((a ** 2).sum(axis=1, keepdims=True) + 1e-10) * blobs["a_norm"][0].reshape(1, -1, 1, 1)
    close("a_norm", expected, ours["a_norm"])
    tb.save(graph, tmp_path / "ssd.onnx")
    target = runner_for(str(tmp_path / "ssd.onnx"))
    out = target.run({"data": x})
    for value, theirs in zip(graph.outputs, target.outputs):
        close(value.name, ours[value.name], out[theirs])


def test_upsample_and_interp_of_caffe_forks(tmp_path):
    m = Net("resize", (1, 2, 5, 7))
    m.add("Upsample", ["data"], "up", upsample_param={"scale": 2})
    m.add("Interp", ["data"], "interp", interp_param={"zoom_factor": 2})
    net, blobs = build(m.net)
    (tmp_path / "r.prototxt").write_text(format_prototxt(net))
    write_caffemodel(tmp_path / "r.caffemodel", net, blobs)
    x = image((1, 2, 5, 7))
    got = run(tb.load(tmp_path / "r.prototxt"), {"data": x})
    close("up", x.repeat(2, 2).repeat(2, 3), got["up"])
    # Interp aligns the corners: output pixel i samples input i * (n - 1) / (m - 1), bilinearly
    rows, cols = np.linspace(0, 4, 9), np.linspace(0, 6, 13)
    r0, c0 = np.minimum(rows.astype(int), 3), np.minimum(cols.astype(int), 5)
    fr, fc = (rows - r0)[:, None], (cols - c0)[None, :]
    v = x[0]
    expected = ((1 - fr) * (1 - fc) * v[:, r0][:, :, c0] + (1 - fr) * fc * v[:, r0][:, :, c0 + 1]
                + fr * (1 - fc) * v[:, r0 + 1][:, :, c0] + fr * fc * v[:, r0 + 1][:, :, c0 + 1])
    close("interp", expected[None], got["interp"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["alexnet", "vgg16", "googlenet", "resnet50", "squeezenet", "mobilenet_ssd"])
def test_architectures_convert_as_caffe_computed_them(tmp_path, name):
    """Each architecture, read with its seeded weights, and its conversions to ONNX, PyTorch, Keras and TFLite
    give Caffe's recorded outputs within 1e-5 (probabilities and the logits before them), no farther from the
    net's float64 result than Caffe itself is (x2)."""
    prototxt = write(name, tmp_path / name)
    with np.load(DATA / f"{name}.caffe.npz") as f:
        theirs = dict(f)
    graph = tb.load(prototxt)
    x = image(graph.inputs[0].shape)
    ours = run(graph, {"data": x}, intermediates=True)
    for blob, value in theirs.items():
        assert np.std(value) > 1e-4, f"{blob} does not vary: the comparison would prove nothing"
        close(blob, value, ours[blob])
    truth = float64_truth(graph, {"data": x})
    for to in ("onnx", "torch", "keras", "tflite"):
        dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
        tb.save(graph, dest, to=to)
        target = runner_for(str(dest))
        out = target.run(image_feeds(target, x))
        for value, name_there in zip(graph.outputs, target.outputs):
            close(f"{to} {value.name}", theirs[value.name], out[name_there], ROUNDING.get((name, to), 1e-5))
            no_farther_from_truth(f"{to} {value.name}", theirs[value.name], out[name_there], truth[value.name])


@LIVE
@pytest.mark.slow
@pytest.mark.parametrize("name", ["alexnet", "googlenet", "resnet50", "squeezenet", "mobilenet_ssd"])
def test_architectures_match_caffe_blob_by_blob(tmp_path, name):
    prototxt = write(name, tmp_path / name)
    graph = tb.load(prototxt)
    x = image(graph.inputs[0].shape)
    ours = run(graph, {"data": x}, intermediates=True)
    for value, got in runtime.CaffeRunner(prototxt).run_intermediates({"data": x}).items():
        if value != "data":
            close(value, got, ours[value])
