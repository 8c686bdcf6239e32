"""Quantized ONNX models (static QDQ, onnxruntime's dynamic quantization, integer matmuls) in targets without
quantized kernels: the quantization ops become arithmetic, checked against onnxruntime, and integer
accumulation stays exact (float32 only where no partial sum can reach 2**24)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tensorbridge.ops import schema as op_schema
from tensorbridge.reference.interpreter import run
from tests.ops.onnx_models import convert_and_verify, save_model


def _static_qdq_conv(tmp_path) -> str:
    """x -> Q -> DQ -> Conv(DQ(int8 weights per output channel), bias) -> Relu -> Q -> DQ, as quantizers write it."""
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zp"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "y_scale", "y_zp"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zp"], ["y"])]
    weights = {"x_scale": np.float32(0.02), "x_zp": np.uint8(128), "w": w,
               "w_scale": rng.uniform(0.001, 0.004, 6).astype(np.float32), "w_zp": np.zeros(6, np.int8),
               "b": rng.standard_normal(6).astype(np.float32), "y_scale": np.float32(0.05), "y_zp": np.uint8(0)}
    return save_model(tmp_path / "static_qdq.onnx", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8, 8])], weights)


def _dynamic_matmul(tmp_path) -> str:
    """onnxruntime's dynamic quantization of a linear layer: DynamicQuantizeLinear, MatMulInteger, rescale."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xzp", "w_zp"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "w_scale"], ["scale"]),
             helper.make_node("Mul", ["acc_f", "scale"], ["y"])]
    weights = {"w": rng.integers(-127, 128, (16, 8)).astype(np.int8), "w_zp": np.int8(0),
               "w_scale": np.float32(0.01)}
    return save_model(tmp_path / "dynamic_matmul.onnx", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], weights)


@pytest.mark.parametrize("target", ["torch", "keras", "flax", "tflite"])
@pytest.mark.parametrize("model", [_static_qdq_conv, _dynamic_matmul], ids=["static_qdq", "dynamic"])
def test_quantized_models_reach_targets_without_quantized_kernels(tmp_path, target, model):
    report = convert_and_verify(model(tmp_path), tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def _integer_matmul(path, k: int) -> str:
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [2, k])
    b = helper.make_tensor_value_info("b", TensorProto.UINT8, [k, 3])
    return save_model(path, [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], [a, b],
                      [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])])


def _decomposed(path):
    graph = tb.load(path)
    node = next(n for n in graph.nodes if n.op in ("MatMulInteger", "ConvInteger"))
    taken = op_schema.get(node.op).decompose(graph, node)
    return graph, taken


@pytest.mark.parametrize("k, spans", [(64, 1), (4096, 16)])
def test_integer_accumulation_is_exact(tmp_path, k, spans):
    """255 * 255 * 4096 is past 2**24, where float32 rounds: the product is summed in int32 over spans of 258
    (258 * 255 * 255 < 2**24), each exact in float32, in the reference and in Keras (whose integer matmul
    computes in floating point)."""
    src = _integer_matmul(tmp_path / "mm.onnx", k)
    graph, taken = _decomposed(src)
    assert taken and sum(n.op == "MatMul" for n in graph.nodes) == spans
    feeds = {"a": np.full((2, k), 255, np.uint8), "b": np.full((k, 3), 255, np.uint8)}
    feeds["a"][1, ::2] = 7  # rows that differ
    expected = feeds["a"].astype(np.int64) @ feeds["b"].astype(np.int64)
    np.testing.assert_array_equal(run(graph, feeds)["y"], expected)
    assert convert_and_verify(src, tmp_path, "keras", inputs=feeds).ok


def _conv_integer(path, channels: int, group: int) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, channels, 5, 5])
    w = np.full((2, channels // group, 3, 3), 127, np.int8)  # 127 * 255 per tap
    return save_model(path, [helper.make_node("ConvInteger", ["x", "w"], ["y"], group=group)], [x],
                      [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 2, 3, 3])], {"w": w})


def test_a_wide_convinteger_is_summed_over_channel_spans(tmp_path):
    """64 channels of 9 taps of 127 * 255: past 2**24, so two spans (57 channels, then 7)."""
    src = _conv_integer(tmp_path / "conv.onnx", 64, 1)
    graph, taken = _decomposed(src)
    assert taken and sum(n.op == "Conv" for n in graph.nodes) == 2
    feeds = {"x": np.full((1, 64, 5, 5), 255, np.uint8)}
    feeds["x"][0, :, 2] = 3
    assert convert_and_verify(src, tmp_path, "keras", inputs=feeds).ok


def test_a_grouped_convinteger_float32_cannot_add_exactly_stays_refused(tmp_path):
    src = _conv_integer(tmp_path / "conv.onnx", 128, 2)
    assert not _decomposed(src)[1]
    with pytest.raises(UnsupportedError, match="ConvInteger"):
        tb.save(tb.load(src), tmp_path / "conv_keras", to="keras")
    assert not (tmp_path / "conv_keras").exists()
