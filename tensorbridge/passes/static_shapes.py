"""Computed reshape targets made constants where shape inference already knows them.

Exported models often compute a Reshape's target at run time (Shape -> Gather -> Concat -> Reshape) to keep a
batch dim open. Where the output's inferred shape leaves at most one dim open, that shape, with -1 for the open
dim, is the same target: code targets without shape arithmetic in their graphs (Keras's functional models,
TFLite's converter) can then write the Reshape, and the shape arithmetic becomes dead code.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.graph import Graph


def reshape_to_inferred(graph: Graph) -> Graph:
    for node in [n for n in graph.nodes if n.op == "Reshape" and n.inputs[1].const is None]:
        out = node.outputs[0].shape
        if out is None or node.attrs.get("allowzero") or 0 in out:
            continue
        open_dims = [d for d in out if not isinstance(d, int)]
        if len(open_dims) > 1:
            continue
        target = np.array([d if isinstance(d, int) else -1 for d in out], np.int64)
        node.set_input(1, graph.add_constant(f"{node.name}.shape", target))
    return graph
