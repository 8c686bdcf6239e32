"""Core ML out and in. Core ML runs only on Apple platforms; what these tests prove is stated per test:

- the files written are valid specs that coremltools' own loaders take (its `MLModel`, and its MIL loader for
  ML Programs), and read back into the IR they compute what the source framework computed;
- files written by coremltools' own PyTorch converter (not by tensorbridge) read into the IR compute what
  PyTorch computed: the check that the reader's understanding of the MIL ops is Apple's converter's;
- what Core ML cannot express, and malformed files, are refused cleanly, every blocker at once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError, UnsupportedError
from tensorbridge.formats.coreml import coremltools, protos, read
from tests.models.faithful import close, read_back

pytest.importorskip("coremltools")
ZOO = ("resnet18", "mobilenet_v2", "transformer_encoder", "bert", "gpt2")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tensorbridge", *map(str, args)], capture_output=True, text=True)


def _torch_outputs(module, args) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = module(*args)
    return (out[0] if isinstance(out, tuple | list) else out).numpy()


def _read_back(path, args) -> np.ndarray:
    return read_back(path, args)[1]


@pytest.mark.parametrize("suffix", [".mlpackage", ".mlmodel"])
@pytest.mark.parametrize("name", ZOO)
def test_zoo_written_as_core_ml_computes_what_pytorch_did(tmp_path, name, suffix):
    from tests.models.torch_zoo import imported

    module, args, graph = imported(name)
    path = tmp_path / f"{name}{suffix}"
    tb.save(graph, path)
    ct = coremltools()
    spec = ct.models.MLModel(str(path), skip_model_load=True).get_spec()  # coremltools' own loader takes it
    assert spec.WhichOneof("Type") == ("mlProgram" if suffix == ".mlpackage" else "neuralNetwork")
    if suffix == ".mlpackage":
        from coremltools.converters.mil.frontend.milproto.load import load as load_program

        program = load_program(spec, spec.specificationVersion, str(path / "Data" / "com.apple.CoreML" / "weights"))
        assert len(list(program.functions["main"].operations)) > 10
    expected = _torch_outputs(module, args)
    close(f"{name}{suffix}", expected, _read_back(path, args))
    # a second input: the comparison is worthless if the output ignores its input
    other = tuple(a.flip(-1) * 0.7 if a.is_floating_point() else a.roll(1, -1) for a in args)
    assert not np.allclose(_torch_outputs(module, other), expected)


@pytest.mark.parametrize("name", ["MobileNetV2",
                                  *[pytest.param(n, marks=pytest.mark.slow)
                                    for n in ("DenseNet121", "ResNet50", "InceptionV3", "EfficientNetB0")]])
def test_keras_applications_written_as_core_ml_compute_what_keras_did(tmp_path, name):
    """Within verification's tolerance of Keras, and no farther from the float64 truth than Keras is (Keras's
    own float32 sums are 4e-5 of the logits' range off it on ResNet-50)."""
    from tests.models import faithful
    from tests.models.keras_zoo import application

    model, shape = application(name)
    model.save(tmp_path / "m.keras")
    graph = tb.load(model, input_shapes={model.layers[0].name: [1, *shape]})
    tb.save(graph, tmp_path / "m.mlpackage")
    assert tb.load(tmp_path / "m.mlpackage").inputs[0].shape == (1, *shape)  # the source's layout kept
    feeds = {graph.inputs[0].name: np.random.default_rng(3).standard_normal((1, *shape)).astype(np.float32)}
    report = tb.verify(tmp_path / "m.keras", tmp_path / "m.mlpackage", inputs=feeds)
    faithful.check(report, faithful.float64_truth(graph, feeds))


def test_open_input_dims_are_asked_for(tmp_path):
    from tests.models.keras_zoo import application

    model, _ = application("MobileNetV2")
    with pytest.raises(ModelError, match=r"--input-shape input_layer\w*=1,96,96,3"):
        tb.save(tb.load(model), tmp_path / "m.mlpackage")
    assert not list(tmp_path.iterdir())


def mix_model():
    """A PyTorch model of the ops coremltools' converter writes in many forms: resizes, pixel shuffle, pools,
    transposed convolution, layer norm, PReLU, GELU, hard-swish, cumulative sum."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.norm = nn.Conv2d(8, 16, 3, padding=1), nn.LayerNorm(16)
            self.prelu, self.bn = nn.PReLU(16), nn.BatchNorm2d(16)
            self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)

        def forward(self, x):
            y = self.prelu(self.bn(self.conv(x)))
            y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
            z = F.interpolate(y, size=(20, 20), mode="nearest")
            y = F.max_pool2d(y, 3, 2, 1) + F.avg_pool2d(y, 3, 2, 1)
            y = F.pixel_shuffle(self.up(y), 2)
            a = self.norm(z.permute(0, 2, 3, 1)).mean(dim=(1, 2))
            return torch.cat([y.flatten(1)[:, :16], F.gelu(a), torch.sigmoid(a) * F.hardswish(a),
                              torch.cumsum(a, 1), F.interpolate(y, size=(7, 9), mode="bilinear",
                                                                align_corners=True).flatten(1)[:, :8]], 1)

    torch.manual_seed(0)
    model = Model()
    model.bn.running_mean.uniform_(-0.5, 0.5)
    model.bn.running_var.uniform_(0.5, 1.5)
    return model.eval(), (torch.randn(2, 8, 10, 10),)


def _apple(module, args, path, minimum="iOS16") -> None:
    """The model converted by coremltools' own PyTorch converter (float32 compute)."""
    import torch

    ct = coremltools()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(module, args, check_trace=False)
        inputs = [ct.TensorType(name=f"input{i}", shape=a.shape) for i, a in enumerate(args)]
        model = ct.convert(traced, inputs=inputs, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                           minimum_deployment_target=getattr(ct.target, minimum), skip_model_load=True)
    model.save(str(path))
    shutil.rmtree(model.package_path, ignore_errors=True)  # coremltools' temporary copy


