"""`Node`: one op application — op name, input values, typed attributes, owned outputs.

Inputs are set through `set_input`, which keeps every value's use list consistent. Outputs
are created with the node (by `Graph.add_node`) and never reassigned. `meta` holds
provenance: the source framework, source op type and source node name.
"""

from __future__ import annotations

from typing import Any

from tensorbridge.ir.value import Value


class Node:
    __slots__ = ("op", "name", "_inputs", "outputs", "attrs", "meta", "graph")

    def __init__(self, op: str, name: str, attrs: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None):
        self.op = op
        self.name = name
        self._inputs: list[Value | None] = []
        self.outputs: list[Value] = []
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.meta: dict[str, Any] = dict(meta or {})
        self.graph = None

    @property
    def inputs(self) -> tuple[Value | None, ...]:
        return tuple(self._inputs)

    def set_inputs(self, values) -> None:
        for i, v in enumerate(self._inputs):
            if v is not None:
                v._uses.remove((self, i))
        self._inputs = []
        for v in values:
            self._inputs.append(None)
            self.set_input(len(self._inputs) - 1, v)

    def set_input(self, index: int, value: Value | None) -> None:
        old = self._inputs[index]
        if old is not None:
            old._uses.remove((self, index))
        self._inputs[index] = value
        if value is not None:
            value._uses.append((self, index))

    def input(self, index: int) -> Value | None:
        """Input `index`, or None when absent (optional inputs may be missing at the end)."""
        return self._inputs[index] if index < len(self._inputs) else None

    def detach(self) -> None:
        """Drop all input links (used when a node is removed)."""
        self.set_inputs([])

    def subgraphs(self):
        """Graphs held in attributes (If branches, Loop/Scan bodies)."""
        from tensorbridge.ir.graph import Graph

        for v in self.attrs.values():
            if isinstance(v, Graph):
                yield v

    def __repr__(self) -> str:
        ins = ", ".join("_" if v is None else "%" + v.name for v in self._inputs)
        outs = ", ".join("%" + v.name for v in self.outputs)
        return f"{outs} = {self.op}({ins})  # {self.name}"
