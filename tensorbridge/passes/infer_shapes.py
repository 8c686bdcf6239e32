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


def infer_node(node: Node) -> None:
    """Fill the unknown output types of one node (its inputs' types should be known)."""
    if all(v.dtype is not None and v.shape is not None for v in node.outputs):
        return
    for v, (dt, shape) in zip(node.outputs, _infer_node(node)):
        if v.dtype is None and dt is not None:
            v.dtype = np.dtype(dt)
        if v.shape is None and shape is not None:
            v.shape = shapes.normalize(shape)


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
