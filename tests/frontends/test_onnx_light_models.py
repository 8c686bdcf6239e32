"""The real models shipped in the onnx wheel (`light/`): ONNX -> .tbir -> ONNX.

The shipped files build their weights with ConstantOfShape; a second variant replaces those
with seeded random weights, so the numbers exercised are those of a trained-like network.
Both the reference interpreter and onnxruntime running the re-exported model must agree
with onnxruntime running the original: max|d| / max|ref| <= 1e-4.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import tensorbridge as tb
from tensorbridge.verification.compare import compare
from tensorbridge.verification.runners.onnxruntime import OnnxRuntimeRunner
from tests.conftest import LIGHT_DIR, LIGHT_MODELS

RTOL = 1e-4


def randomize_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """Replace ConstantOfShape-made weights by seeded random initializers of the same shape."""
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    keep = []
    for node in out.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = tuple(int(d) for d in inits[node.input[0]])
            if len(shape) == 1:
                arr = rng.uniform(0.5, 1.5, shape)
            else:
                fan_in = int(np.prod(shape[1:]))
                arr = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
            out.graph.initializer.append(numpy_helper.from_array(arr.astype(np.float32), node.output[0]))
        else:
            keep.append(node)
    del out.graph.node[:]
    out.graph.node.extend(keep)
    return out


@pytest.mark.parametrize("variant", ["shipped", "random_weights"])
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_round_trip(name, variant, tmp_path):
    if variant == "random_weights" and name in HEAVY:
        pytest.skip("covered by the slow suite")
    _round_trip(name, variant, tmp_path)


HEAVY = {"light_vgg19.onnx", "light_zfnet512.onnx", "light_bvlc_alexnet.onnx"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HEAVY))
def test_heavy_light_model_random_weights(name, tmp_path):
    _round_trip(name, "random_weights", tmp_path)


def _round_trip(name, variant, tmp_path):
    src = tmp_path / name
    model = onnx.load(os.path.join(LIGHT_DIR, name))
    if variant == "random_weights":
        model = randomize_weights(model)
    onnx.save(model, src)
    tbir = tb.save(tb.load(src), tmp_path / "m.tbir")
    dst = tb.save(tb.load(tbir), tmp_path / "back.onnx")
    onnx.checker.check_model(str(dst))

    original = OnnxRuntimeRunner(src)
    feeds = {n: np.random.default_rng(1).standard_normal([d or 1 for d in s]).astype(np.float32)
             for n, _, s in original.inputs}
    expected = original.run(feeds)
    via_reference = tb.run(tb.load(tbir), feeds)
    via_ort = OnnxRuntimeRunner(dst).run(feeds)
    runs = [("reference", via_reference), ("onnxruntime", via_ort)]
    if importlib.util.find_spec("torch") is not None:  # ONNX -> PyTorch code, run by PyTorch
        from tensorbridge.verification.runners.torch import TorchModuleRunner

        folder = tb.save(tb.load(src), tmp_path / "torch_code", to="torch")
        runs.append(("torch code", TorchModuleRunner(folder).run(feeds)))
    for out_name, ref in expected.items():
        for label, outputs in runs:
            got = outputs[out_name]
            r = compare(out_name, out_name, ref, got, rtol=RTOL, atol=0.0)
            assert r.ok, f"{name} {variant} {label}: max|d|/max|y| = {r.robust_rel:.3g}"
