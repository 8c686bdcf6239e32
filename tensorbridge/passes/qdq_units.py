"""QDQ node units: every reader of a dequantized tensor gets its own DequantizeLinear.

onnxruntime fuses `DQ -> op -> Q` into one integer kernel only when each DQ feeds that op
alone; a DQ shared by a residual block's convolution and its Add leaves both in float, and
float accumulation rounds differently from the source's integer kernel. TFLite reads one
quantized tensor from many ops, so the frontend's single DQ per tensor is split here.
"""

from __future__ import annotations

from tensorbridge.ir.graph import Graph


def unshare_dequantize(graph: Graph) -> int:
    """Give each extra reader of a DequantizeLinear output its own copy; returns how many were added."""
    added = 0
    for dq in [n for n in graph.nodes if n.op == "DequantizeLinear"]:
        out = dq.outputs[0]
        readers = [(node, i) for node, i in out.uses() if node.graph is graph]
        for node, i in readers[0 if out in graph.outputs else 1:]:
            copy = graph.add_node("DequantizeLinear", dq.inputs, dict(dq.attrs), name=dq.name, meta=dq.meta,
                                  before=node)
            v = copy.outputs[0]
            v.dtype, v.shape, v.layout = out.dtype, out.shape, out.layout
            node.set_input(i, v)
            added += 1
    return added
