"""MXNet in and out, checked against MXNet 1.9.1's own outputs.

`data/layers-*` is a Gluon block using every op the frontend reads and `data/encoder-*` a BERT-style encoder,
both as Gluon exports them, with MXNet's value of every op output recorded by tests/mxnet/record.py; the
model-zoo architectures are committed as their symbols, with MXNet's outputs and their BatchNorm statistics
(calibrated on data), their other weights regenerated from their names. These tests need no MXNet; where its
venv is set up (`make runtimes`), the live tests run what the writer produces in it, and skip, saying so,
without it.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError, UnsupportedError
from tensorbridge.formats.mxnet import V1, parse_params, read_params, write_params
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.harness import runner_for
from tensorbridge.verification.runners import mxnet as runtime
from tests.models.faithful import close, image_feeds, read_back
from tests.mxnet.weights import image, parameter

DATA = Path(__file__).with_name("data")
LIVE = pytest.mark.skipif(runtime.missing() is not None, reason=f"no MXNet: {runtime.missing()}")
SMALL = {"layers": {"data": [1, 4, 12, 12]}, "encoder": {"data0": [2, 8], "data1": [2, 8]}, "tagger": {"data": [3, 9]}}
ZOO = {"resnet50_v1": 224, "resnet50_v2": 224, "mobilenetv2_1.0": 224, "inceptionv3": 299, "densenet121": 224}


def recorded(name: str) -> dict:
    with np.load(DATA / f"{name}.mxnet.npz") as f:
        return dict(f)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tensorbridge", *map(str, args)], capture_output=True, text=True)


def _from_inputs(graph) -> set[str]:
    """The values that depend on an input."""
    found = {v.name for v in graph.inputs}
    for node in graph.nodes:
        if any(v is not None and v.name in found for v in node.inputs):
            found.update(v.name for v in node.outputs)
    return found


def zoo_model(name: str, folder: Path) -> Path:
    """The architecture's symbol with its params: weights regenerated from their names, recorded statistics."""
    theirs = recorded(name)
    shapes = json.loads(str(theirs["shapes"]))
    params = {key: parameter(key[4:], shape) for key, shape in shapes.items()}
    params.update({key: value for key, value in theirs.items() if key.startswith("aux:")})
    shutil.copyfile(DATA / f"{name}-symbol.json", folder / f"{name}-symbol.json")
    write_params(folder / f"{name}-0000.params", params)
    return folder / f"{name}-symbol.json"


@pytest.mark.parametrize("name", SMALL)
def test_every_op_output_reads_as_mxnet_computed_it(name):
    theirs = recorded(name)
    graph = tb.load(DATA / f"{name}-symbol.json", input_shapes=SMALL[name])
    feeds = {v.name: theirs[v.name] for v in graph.inputs}
    ours = run(graph, feeds, intermediates=True)
    compared = 0
    for mx_name, value in graph.metadata["mxnet"]["outputs"].items():
        if mx_name in theirs and value in ours:
            if value in _from_inputs(graph):  # (ones_like and what is computed from it alone are constant)
                spread = np.std(theirs[mx_name]) / np.abs(theirs[mx_name]).max()
                assert spread > 1e-3, f"{mx_name} does not vary: the comparison would prove nothing"
            close(mx_name, theirs[mx_name], ours[value].reshape(theirs[mx_name].shape))
            compared += 1
    assert compared > {"layers": 100, "encoder": 50, "tagger": 10}[name]
    if name == "layers":
        kinds = {n.meta.get("source_op") for n in graph.nodes}
        assert kinds >= {"Convolution", "Deconvolution", "Pooling", "FullyConnected", "BatchNorm", "InstanceNorm",
                         "LayerNorm", "L2Normalization", "LRN", "UpSampling", "LeakyReLU", "Activation", "clip",
                         "softmax", "log_softmax", "SoftmaxActivation", "Reshape", "transpose", "SwapAxis",
                         "SliceChannel", "slice_axis", "slice", "Concat", "Pad", "batch_dot", "dot", "add_n", "Cast",
                         "Flatten", "expand_dims", "squeeze", "broadcast_add", "_rminus_scalar"}


