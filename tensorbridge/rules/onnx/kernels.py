"""What onnxruntime has no kernel for although ONNX allows it, rewritten into what it runs, exactly."""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph


def where_on_bytes(graph: Graph) -> Graph:
    """onnxruntime has no Where kernel for bool values (ONNX allows them): select uint8s and cast back, which is
    exact."""
    for node in [n for n in graph.nodes if n.op == "Where" and n.outputs[0].dtype == np.bool_]:
        b = Builder.replacing(node)
        chosen = b.op("Where", node.inputs[0], *(b.op("Cast", v, to="uint8") for v in node.inputs[1:]))
        graph.replace_node(node, [b.op("Cast", chosen, to="bool")])
    return graph


def pad_before_max_pool(graph: Graph) -> Graph:
    """onnxruntime folds a constant Pad into the MaxPool that reads it, which treats the padding as -inf: a
    zero Pad then gives the window's negative maximum instead of 0. A Pad that names its axes is never folded,
    so such a Pad lists the axes it pads (the same Pad)."""
    for node in [n for n in graph.nodes if _constant_pad_read_by_max_pool(n)]:
        pads = node.inputs[1].const.astype(np.int64)
        rank = len(pads) // 2
        axes = [a for a in range(rank) if pads[a] or pads[a + rank]]
        if not axes:
            continue
        b = Builder.replacing(node)
        value = node.inputs[2] if len(node.inputs) > 2 else None
        padded = b.op("Pad", node.inputs[0], b.const(np.concatenate([pads[axes], pads[[a + rank for a in axes]]])),
                      value, b.const(np.array(axes, np.int64), name=b.name("axes")), **node.attrs)
        graph.replace_node(node, [padded])
    return graph


def _constant_pad_read_by_max_pool(node) -> bool:
    if node.op != "Pad" or node.attrs.get("mode", "constant") != "constant" or len(node.inputs) > 3:
        return False
    if node.inputs[1] is None or not node.inputs[1].is_constant:
        return False
    return any(user.op == "MaxPool" for user, _ in node.outputs[0].uses())
