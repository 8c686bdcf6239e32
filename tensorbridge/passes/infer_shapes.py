"""Shape and dtype inference over a whole graph (each node by `ops.infer.infer_node`).

Known types (e.g. declared by the source model) are kept; `set_input_shapes` gives inputs new
dims and infers everything again.
"""

from __future__ import annotations

from tensorbridge.ir import shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.ops.infer import infer_node


def infer_shapes(graph: Graph) -> Graph:
    for node in graph.nodes:
        for g in node.subgraphs():
            infer_shapes(g)
        if node.op == "Loop":
            _specialize_carried(node)
        infer_node(node)
    return graph


def _specialize_carried(loop) -> None:
    """Give a Loop body's carried inputs the static shapes of the values the loop starts from, where the body
    declared them less known (a batch left open when the source was read, fixed since), if the body then gives
    back values of those same shapes: by induction every step keeps them. Otherwise the body is left as it was."""
    body = loop.attrs["body"]
    starts, carried = loop.inputs[2:], body.inputs[2:2 + len(loop.inputs) - 2]
    if not all(v is not None and v.shape is not None and all(isinstance(d, int) for d in v.shape) for v in starts) \
            or all(b.shape is not None and tuple(b.shape) == tuple(v.shape) for b, v in zip(carried, starts)):
        return
    values = [*body.inputs, *(v for n in body.all_nodes() for v in n.outputs)]
    saved = [(v, v.shape, v.dtype, v.meta.get("elements")) for v in values]
    for b, v in zip(carried, starts):
        b.shape = tuple(v.shape)
    for node in body.all_nodes():
        for v in node.outputs:
            v.shape = None
            v.meta.pop("elements", None)
    infer_shapes(body)
    if all(r.shape is not None and tuple(r.shape) == tuple(v.shape) for r, v in zip(body.outputs[1:], starts)):
        return
    for v, shape, dtype, elements in saved:  # the shapes change from step to step after all: as declared
        v.shape, v.dtype = shape, dtype
        if elements is not None:
            v.meta["elements"] = elements


def set_input_shapes(graph: Graph, input_shapes: dict) -> Graph:
    """Give inputs new (static or named) dims and infer every other shape again."""
    from tensorbridge.errors import ModelError

    names = [v.name for v in graph.inputs]
    for key, dims in input_shapes.items():
        if key not in names:
            raise ModelError(f"an input shape names {key!r}, but the inputs are {names}")
        graph.inputs[names.index(key)].shape = shapes.normalize(dims)
    for node in graph.all_nodes():
        for v in node.outputs:
            v.shape = None
            v.meta.pop("elements", None)
    return infer_shapes(graph)
