"""ONNX QDQ models quantized by onnxruntime -> int8 TFLite that keeps every scale and zero point.

The .tflite runs in LiteRT on the same float input as onnxruntime runs the source: the outputs
(dequantized by both) agree within 1 LSB of the output scale; convolutions and the classifier are
int8 kernels reading int8 filters; each quantized tensor of the source arrives with its own
parameters (uint8 activations held as int8, zero point less 128).
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError

pytest.importorskip("torch")
pytest.importorskip("ai_edge_litert")
pytest.importorskip("tflite")
from tests.models import torch_zoo  # noqa: E402
from tests.models.quant_zoo import onnx_qdq, ops_net, quant_params, tflite_kernels  # noqa: E402

WEIGHTED = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}


def _onnx_params(path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Quantized tensor -> (scale, zero point): Q outputs and quantized initializers."""
    model = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    found = {}
    for n in model.graph.node:
        if n.op_type == "QuantizeLinear":
            found[n.output[0]] = (inits[n.input[1]], inits[n.input[2]])
        elif n.op_type == "DequantizeLinear" and n.input[0] in inits:
            found[n.input[0]] = (inits[n.input[1]], inits[n.input[2]])
    return found


def _same_parameters(src, dst) -> int:
    got = {}
    for name, params in quant_params(dst).items():
        # a tensor of the source's value or weight, under the source's name, or tagged by the writer that
        # holds it int8 or permuted (names are presentation; the file's metadata says which is which)
        while (untagged := re.sub(r"\.(as_int8|nchw|nhwc|t\d+)$", "", name)) != name:
            name = untagged
        got.setdefault(name, params)
    for name, (scale, zp) in _onnx_params(src).items():
        assert name in got, f"{name} lost"
        shift = 128 if zp.dtype == np.uint8 else 0
        assert np.array_equal(got[name][0], np.float32(scale).ravel()), name
        assert np.array_equal(got[name][1], zp.astype(np.int64).ravel() - shift), name
    return len(_onnx_params(src))


@pytest.mark.parametrize("arch,per_channel,activation", [("mobilenet_v2", False, "int8"),
                                                         ("mobilenet_v2", True, "int8"),
                                                         ("resnet18", True, "uint8")])
def test_onnxruntime_quantized_cnn_to_int8_tflite(arch, per_channel, activation, tmp_path):
    module, args, _ = getattr(torch_zoo, arch)(batch=1)
    src = onnx_qdq(module, args, tmp_path / "model_qdq.onnx", per_channel, activation)
    dst = tb.save(tb.load(src), tmp_path / "model.tflite")

    report = tb.verify(src, dst)
    out = report.outputs[0]
    assert report.ok and out.step and out.max_abs <= 1, report.summary()
    assert out.exact >= 0.99, report.summary()  # measured: 100% on all three
    y = np.asarray(tb.run(tb.load(src), {"x": np.random.default_rng(0).standard_normal(args[0].shape)
                                         .astype(np.float32)})["y"])
    assert len(np.unique(y)) > 20  # not a trivially constant output

    kernels = tflite_kernels(dst)
    weighted = [k for k in kernels if k[0] in WEIGHTED]
    assert len(weighted) >= 20 and all(k[1][:2] == ("int8", "int8") for k in weighted), weighted
    float_ops = collections.Counter(op for op, types in kernels if "float32" in types)
    assert float_ops == {"QUANTIZE": 1}, float_ops  # the float input is quantized once; the rest is integer
    assert _same_parameters(src, dst) > 60


def test_int8_kernels_that_cannot_rescale_get_a_requantize(tmp_path):
    module, args = ops_net()
    src = onnx_qdq(module, args, tmp_path / "ops_qdq.onnx")
    dst = tb.save(tb.load(src), tmp_path / "ops.tflite")
    report = tb.verify(src, dst)
    assert report.ok and report.outputs[0].max_abs <= 1, report.summary()
    ops = collections.Counter(op for op, types in tflite_kernels(dst) if "int8" in types)
    assert {"MAX_POOL_2D", "AVERAGE_POOL_2D", "LOGISTIC", "CONCATENATION", "MUL", "FULLY_CONNECTED"} <= set(ops)
    assert ops["PADV2"] == 1  # PyTorch's max-pool padding is not TFLite's SAME: padded with the lowest int8
    _same_parameters(src, dst)


def test_what_has_no_tflite_kernel_is_listed_with_every_node(tmp_path):
    from onnx import TensorProto, helper

    def qdq(name, src):
        return [helper.make_node("QuantizeLinear", [src, "s", "z"], [f"{name}_q"], name=f"{name}_Q"),
                helper.make_node("DequantizeLinear", [f"{name}_q", "s", "z"], [f"{name}_dq"], name=f"{name}_DQ")]

    nodes = qdq("in", "x") + [helper.make_node("Erf", ["in_dq"], ["e"], name="erf_1")] + qdq("e", "e") + \
        [helper.make_node("Sin", ["e_dq"], ["y"], name="sin_1")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]),
                               helper.make_tensor("z", TensorProto.INT8, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    src = tmp_path / "bad.onnx"
    onnx.save(model, src)
    with pytest.raises(UnsupportedError) as e:
        tb.save(tb.load(src), tmp_path / "bad.tflite")
    assert "erf_1" in str(e.value) and "sin_1" in str(e.value)
    run = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(src), "-o", str(tmp_path / "c.tflite")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "erf_1" in run.stderr and "sin_1" in run.stderr
    assert not list(tmp_path.glob("*.tflite"))


def test_per_layer_reads_the_int8_tflite_and_names_a_misscaled_tensor(tmp_path):
    module, args, _ = torch_zoo.mobilenet_v2(batch=1)
    src = onnx_qdq(module, args, tmp_path / "m_qdq.onnx")
    good = tb.verify(src, tb.save(tb.load(src), tmp_path / "good.tflite"), per_layer=True)
    assert good.first_divergence["op"] is None and good.first_divergence["values_compared"] > 20, good.summary()

    graph = tb.load(src)
    qs = [n for n in graph.nodes if n.op == "QuantizeLinear"]
    victim = qs[len(qs) // 2]
    victim.set_input(1, graph.add_constant("misscaled", np.asarray(victim.inputs[1].const, np.float32) * 1.5))
    bad = tb.verify(src, tb.save(graph, tmp_path / "bad.tflite"), per_layer=True)
    assert bad.first_divergence["node"] == victim.name, (victim.name, bad.summary())
