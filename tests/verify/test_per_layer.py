"""--per-layer names the op that a deliberate fault was injected into."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import tensorbridge as tb
from tensorbridge.cli.main import main

torch = pytest.importorskip("torch")


def _source(tmp_path):
    from tests.models.torch_zoo import imported

    _, _, graph = imported("resnet18", size=32)
    return tb.save(graph, tmp_path / "resnet.onnx")


def test_fault_in_onnx_target_is_named(tmp_path, capsys):
    src = _source(tmp_path)
    model = onnx.load(src)
    victim = next(t for t in model.graph.initializer if t.name == "layer3.0.conv2.weight")
    victim.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(victim) * 1.5, victim.name))
    bad = tmp_path / "faulty.onnx"
    onnx.save(model, bad)
    report = tb.verify(src, bad, per_layer=True)
    assert not report.ok
    d = report.first_divergence
    assert d["op"] == "Conv" and d["node"] == "layer3.0.conv2", d
    assert "layer3.0.conv2" in d["source"]
    assert main(["-q", "verify", str(src), str(bad), "--per-layer"]) == 1
    assert "first diverging op: Conv node 'layer3.0.conv2'" in capsys.readouterr().out


def test_fault_in_generated_torch_code_is_named(tmp_path):
    from safetensors.numpy import load_file, save_file

    src = _source(tmp_path)
    folder = tb.save(tb.load(src), tmp_path / "torch_code", to="torch")
    weights = load_file(str(folder / "weights.safetensors"))
    key = "layer2_0_downsample_1.running_mean"  # the shortcut's BatchNorm
    weights[key] = weights[key] + np.float32(3.0)
    save_file(weights, str(folder / "weights.safetensors"))
    report = tb.verify(src, folder, per_layer=True)
    assert not report.ok
    d = report.first_divergence
    assert d["op"] == "BatchNormalization" and d["node"] == "layer2.0.downsample.1", d


def test_clean_conversion_has_no_divergence(tmp_path):
    src = _source(tmp_path)
    folder = tb.save(tb.load(src), tmp_path / "torch_code", to="torch")
    report = tb.verify(src, folder, per_layer=True, rtol=1e-5)
    assert report.ok and report.first_divergence["op"] is None
    assert report.first_divergence["values_compared"] > 50