@pytest.mark.parametrize("name,to", [("layers", "onnx"), ("layers", "torch"), ("encoder", "onnx"),
                                     ("encoder", "torch"), ("tagger", "onnx"), ("tagger", "torch"),
                                     *(pytest.param(name, to, marks=pytest.mark.slow) for name, to in (
                                         ("layers", "keras"), ("encoder", "keras"), ("encoder", "tflite"),
                                         ("tagger", "keras"), ("tagger", "tflite")))])
def test_converted_model_computes_what_mxnet_did(tmp_path, name, to):
    theirs = recorded(name)
    graph = tb.load(DATA / f"{name}-symbol.json", input_shapes=SMALL[name])
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
    tb.save(graph, dest, to=to)
    target = runner_for(str(dest))
    feeds = [theirs[v.name] for v in graph.inputs]
    out = target.run({n: x for (n, _, _), x in zip(target.inputs, feeds)})
    heads = {v: k for k, v in graph.metadata["mxnet"]["outputs"].items()}
    for value, there in zip(graph.outputs, target.outputs):
        close(f"{to} {value.name}", theirs[heads[value.name]], out[there])


@pytest.mark.slow
def test_layers_to_tflite_refuses_only_erf(tmp_path):
    graph = tb.load(DATA / "layers-symbol.json", input_shapes=SMALL["layers"])
    with pytest.raises(UnsupportedError) as e:
        tb.save(graph, tmp_path / "m.tflite")
    assert [b.op for b in e.value.blockers] == ["Erf"], str(e.value)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", SMALL)
def test_round_trip_keeps_the_computation(tmp_path, name):
    theirs = recorded(name)
    graph = tb.load(DATA / f"{name}-symbol.json", input_shapes=SMALL[name])
    tb.save(graph, tmp_path / "again-symbol.json")
    back = tb.load(tmp_path / "again-symbol.json")  # the written symbol records its input shapes
    feeds = {v.name: theirs[v.name] for v in graph.inputs}
    ours, again = run(graph, feeds), run(back, feeds)
    for a, b in zip(graph.outputs, back.outputs):
        close(a.name, ours[a.name], again[b.name])
    if runtime.missing() is None:
        mx = runtime.MXNetRunner(tmp_path / "again-symbol.json")
        out = mx.run(feeds)
        for a, there in zip(graph.outputs, mx.outputs):
            close(f"MXNet {a.name}", ours[a.name], out[there])


def _zoo(name: str, folder: Path):
    """(recorded outputs, the architecture read with its weights, its input image)."""
    size = ZOO[name]
    graph = tb.load(zoo_model(name, folder), input_shapes={"data": [1, 3, size, size]})
    return recorded(name), graph, image((1, 3, size, size))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n != "resnet50_v1" else n for n in ZOO])
