"""ONNX export records for channels-last ops (`--to onnx --layout nhwc`): what onnxruntime runs in NHWC.

Standard ONNX convolutions and pools are channels-first only. onnxruntime's `com.microsoft`
domain has channels-last integer kernels on its CPU provider (its float ones, NhwcConv and the
internal NHWC domain, are not registered there), so a channels-last file holds a quantized model:

- a quantized Conv (QLinearConv after `ops/qlinear.py`) -> com.microsoft.QLinearConv, channels_last=1;
- DequantizeLinear -> MaxPool -> QuantizeLinear with one set of parameters (max commutes with
  quantization) -> MaxPool on the integers -> com.microsoft.NhwcMaxPool;
- GlobalAveragePool -> ReduceMean over the spatial axes, which has no layout.

Everything else is layout-free or had its axes rewritten by the layout planner. A channels-last op
left over (a float Conv, an AveragePool ...) is listed, with every other one, in one error.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import BlockerReport
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.rules.onnx.base import R

DOMAIN = "com.microsoft"


def same_op(node: Node) -> tuple[str, str, dict, tuple[str, ...]]:
    """The ONNX form of an IR op ONNX has: itself. (domain, op type, extra attributes, attributes dropped)"""
    return "", node.op, {}, ()


def _channels_last(op: str, extra: dict, dropped: tuple[str, ...] = ()):
    def write(node: Node):
        return (DOMAIN, op, extra, dropped) if node.attrs.get("layout") == "NHWC" else same_op(node)
    return write


R.add_export(("QLinearConv",), _channels_last("QLinearConv", {"channels_last": 1}))
R.add_export(("MaxPool",), _channels_last("NhwcMaxPool", {}, ("storage_order",)))
CONTRIB = {"QLinearConv", "MaxPool"}


def lower_channels_last(graph: Graph) -> None:
    """Rewrite `graph` (after layout planning in NHWC and `to_qlinear`) into ops with a channels-last
    kernel; raise one error listing every channels-last op that has none."""
    report = BlockerReport("channels-last ONNX export", "onnx")
    for node in list(graph.nodes):
        if node.graph is None or node.attrs.get("layout") != "NHWC":
            continue
        if node.op == "GlobalAveragePool":
            _to_reduce_mean(graph, node)
        elif node.op == "MaxPool" and not _on_integers(graph, node):
            report.add(node.op, node.name, "a channels-last max pool runs on int8/uint8 only (NhwcMaxPool): "
                                           "its input must be dequantized with its output's parameters")
        elif node.op not in CONTRIB:
            why = "ONNX has no channels-last float convolution; onnxruntime's CPU provider runs " \
                  "channels-last only quantized Conv and MaxPool" if node.op == "Conv" else \
                  "no channels-last kernel in ONNX or onnxruntime's com.microsoft domain"
            report.add(node.op, node.name, why)
    report.raise_if_any("Nothing was written. Convert without --layout nhwc for a channels-first file.")


def _to_reduce_mean(graph: Graph, node: Node) -> None:
    x = node.inputs[0]
    b = Builder.replacing(node)
    axes = b.const(np.arange(1, len(x.shape) - 1, dtype=np.int64), b.name("axes"))
    graph.replace_node(node, [b.op("ReduceMean", x, axes, suffix="mean", keepdims=1)])


def _on_integers(graph: Graph, node: Node) -> bool:
    """DQ(x) -> MaxPool -> Q, one per-tensor (scale, zero point) on both sides: pool x itself."""
    dq = node.inputs[0].producer
    uses = node.outputs[0].uses()
    if dq is None or dq.op != "DequantizeLinear" or len(node.outputs) > 1 or len(uses) != 1 \
            or uses[0][0].op != "QuantizeLinear":
        return False
    q = uses[0][0]
    same = all(a is not None and b is not None and a.const is not None and b.const is not None and
               np.asarray(a.const).size == 1 and np.array_equal(a.const, b.const)
               for a, b in ((dq.input(1), q.input(1)), (dq.input(2), q.input(2))))
    if not same:
        return False
    node.set_input(0, dq.inputs[0])
    node.outputs[0].dtype = dq.inputs[0].dtype
    node.outputs[0].quant = q.outputs[0].quant
    graph.replace_node(q, node.outputs)
    return True
