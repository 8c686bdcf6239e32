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
