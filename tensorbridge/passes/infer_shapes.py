"""Shape and dtype inference over a whole graph (each node by `ops.infer.infer_node`).

Known types (e.g. declared by the source model) are kept; `set_input_shapes` gives inputs new
dims and infers everything again.
"""

from __future__ import annotations

from tensorbridge.ir import shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.ops.control import specialize_carried
from tensorbridge.ops.infer import infer_node


def infer_shapes(graph: Graph) -> Graph:
    for node in graph.nodes:
        for g in node.subgraphs():
            infer_shapes(g)
        if next(node.subgraphs(), None) is not None:
            specialize_carried(node, infer_shapes)
        infer_node(node)
    return graph


def set_input_shapes(graph: Graph, input_shapes: dict) -> Graph:
    """Give inputs new (static or named) dims and infer every other shape again. An output whose shape is then
    unknown (an If whose branches' results differ) keeps the rank it was declared with, its dims open."""
    from tensorbridge.errors import ModelError

    names = [v.name for v in graph.inputs]
    for key, dims in input_shapes.items():
        if key not in names:
            raise ModelError(f"an input shape names {key!r}, but the inputs are {names}")
        graph.inputs[names.index(key)].shape = shapes.normalize(dims)
    declared = {id(v): len(v.shape) for v in graph.outputs if v.shape is not None and v.producer is not None}
    for node in graph.all_nodes():
        for v in node.outputs:
            v.shape = None
            v.meta.pop("elements", None)
    infer_shapes(graph)
    for v in graph.outputs:
        if v.shape is None and id(v) in declared:
            v.shape = (None,) * declared[id(v)]
    return graph
