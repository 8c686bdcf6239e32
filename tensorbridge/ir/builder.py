"""`Builder`: the one way importers and decompositions add nodes and constants to a graph.

A builder names each node after its current *base* (a source node's name, or the node a
decomposition replaces) plus an optional suffix, copies the base's provenance into the
node's `meta`, inserts at the end of the graph or before a given node, and infers the new
node's types at once, so the next rule can read them.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.ops.infer import infer_node


class Builder:
    def __init__(self, graph: Graph, base: str = "", meta: dict | None = None, before: Node | None = None):
        self.graph = graph
        self.base = base
        self.meta = dict(meta or {})
        self.before = before

    @classmethod
    def replacing(cls, node: Node) -> Builder:
        """A builder inserting before `node`, naming and attributing new nodes after it."""
        return cls(node.graph, node.name, node.meta, before=node)

    def at(self, base: str, meta: dict | None = None) -> Builder:
        """Name and attribute the following nodes after `base` (the source node being read)."""
        self.base, self.meta = base, dict(meta or {})
        return self

    def name(self, suffix: str = "") -> str:
        base = self.base or "node"
        return f"{base}.{suffix}" if suffix else base

    def node(self, op: str, inputs, attrs: dict | None = None, outputs: int | list[str] = 1,
             suffix: str = "", name: str | None = None) -> Node:
        node = self.graph.add_node(op, inputs, attrs or {}, outputs=outputs, name=name or self.name(suffix),
                                   meta=self.meta, before=self.before)
        infer_node(node)
        return node

    def emit(self, op: str, inputs, attrs: dict | None = None, outputs: int = 1, suffix: str = ""):
        """Add a node; its output, or the list of its outputs when there are several."""
        node = self.node(op, inputs, attrs, outputs, suffix)
        return node.outputs[0] if outputs == 1 else node.outputs

    def op(self, op: str, *inputs: Value | None, suffix: str = "", **attrs) -> Value:
        """Shorthand for a single-output node: `b.op(op, x, y, suffix="scale", axis=1)`."""
        return self.node(op, inputs, attrs, 1, suffix).outputs[0]

    def const(self, array, name: str | None = None, dtype=None, literal: bool = True) -> Value:
        """A constant; `literal` marks one the source wrote in code (not a learned weight)."""
        arr = np.asarray(array, dtype=dtype)
        v = self.graph.add_constant(name or self.name("const"), arr)
        if literal:
            v.meta["role"] = "literal"
        return v

    def named(self, array, suffix: str, dtype=None) -> Value:
        """A literal constant named after the base and `suffix`: `b.named([0, 2], "axes", np.int64)`."""
        return self.const(np.asarray(array, dtype), self.name(suffix))

    def weight(self, name: str, array) -> Value:
        """A learned tensor (a layer's parameter), kept as a weight by code generators."""
        return self.const(array, name, literal=False)
