"""Darknet in and out, checked against libdarknet's own outputs.

The fixture `data/layers.cfg` holds every section and activation of the 2018 library that the frontend reads;
its weights and libdarknet's output of every layer for one image were recorded by tests/darknet/record.py, so
these tests need no Darknet. Where libdarknet is installed (`make runtimes`), the live tests run the stock
cfgs Debian ships and the models the writer produces in it; without it they skip, saying so.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError, UnsupportedError
from tensorbridge.formats.darknet import write_weights
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.harness import runner_for
from tensorbridge.verification.runners import darknet as runtime
from tests.darknet.models import STOCK, build, write
from tests.darknet.record import written_resnet18
from tests.models.faithful import close, digest, float64_truth, image_feeds, no_farther_from_truth

DATA = Path(__file__).with_name("data")
LIVE = pytest.mark.skipif(runtime.missing() is not None, reason=f"no libdarknet: {runtime.missing()}")


@pytest.fixture(scope="module")
def recorded():
    with np.load(DATA / "layers.libdarknet.npz") as f:
        return dict(f)


def test_every_layer_reads_as_libdarknet_computed_it(recorded):
    graph = tb.load(DATA / "layers.cfg")
    got = run(graph, {"input": recorded["input"]}, intermediates=True)
    layers = [n for n in graph.metadata["darknet_layers"] if n is not None]
    assert set(layers) <= set(recorded)
    for name in layers:
        assert np.std(recorded[name]) > 1e-3, f"{name} is degenerate: the comparison would prove nothing"
        close(name, recorded[name], got[name])
    kinds = {n.meta.get("source_op") for n in graph.nodes}
    assert kinds >= {"convolutional", "maxpool", "avgpool", "route", "shortcut", "upsample", "connected", "softmax",
                     "yolo", "region", "activation"}


@pytest.mark.parametrize("to", ["onnx", "torch", pytest.param("keras", marks=pytest.mark.slow),
                                pytest.param("tflite", marks=pytest.mark.slow),
                                pytest.param("flax", marks=pytest.mark.slow)])
def test_converted_model_computes_what_libdarknet_did(recorded, tmp_path, to):
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
    tb.save(tb.load(DATA / "layers.cfg"), dest, to=to)
    target = runner_for(str(dest))
    out = target.run({target.inputs[0][0]: recorded["input"]})
    assert len(target.outputs) == 3  # yolo16, region19, softmax25 (Keras and TFLite name them their own way)
    for name, theirs in zip(["yolo16", "region19", "softmax25"], target.outputs):
        close(name, recorded[name], out[theirs])


def test_every_section_and_activation_is_written_back(recorded, tmp_path):
    """Darknet's piecewise activations (read as arithmetic, recognised by what they compute on a probe) and a
    shortcut's weights come back as Darknet states them: the fixture round-trips bit for bit and, where
    libdarknet is installed, runs as the original did."""
    tb.save(tb.load(DATA / "layers.cfg"), tmp_path / "again.cfg")
    assert filecmp.cmp(DATA / "layers.weights", tmp_path / "again.weights", shallow=False)
    text = (tmp_path / "again.cfg").read_text()
    for option in ("activation=loggy", "activation=ramp", "activation=plse", "activation=lhtan", "beta=0.5"):
        assert option in text
    back = tb.load(tmp_path / "again.cfg")  # its layers are numbered anew (dropout is not written back)
    names = [v.name for v in tb.load(DATA / "layers.cfg").outputs]
    got = run(back, {"input": recorded["input"]})
    live = runtime.DarknetRunner(tmp_path / "again.cfg").run({"input": recorded["input"]}) \
        if runtime.missing() is None else None
    for name, value in zip(names, back.outputs):
        close(name, recorded[name], got[value.name])
        if live is not None:
            close(name, recorded[name], live[value.name])


def test_yolov4_style_cfg_reads_and_round_trips(tmp_path):
    """Mish, swish, route groups and scale_x_y (the YOLOv4 line of Darknet, which the 2018 library lacks): read,
    checked against the reference, and written back bit for bit; the 2018 runtime refuses it with the list."""
    graph, weights = build(DATA / "yolov4-tiny-style.cfg")
    cfg = tmp_path / "v4.cfg"
    shutil.copyfile(DATA / "yolov4-tiny-style.cfg", cfg)
    write_weights(cfg.with_suffix(".weights"), weights.header, weights.arrays)
    graph = tb.load(cfg)
    assert {"Mish", "SiLU", "Slice"} <= set(graph.op_histogram())
    tb.save(graph, tmp_path / "again" / "v4.cfg")
    assert filecmp.cmp(cfg.with_suffix(".weights"), tmp_path / "again" / "v4.weights", shallow=False)
    text = (tmp_path / "again" / "v4.cfg").read_text()
    assert "groups=2" in text and "group_id=1" in text and "scale_x_y=1.05" in text and "activation=mish" in text
    if runtime.missing() is None:
        with pytest.raises(ModelError) as e:
            runtime.DarknetRunner(cfg)
        assert "activation=mish" in str(e.value) and "groups=2" in str(e.value) and "scale_x_y" in str(e.value)


@pytest.mark.parametrize("to", ["onnx", "torch", pytest.param("keras", marks=pytest.mark.slow),
                                pytest.param("tflite", marks=pytest.mark.slow)])
def test_yolov4_style_cfg_converts_as_the_reference_computes_it(tmp_path, to):
    """What the 2018 library cannot run is checked against the reference interpreter, in every target."""
    graph, weights = build(DATA / "yolov4-tiny-style.cfg")
    cfg = tmp_path / "v4.cfg"
    shutil.copyfile(DATA / "yolov4-tiny-style.cfg", cfg)
    write_weights(cfg.with_suffix(".weights"), weights.header, weights.arrays)
    graph = tb.load(cfg)
    image = np.random.default_rng(5).uniform(0, 1, graph.inputs[0].shape).astype(np.float32)
    expected = run(graph, {"input": image})
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
    tb.save(graph, dest, to=to)
    target = runner_for(str(dest))
    out = target.run(image_feeds(target, image))
    for value, there in zip(graph.outputs, target.outputs):
        assert np.std(expected[value.name]) > 1e-3
        got = np.asarray(out[there])
        close(value.name, expected[value.name], got if got.shape == expected[value.name].shape else
               got.transpose(0, 3, 1, 2))


def _torch_detector():
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.LeakyReLU(0.1))
            self.down = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.Sigmoid())
            self.mix = nn.Conv2d(16, 12, 1)
            self.head = nn.Linear(12, 5)

        def forward(self, x):
            y = self.stem(x)
            z = self.down(y) + nn.functional.max_pool2d(y, 2)
            z = torch.cat([z, nn.functional.interpolate(nn.functional.max_pool2d(z, 2), scale_factor=2.0)], 1)
            z = torch.tanh(self.mix(z))
            return torch.softmax(self.head(z.mean((2, 3), keepdim=True).flatten(1)), -1)

    torch.manual_seed(0)
    model = Block().eval()
    with torch.no_grad():
        model.stem[1].running_mean.uniform_(-0.2, 0.2)
        model.stem[1].running_var.uniform_(0.5, 2)
    return model, torch.rand(1, 3, 16, 16)


def test_pytorch_model_written_as_darknet(tmp_path):
    model, x = _torch_detector()
    graph = tb.load(model, example_inputs=(x,))
    tb.save(graph, tmp_path / "m.cfg")
    text = (tmp_path / "m.cfg").read_text()
    assert "[shortcut]" in text and "[route]" in text and "batch_normalize=1" in text and "[connected]" in text
    back = tb.load(tmp_path / "m.cfg")
    feeds = {"input": x.numpy()}
    expected = model(x).detach().numpy()
    close("out", expected, run(back, feeds)[back.outputs[0].name])
    if runtime.missing() is None:
        out = runtime.DarknetRunner(tmp_path / "m.cfg").run(feeds)
        close("out", expected, out[back.outputs[0].name])


def test_zoo_resnet_written_as_darknet_runs_in_libdarknet(tmp_path):
    """The zoo's ResNet-18 has strided 1x1 shortcut convolutions, which libdarknet computes on the unstrided input
    (0.46 off before the writer sampled the input first): libdarknet's output of the files written, recorded
    (python -m tests.darknet.record) and, where it is installed, live, is PyTorch's."""
    cfg, x, expected = written_resnet18(tmp_path)
    assert "[maxpool]\nsize=1\nstride=2" in cfg.read_text()
    with np.load(DATA / "resnet18.written.libdarknet.npz") as f:
        recorded = dict(f)
    assert str(recorded["digest"]) == digest(cfg, cfg.with_suffix(".weights")), \
        "the writer's output changed: record libdarknet's output again (python -m tests.darknet.record)"
    close("resnet18", expected, recorded["output"].reshape(expected.shape))
    if runtime.missing() is None:
        close("resnet18", expected, next(iter(runtime.DarknetRunner(cfg).run({"input": x}).values())))


