"""Lowering of attribute variants: nodes whose attributes ask for a meaning plain ops state only at length.

An op's catalogue entry registers, per such attribute, an exact lowering (`schema.set_lowering`);
the TFLite frontend, for instance, marks LiteRT's integer kernels `int_arithmetic="litert"`
(ops/litert.py). `lower_variants` applies them (`api.save` lowers, before any backend, every variant
the target's registry does not carry out itself: `Registry.variants`): where a lowering does not cover a node's pattern,
the attribute is dropped and the node keeps its plain meaning. `drop_variant` drops one attribute
everywhere, for a user who asks for the plain meaning (`--int-arithmetic float`).
"""

from __future__ import annotations

import logging

from tensorbridge.errors import ModelError
from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema

log = logging.getLogger(__name__)
INT_ARITHMETIC_MODES = ("source", "float")


def has_variants(graph: Graph, keep=()) -> bool:
    return any(_variants(node, keep) for node in graph.all_nodes())


def lower_variants(graph: Graph, keep=()) -> Graph:
    """Lower every node with a non-default variant attribute (except those named in `keep`), subgraphs included."""
    for node in list(graph.nodes):
        for attr, lower in _variants(node, keep):
            if not lower(graph, node):
                log.debug("%s %s: %s=%s does not apply here; plain meaning kept", node.op, node.name, attr,
                          node.attrs[attr])
                node.attrs.pop(attr, None)
            break
        for sub in node.subgraphs() if node.graph is not None else ():
            lower_variants(sub, keep)
    return graph


def drop_variant(graph: Graph, attr: str) -> Graph:
    for node in graph.all_nodes():
        node.attrs.pop(attr, None)
    return graph


def int_arithmetic_pass(mode: str):
    """The pass for `--int-arithmetic`: `source` lowers LiteRT's integer arithmetic exactly, `float` drops it."""
    if mode not in INT_ARITHMETIC_MODES:
        raise ModelError(f"--int-arithmetic must be one of {', '.join(INT_ARITHMETIC_MODES)}, not {mode!r}")
    return lower_variants if mode == "source" else (lambda g: drop_variant(g, "int_arithmetic"))


def _variants(node, keep=()) -> list:
    schema = op_schema.get(node.op)
    if schema is None:
        return []
    return [(attr, fn) for attr, fn in schema.lowerings.items() if node.attrs.get(attr) and attr not in keep]