@pytest.mark.parametrize("name", ["mix", "resnet18", "mobilenet_v2"])
def test_files_written_by_coremltools_read_as_pytorch_computed(tmp_path, name):
    from tests.models.torch_zoo import ZOO as BUILDERS

    module, args = mix_model() if name == "mix" else BUILDERS[name]()[:2]
    path = tmp_path / f"{name}.mlpackage"
    _apple(module, args, path)
    close(f"coremltools' {name}", _torch_outputs(module, args), _read_back(path, args))


def test_cli_converts_both_ways_and_says_what_verification_ran(tmp_path):
    from tests.models.torch_zoo import imported

    _, _, graph = imported("mobilenet_v2")
    tb.save(graph, tmp_path / "m.onnx")
    done = _cli("convert", tmp_path / "m.onnx", "-o", tmp_path / "m.mlpackage")
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout and "not a run in Core ML" in done.stdout
    done = _cli("convert", tmp_path / "m.mlpackage", "-o", tmp_path / "back.onnx")
    assert done.returncode == 0 and "PASS" in done.stdout, done.stderr


def test_what_core_ml_cannot_express_is_listed_at_once(tmp_path):
    from onnx import TensorProto, helper

    from tests.conftest import make_model

    model = make_model([helper.make_node("Det", ["x"], ["d"]), helper.make_node("Unique", ["x"], ["u"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
                       [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2]),
                        helper.make_tensor_value_info("u", TensorProto.FLOAT, None)])
    with pytest.raises(UnsupportedError) as e:
        tb.save(tb.load(model), tmp_path / "m.mlpackage")
    assert "Det" in str(e.value) and "Unique" in str(e.value)
    assert not list(tmp_path.iterdir())


def _program(tmp_path):
    from tests.models.torch_zoo import imported

    _, args, graph = imported("resnet18")
    path = tmp_path / "r.mlpackage"
    tb.save(graph, path)
    return path, args


def _rewrite(path, edit) -> None:
    model_pb2, _ = protos()
    spec_file = path / "Data" / "com.apple.CoreML" / "model.mlmodel"
    spec = model_pb2.Model()
    spec.ParseFromString(spec_file.read_bytes())
    function = spec.mlProgram.functions["main"]
    edit(function.block_specializations[function.opset])
    spec_file.write_bytes(spec.SerializeToString())


def test_unknown_ops_and_unread_arguments_are_blockers(tmp_path):
    path, _ = _program(tmp_path)

    def edit(block):
        kinds = [op for op in block.operations if op.type == "relu"]
        kinds[0].type = "sparkle"
        kinds[1].type = "wobble"
        conv = next(op for op in block.operations if op.type == "conv")
        conv.inputs["twist"].arguments.add().name = conv.inputs["x"].arguments[0].name

    _rewrite(path, edit)
    with pytest.raises(UnsupportedError) as e:
        tb.load(path)
    assert "sparkle" in str(e.value) and "wobble" in str(e.value) and "MIL op without a rule" in str(e.value)
    _rewrite(path, lambda block: [setattr(op, "type", "relu") for op in block.operations
                                  if op.type in ("sparkle", "wobble")])
    with pytest.raises(UnsupportedError, match="twist not read"):
        tb.load(path)


def test_malformed_files_fail_cleanly(tmp_path):
    path, args = _program(tmp_path)
    weights = path / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    blob = weights.read_bytes()
    weights.write_bytes(blob[: len(blob) // 2])
    done = _cli("convert", path, "-o", tmp_path / "x.onnx")
    assert done.returncode == 2 and "weight.bin" in done.stderr, done.stderr
    weights.write_bytes(blob[:64] + b"\0" * 64 + blob[128:])
    with pytest.raises(ModelError, match="is not the float32"):
        tb.load(path)
    (tmp_path / "junk.mlmodel").write_bytes(b"\x0a\xff\xff\xff\xff\x0f junk")
    done = _cli("convert", tmp_path / "junk.mlmodel", "-o", tmp_path / "y.onnx")
    assert done.returncode == 2 and "not a Core ML spec" in done.stderr, done.stderr
    manifest = json.loads((path / "Manifest.json").read_text())
    root = manifest["rootModelIdentifier"]
    manifest["itemInfoEntries"][root]["path"] = "../../../etc/passwd"
    (path / "Manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match="not in the package"):
        read(path)
    shutil.rmtree(path)
    assert not list(tmp_path.glob("*.onnx"))
