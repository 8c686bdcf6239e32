"""Shape and dtype inference: fills unknown output types from each op's rule.

Known types (e.g. declared by the source model) are kept. Ops without a rule (or whose rule
cannot decide) are evaluated by the reference interpreter when all their inputs are small
constants, which is exact; otherwise types stay unknown.
"""

from __future__ import annotations

import logging

import numpy as np

from tensorbridge.ir import shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.ops import schema as op_schema

log = logging.getLogger(__name__)
_PROBE_LIMIT = 1 << 16  # elements; larger inputs are not probed


def infer_shapes(graph: Graph) -> Graph:
    for node in graph.nodes:
        for g in node.subgraphs():
            infer_shapes(g)
        infer_node(node)
    return graph


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


def infer_node(node: Node) -> None:
    """Fill the unknown output types (or unknown dims) of one node from its inputs' types."""
    _propagate_elements(node)
    if all(v.dtype is not None and v.shape is not None and None not in v.shape for v in node.outputs):
        return
    for v, (dt, shape) in zip(node.outputs, _infer_node(node)):
        if v.dtype is None and dt is not None:
            v.dtype = np.dtype(dt)
        if shape is not None:
            v.shape = _merge(v.shape, shapes.normalize(shape))


def _merge(known, inferred):
    """Keep what is known; take the inferred dims where the known ones are missing."""
    if known is None or len(known) != len(inferred):
        return inferred if known is None else known
    return tuple(k if k is not None else i for k, i in zip(known, inferred))


def _infer_node(node: Node):
    schema = op_schema.get(node.op)
    if schema is None:
        return []
    try:
        attrs = schema.attr_values(node.attrs, node.name)
    except Exception:  # noqa: BLE001 - inference is best effort; the checker reports bad attrs
        return []
    if schema.infer is not None:
        try:
            result = schema.infer(list(node.inputs), attrs)
            if result and all(r[0] is not None and r[1] is not None for r in result[:len(node.outputs)]):
                return result
            probed = _probe(node)
            return probed or result
        except Exception as e:  # noqa: BLE001
            log.debug("shape rule of %s failed on %s: %s", node.op, node.name, e)
    return _probe(node)


def _probe(node: Node):
    from tensorbridge.reference.interpreter import run_node

    args = []
    for v in node.inputs:
        if v is None:
            args.append(None)
        elif v.const is not None:
            args.append(v.const)
        else:
            return []  # data-dependent shapes cannot be probed with made-up data
    if sum(a.size for a in args if a is not None) > _PROBE_LIMIT * 16:
        return []
    try:
        outs = run_node(node, args)
    except Exception:  # noqa: BLE001
        return []
    return [(o.dtype, o.shape) if o is not None else (None, None) for o in outs]


def elements(v) -> list | None:
    """Known entries (int, symbolic name or None) of a small integer vector, e.g. a shape."""
    if v is None:
        return None
    if v.const is not None:
        arr = np.asarray(v.const)
        return [int(x) for x in arr.ravel()] if arr.dtype.kind in "iu" and arr.size <= 16 else None
    return v.meta.get("elements")


def _propagate_elements(node: Node) -> None:
    """Track the entries of shape-like vectors through the ops that compute them, so a Reshape
    whose target is computed from a dynamic shape still gets a known output shape."""
    op, ins, out = node.op, node.inputs, node.outputs[0]
    result = None
    if op == "Shape" and ins[0].shape is not None:
        start, end = node.attrs.get("start", 0) or 0, node.attrs.get("end")
        result = list(ins[0].shape[start:end])
    elif op in ("Cast", "Identity", "Squeeze", "Unsqueeze") or (op == "Reshape" and elements(ins[0]) is not None
                                                                and len(elements(ins[0])) <= 1):
        result = elements(ins[0])
    elif op == "Concat":
        parts = [elements(v) for v in ins]
        result = [e for p in parts for e in p] if all(p is not None for p in parts) else None
    elif op == "Slice" and elements(ins[0]) is not None:
        vals = [elements(v) for v in ins[1:]]
        if all(vals[i] is not None for i in range(2)) and all(v is None or v == [0] for v in vals[2:3]):
            step = vals[3][0] if len(vals) > 3 and vals[3] else 1
            result = elements(ins[0])[vals[0][0]:None if vals[1][0] >= 2**62 else vals[1][0]:step]
    elif op == "Gather" and elements(ins[0]) is not None and elements(ins[1]) is not None:
        data = elements(ins[0])
        result = [data[i] for i in elements(ins[1])]
    if result is not None and len(result) <= 16:
        out.meta["elements"] = result
