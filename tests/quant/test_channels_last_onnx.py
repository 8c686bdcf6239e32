"""ONNX NCHW -> channels-last ONNX (`--layout nhwc`): quantized models as onnxruntime's channels-last
integer kernels (com.microsoft.QLinearConv channels_last=1, NhwcMaxPool), run against the source in
onnxruntime; a float model, which no ONNX runtime here runs channels-last, is refused with every op."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
from tests.models import torch_zoo  # noqa: E402
from tests.models.quant_zoo import onnx_qdq  # noqa: E402


def _ops(path) -> list[tuple[str, str]]:
    return [(n.domain, n.op_type) for n in onnx.load(str(path)).graph.node]


@pytest.fixture(scope="module")
def resnet_qdq(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module, args, _ = torch_zoo.resnet18(size=64)
    path = onnx_qdq(module, args, tmp_path_factory.mktemp("qdq") / "resnet_qdq.onnx", per_channel=True,
                    activation="uint8")
    return path, {"x": np.random.default_rng(0).standard_normal(tuple(args[0].shape)).astype(np.float32)}


@pytest.mark.parametrize("io_layout,transposes", [("target", 0), ("keep", 1)])
def test_quantized_resnet_to_channels_last(resnet_qdq, io_layout, transposes, tmp_path):
    src, feeds = resnet_qdq
    dst = tb.save(tb.load(src), tmp_path / "resnet_nhwc.onnx",
                  layout=tb.LayoutOptions(layout="nhwc", io_layout=io_layout))
    ops = _ops(dst)
    assert ops.count(("com.microsoft", "QLinearConv")) == 20 and ("com.microsoft", "NhwcMaxPool") in ops
    assert ("", "Conv") not in ops and ("", "MaxPool") not in ops
    assert ops.count(("", "Transpose")) == transposes
    report = tb.verify(src, dst, inputs=feeds)
    assert report.ok and report.outputs[0].exact >= 0.99, report.summary()


def test_channels_last_onnx_is_a_source(resnet_qdq, tmp_path):
    """Read back: to channels-first ONNX exactly, to int8 TFLite and PyTorch code within 1 LSB."""
    src, feeds = resnet_qdq
    nhwc = tb.save(tb.load(src), tmp_path / "resnet_nhwc.onnx",
                   layout=tb.LayoutOptions(layout="nhwc", io_layout="target"))
    graph = tb.load(nhwc)
    assert {n.attrs.get("layout") for n in graph.nodes if n.op in ("QLinearConv", "MaxPool")} == {"NHWC"}
    feeds = {"x": np.transpose(feeds["x"], (0, 2, 3, 1))}
    nchw = tb.save(graph, tmp_path / "resnet_nchw.onnx")
    assert _ops(nchw).count(("", "Transpose")) == 1  # at the input, which stays channels-last
    assert tb.verify(nhwc, nchw, inputs=feeds).outputs[0].exact == 1.0
    for dst in (tb.save(graph, tmp_path / "resnet.tflite"), tb.save(graph, tmp_path / "resnet_torch", to="torch")):
        report = tb.verify(nhwc, dst, inputs=feeds)
        assert report.ok, report.summary()  # 1 LSB: a float convolution on dequantized values rounds apart


def test_float_model_is_refused_with_every_op(tmp_path, capsys):
    src = tb.save(torch_zoo.imported("resnet18", size=32)[2], tmp_path / "resnet.onnx")
    out = tmp_path / "resnet_nhwc.onnx"
    assert main(["-q", "convert", str(src), "-o", str(out), "--layout", "nhwc"]) == 2
    err = capsys.readouterr().err
    assert "Conv: 20 node(s)" in err and "no channels-last float convolution" in err
    assert "MaxPool: 1 node(s)" in err
    assert not out.exists()
