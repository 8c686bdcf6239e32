"""PyTorch model matrix: PyTorch -> ONNX and PyTorch -> torch code, each run against PyTorch.

max|d| / max|ref| <= 1e-5 in float32 on seeded inputs, and top-10 agreement 100% for
classifiers. The ONNX results are converted once more, ONNX -> torch code.
"""

from __future__ import annotations

import logging
import warnings

import onnx
import pytest

import tensorbridge as tb
from tensorbridge.verification.compare import compare
from tensorbridge.verification.runners.onnxruntime import OnnxRuntimeRunner
from tensorbridge.verification.runners.torch import TorchModuleRunner

torch = pytest.importorskip("torch")
from tests.models.torch_zoo import ZOO  # noqa: E402

logging.disable(logging.WARNING)
RTOL = 1e-5
FAST = ["resnet18", "mobilenet_v2", "transformer_encoder", "lstm_tagger", "bert", "gpt2"]


def _check(name, expected, got, classifier):
    r = compare(name, name, expected, got, rtol=RTOL, atol=0.0)
    assert r.ok, f"{name}: max|d|/max|y| = {r.robust_rel:.3g}"
    if classifier and expected.ndim == 2:
        assert r.topk["top10"] == 1.0, r.topk


@pytest.fixture(scope="module", params=FAST)
def model(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module, args, classifier = ZOO[request.param]()
        graph = tb.load(module, example_inputs=args)
        with torch.no_grad():
            expected = module(*args).numpy()
    feeds = {v.name: a.numpy() for v, a in zip(graph.inputs, args)}
    return request.param, graph, feeds, expected, classifier


def test_torch_to_onnx(model, tmp_path):
    name, graph, feeds, expected, classifier = model
    path = tb.save(graph, tmp_path / f"{name}.onnx")
    onnx.checker.check_model(str(path))
    got = OnnxRuntimeRunner(path).run(feeds)
    _check(name, expected, list(got.values())[0], classifier)
    # and ONNX -> torch code
    folder = tb.save(tb.load(path), tmp_path / f"{name}_from_onnx", to="torch")
    got = TorchModuleRunner(folder).run(feeds)
    _check(name, expected, list(got.values())[0], classifier)


def test_torch_to_torch_code(model, tmp_path):
    name, graph, feeds, expected, classifier = model
    folder = tb.save(graph, tmp_path / f"{name}_torch", to="torch")
    got = TorchModuleRunner(folder).run(feeds)
    _check(name, expected, list(got.values())[0], classifier)