def test_model_zoo_reads_as_mxnet_computed_it(tmp_path, name):
    theirs, graph, x = _zoo(name, tmp_path)
    assert np.std(theirs["output"]) > 1e-2, "the recorded logits do not vary: the comparison would prove nothing"
    close(name, theirs["output"], run(graph, {"data": x})[graph.outputs[0].name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ZOO)
def test_model_zoo_converts_to_every_target(tmp_path, name):
    theirs, graph, x = _zoo(name, tmp_path)
    for to in ("onnx", "torch", "keras", "tflite"):
        dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
        tb.save(graph, dest, to=to)
        target = runner_for(str(dest))
        out = target.run(image_feeds(target, x))
        close(f"{name} -> {to}", theirs["output"], out[target.outputs[0]])


def test_pytorch_models_written_as_mxnet(tmp_path):
    """A torch ResNet, MobileNetV2, LSTM tagger and transformer encoder written as MXNet read back (and, with MXNet
    present, run there) as in PyTorch."""
    from tests.models.torch_zoo import imported

    for name, kwargs in (("resnet18", {"size": 32}), ("mobilenet_v2", {"size": 32}), ("lstm_tagger", {}),
                         ("transformer_encoder", {})):
        module, args, graph = imported(name, batch=1, **kwargs)
        tb.save(graph, tmp_path / f"{name}-symbol.json")
        feeds, got = read_back(tmp_path / f"{name}-symbol.json", args)
        expected = module(*args).detach().numpy()
        close(name, expected, got)
        if runtime.missing() is None:
            mx = runtime.MXNetRunner(tmp_path / f"{name}-symbol.json")
            close(f"MXNet {name}", expected, mx.run(feeds)[mx.outputs[0]])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_transformers_written_as_mxnet(tmp_path, name):
    """BERT and GPT-2 (transformers, from configs): their attention masks (logical ops, gather_nd, where of scalars)
    and products of 4-D batches written as MXNet read back, and with MXNet present run there, as in PyTorch."""
    from tests.models.torch_zoo import imported

    module, args, graph = imported(name, batch=1)
    tb.save(graph, tmp_path / "m-symbol.json")
    expected = module(*args)
    expected = (expected[0] if isinstance(expected, tuple | list) else expected).detach().numpy()
    feeds, got = read_back(tmp_path / "m-symbol.json", args)
    close(name, expected, got)
    if runtime.missing() is None:
        mx = runtime.MXNetRunner(tmp_path / "m-symbol.json")
        close(f"MXNet {name}", expected, mx.run(feeds)[mx.outputs[0]])


def test_what_mxnet_cannot_express_is_listed_at_once(tmp_path):
    import torch
    from torch import nn

    class Odd(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1) + torch.round(x)

    with pytest.raises(UnsupportedError) as e:
        tb.save(tb.load(Odd(), example_inputs=(torch.rand(1, 2, 4, 4),)), tmp_path / "m-symbol.json")
    assert "CumSum" in str(e.value) and "Round" in str(e.value)
    assert not list(tmp_path.iterdir())


def test_bad_files_are_refused_with_every_blocker(tmp_path):
    symbol = json.loads((DATA / "layers-symbol.json").read_text())
    for node in symbol["nodes"]:
        if node["op"] in ("LRN", "InstanceNorm"):
            node["op"] = "Sparkle" if node["op"] == "LRN" else "Wobble"
    (tmp_path / "m-symbol.json").write_text(json.dumps(symbol))
    shutil.copyfile(DATA / "layers-0000.params", tmp_path / "m-0000.params")
    done = _cli("convert", tmp_path / "m-symbol.json", "--input-shape", "data=1,4,12,12", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2, done.stderr
    assert "Sparkle" in done.stderr and "Wobble" in done.stderr and "MXNet op without a rule" in done.stderr
    raw = (DATA / "layers-0000.params").read_bytes()
    (tmp_path / "t-symbol.json").write_text((DATA / "layers-symbol.json").read_text())
    (tmp_path / "t-0000.params").write_bytes(raw[:-500])
    done = _cli("convert", tmp_path / "t-symbol.json", "--input-shape", "data=1,4,12,12", "-o", tmp_path / "t.onnx")
    assert done.returncode == 2 and "truncated" in done.stderr, done.stderr
    (tmp_path / "t-0000.params").write_bytes(raw)
    params = read_params(DATA / "layers-0000.params")
    write_params(tmp_path / "p-0000.params", {k: v for k, v in params.items() if "dense0_weight" not in k})
    (tmp_path / "p-symbol.json").write_text((DATA / "layers-symbol.json").read_text())
    done = _cli("convert", tmp_path / "p-symbol.json", "--input-shape", "data=1,4,12,12", "-o", tmp_path / "p.onnx")
    assert done.returncode == 2 and "no value for parameter(s) layers0_dense0_weight" in done.stderr, done.stderr
    done = _cli("convert", tmp_path / "t-0000.params", "-o", tmp_path / "m.onnx")
    assert done.returncode == 2 and "does not record the shape of input(s) data" in done.stderr, done.stderr
    assert "--input-shape data=" in done.stderr
    (tmp_path / "x-symbol.json").write_text('{"nodes": [{"op": "null", "name": "a", "inputs": [[5, 0, 0]]}]}')
    (tmp_path / "x-0000.params").write_bytes(raw)
    done = _cli("convert", tmp_path / "x-symbol.json", "-o", tmp_path / "x.onnx")
    assert done.returncode == 2 and "not an MXNet symbol" in done.stderr, done.stderr
    assert not list(tmp_path.glob("*.onnx"))


@pytest.mark.parametrize("op,key,value,expected", [("Convolution", "layout", "NHWC", "layout NHWC"),
                                                   ("UpSampling", "wobble", "3", "wobble=3 not read"),
                                                   ("Dropout", "mode", "always", "at inference too")])
def test_unread_attributes_and_layouts_are_blockers(tmp_path, op, key, value, expected):
    symbol = json.loads((DATA / "layers-symbol.json").read_text())
    for node in symbol["nodes"]:
        if node["op"] == op:
            node["attrs"][key] = value
    (tmp_path / "m-symbol.json").write_text(json.dumps(symbol))
    shutil.copyfile(DATA / "layers-0000.params", tmp_path / "m-0000.params")
    with pytest.raises(UnsupportedError, match=expected):
        tb.load(tmp_path / "m-symbol.json", input_shapes=SMALL["layers"])


def test_params_files_of_every_version_read():
    """V1 (int64 shapes, no storage type) and the oldest form (uint32 rank and dims first) as MXNet wrote them
    before 1.0; sparse arrays are refused."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)

    def listing(body: bytes, names=("arg:w",)) -> bytes:
        tail = struct.pack("<Q", len(names)) + b"".join(struct.pack("<Q", len(n)) + n.encode() for n in names)
        return struct.pack("<QQQ", 0x112, 0, 1) + body + tail

    data = struct.pack("<iii", 1, 0, 0) + a.tobytes()
    v1 = struct.pack("<Ii", V1, 2) + struct.pack("<2q", 2, 3) + data
    oldest = struct.pack("<I", 2) + struct.pack("<2I", 2, 3) + data
    for body in (v1, oldest):
        np.testing.assert_array_equal(parse_params(listing(body))["arg:w"], a)
    sparse = struct.pack("<Iii", 0xF993FAC9, 1, 2) + struct.pack("<2q", 2, 3) + data
    with pytest.raises(ModelError, match="sparse"):
        parse_params(listing(sparse))
    with pytest.raises(ModelError, match="truncated"):
        parse_params(listing(v1)[:-20])


def test_params_round_trip_byte_for_byte(tmp_path):
    params = read_params(DATA / "layers-0000.params")
    write_params(tmp_path / "again.params", params)
    assert (tmp_path / "again.params").read_bytes() == (DATA / "layers-0000.params").read_bytes()


@LIVE
def test_layers_written_back_run_in_mxnet_as_recorded(tmp_path):
    theirs = recorded("layers")
    graph = tb.load(DATA / "layers-symbol.json", input_shapes=SMALL["layers"])
    tb.save(graph, tmp_path / "again-symbol.json")
    mx = runtime.MXNetRunner(tmp_path / "again-symbol.json")
    out = mx.run({"data": theirs["data"]})
    heads = {v: k for k, v in graph.metadata["mxnet"]["outputs"].items()}
    for value, there in zip(graph.outputs, mx.outputs):
        close(value.name, theirs[heads[value.name]], out[there])


def test_mutated_files_fail_cleanly(tmp_path):
    """Truncated params and flipped bytes in either file: a clean error or a model, never a crash."""
    from tensorbridge.errors import TensorbridgeError

    rng = np.random.default_rng(0)
    symbol, params = (DATA / "layers-symbol.json").read_bytes(), (DATA / "layers-0000.params").read_bytes()
    for i in range(120):
        s, p = bytearray(symbol), bytearray(params)
        if i % 3 == 0:
            p = p[:rng.integers(0, len(p))]
        else:
            target = s if i % 3 == 1 else p
            for at in rng.integers(0, min(len(target), 4096), 4):
                target[at] = rng.integers(0, 256)
        (tmp_path / "m-symbol.json").write_bytes(bytes(s))
        (tmp_path / "m-0000.params").write_bytes(bytes(p))
        try:
            tb.load(tmp_path / "m-symbol.json", input_shapes=SMALL["layers"])
        except TensorbridgeError:
            pass