def test_the_2018_runner_refuses_strided_1x1_convolutions():
    """A cfg's strided 1x1 convolution means a strided one (AlexeyAB's Darknet computes it so); the 2018 library
    would compute something else, so its runner says so instead of reporting a difference."""
    from tensorbridge.formats.darknet import parse_cfg

    cfg = "[net]\nwidth=8\nheight=8\nchannels=3\n\n[convolutional]\nfilters=4\nsize=1\nstride=2\n" \
          "activation=linear\n\n[convolutional]\nfilters=4\nsize=1\nstride=1\nactivation=linear\n"
    assert [p.split(": ", 1)[1] for p in runtime.unsupported(parse_cfg(cfg))] == [
        "a 1x1 convolution with stride=2 (the library computes it on the unstrided input)"]


def test_what_darknet_cannot_express_is_listed_at_once(tmp_path):
    import torch
    from torch import nn

    class Odd(nn.Module):
        def forward(self, x):
            return nn.functional.gelu(x) * 3 + torch.cumsum(x, 1)

    with pytest.raises(UnsupportedError) as e:
        tb.save(tb.load(Odd(), example_inputs=(torch.rand(1, 2, 4, 4),)), tmp_path / "m.cfg")
    message = str(e.value)
    assert "CumSum" in message and ("Gelu" in message or "Erf" in message or "Mul" in message)
    assert not list(tmp_path.iterdir())


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tensorbridge", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("damage", ["truncated", "extra", "header"])
def test_damaged_weights_are_refused(tmp_path, damage):
    shutil.copyfile(DATA / "layers.cfg", tmp_path / "m.cfg")
    data = (DATA / "layers.weights").read_bytes()
    data = {"truncated": data[:-100], "extra": data + b"\0" * 8, "header": data[:10]}[damage]
    (tmp_path / "m.weights").write_bytes(data)
    done = _cli("convert", tmp_path / "m.cfg", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2, done.stderr
    assert {"truncated": "truncated", "extra": "do not belong together", "header": "shorter than its header"}[damage] \
        in done.stderr
    assert not (tmp_path / "m.onnx").exists()


def test_unknown_sections_options_and_activations_are_all_listed(tmp_path):
    text = (DATA / "layers.cfg").read_text()
    text = text.replace("activation=relie", "activation=sparkle", 1).replace("[dropout]", "[wobble]\nx=1\n\n[dropout]")
    text = text.replace("filters=8\n", "filters=8\nantialiasing=1\n", 1)
    (tmp_path / "m.cfg").write_text(text)
    shutil.copyfile(DATA / "layers.weights", tmp_path / "m.weights")
    done = _cli("convert", tmp_path / "m.cfg", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2
    for expected in ("sparkle", "[wobble]", "antialiasing"):
        assert expected in done.stderr, done.stderr
    assert not (tmp_path / "m.onnx").exists()


def test_a_cfg_needs_its_weights(tmp_path):
    shutil.copyfile(DATA / "layers.cfg", tmp_path / "m.cfg")
    with pytest.raises(ModelError, match="needs its weights"):
        tb.load(tmp_path / "m.cfg")
    (tmp_path / "bad.cfg").write_bytes(b"\x00\xff" * 50)
    shutil.copyfile(DATA / "layers.weights", tmp_path / "bad.weights")
    with pytest.raises(ModelError, match="not a valid Darknet cfg|not text"):
        tb.load(tmp_path / "bad.cfg")


@LIVE
@pytest.mark.parametrize("name", ["yolov3-tiny", "resnet18", pytest.param("yolov2-tiny", marks=pytest.mark.slow),
                                  pytest.param("darknet53", marks=pytest.mark.slow),
                                  pytest.param("densenet201", marks=pytest.mark.slow),
                                  pytest.param("yolov3", marks=pytest.mark.slow)])
def test_stock_cfgs_match_libdarknet_layer_by_layer(tmp_path, name):
    cfg = write(STOCK / f"{name}.cfg", tmp_path / name)
    graph = tb.load(cfg)
    image = np.random.default_rng(5).uniform(0, 1, graph.inputs[0].shape).astype(np.float32)
    live = runtime.DarknetRunner(cfg).run_intermediates({"input": image})
    ours = run(graph, {"input": image}, intermediates=True)
    for value, got in live.items():  # libdarknet sums in float32: deep models drift by some 1e-5 from the IR
        close(value, got, ours[value], rtol=1e-4)
    tb.save(graph, tmp_path / "onnx" / "m.onnx")
    assert tb.verify(cfg, tmp_path / "onnx" / "m.onnx").ok


@LIVE
@pytest.mark.slow
@pytest.mark.parametrize("name", ["yolov3-tiny", "yolov2-tiny", "resnet18"])
def test_stock_cfgs_reach_keras_and_tflite_as_faithfully_as_libdarknet(tmp_path, name):
    """Keras and TFLite outputs within 1e-4 of libdarknet, and no farther from the float64 result of the same
    net than libdarknet itself is (x2): their kernels round differently, as libdarknet's do
    (tests/models/faithful.py)."""
    cfg = write(STOCK / f"{name}.cfg", tmp_path / name)
    graph = tb.load(cfg)
    image = np.random.default_rng(5).uniform(0, 1, graph.inputs[0].shape).astype(np.float32)
    live = runtime.DarknetRunner(cfg).run({"input": image})
    truth = float64_truth(graph, {"input": image})
    for to, dest in (("keras", tmp_path / "m_keras"), ("tflite", tmp_path / "m.tflite")):
        tb.save(graph, dest, to=to)
        target = runner_for(str(dest))
        out = target.run(image_feeds(target, image))
        for value, there in zip(graph.outputs, target.outputs):
            got = np.asarray(out[there])
            got = got if got.shape == live[value.name].shape else got.transpose(0, 3, 1, 2)
            close(f"{to} {value.name}", live[value.name], got, rtol=1e-4)
            no_farther_from_truth(f"{to} {value.name}", live[value.name], got, truth[value.name])
