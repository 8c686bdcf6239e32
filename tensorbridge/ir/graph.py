"""`Graph`: inputs, outputs, nodes in topological order, named constants, metadata.

The graph's own methods keep use-def links consistent: `add_node`, `remove_node`,
`replace_all_uses`, `replace_node`, `set_output`. Value names are unique within a graph and its subgraphs
(the graph hands them out). A subgraph (If branch, Loop body) may read values of the
graphs that enclose it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorbridge.errors import InvariantError
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value


class Graph:
    def __init__(self, name: str = "main", parent: Graph | None = None):
        self.name = name
        self.parent = parent
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        self.constants: dict[str, Value] = {}
        self.metadata: dict[str, Any] = {}
        self._names: set[str] = set() if parent is None else parent._names
        self._node_names: set[str] = set() if parent is None else parent._node_names

    # -- naming -----------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        """A value name not used yet in this graph family (`base`, else `base_1`, ...)."""
        return _claim(self._names, base or "v")

    def _unique_node_name(self, base: str) -> str:
        return _claim(self._node_names, base)

    def subgraph(self, name: str) -> Graph:
        """A new graph nested in this one (shares the name space, may read outer values)."""
        return Graph(name, parent=self)

    # -- building ---------------------------------------------------------------------------
    def add_input(self, name: str, dtype=None, shape=None) -> Value:
        v = Value(self.unique_name(name), dtype, shape)
        self.inputs.append(v)
        return v

    def add_constant(self, name: str, array) -> Value:
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)
        v = Value(self.unique_name(name), const=array)
        self.constants[v.name] = v
        return v

    def add_node(self, op: str, inputs: Iterable[Value | None], attrs: dict | None = None,
                 outputs: int | list[str] = 1, name: str | None = None,
                 meta: dict | None = None, before: Node | None = None) -> Node:
        """Create a node with fresh output values and insert it (at the end, or `before`)."""
        node = Node(op, self._unique_node_name(name or op), attrs, meta)
        node.graph = self
        node.set_inputs(list(inputs))
        out_names = [f"{node.name}_out{i}" if i else node.name for i in range(outputs)] \
            if isinstance(outputs, int) else outputs
        for i, out in enumerate(out_names):
            v = Value(self.unique_name(out))
            v.producer, v.index = node, i
            node.outputs.append(v)
        if before is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(self.nodes.index(before), node)
        return node

    def op(self, op: str, *inputs: Value | None, name: str | None = None, **attrs) -> Value:
        """Shorthand: add a single-output node and return its output."""
        return self.add_node(op, inputs, attrs, name=name).outputs[0]

    # -- editing ----------------------------------------------------------------------------
    def remove_node(self, node: Node) -> None:
        """Remove a node whose outputs are no longer used."""
        for v in node.outputs:
            if v._uses or any(o is v for o in self.outputs):
                raise InvariantError(f"cannot remove node {node.name!r}: output {v.name!r} still used")
        node.detach()
        self.nodes.remove(node)
        node.graph = None

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make every reader of `old` (nodes, graph outputs) read `new` instead."""
        for node, i in old.uses():
            node.set_input(i, new)
        self.outputs = [new if o is old else o for o in self.outputs]

    def replace_node(self, node: Node, new_outputs) -> None:
        """Swap a node's outputs for replacements, drop the node; the replacements take over its output names
        (a graph input keeps its own: it is the model's interface)."""
        pairs = list(zip(node.outputs, new_outputs))
        for old, new in pairs:
            new.shape = new.shape if new.shape is not None else old.shape
            new.dtype = new.dtype if new.dtype is not None else old.dtype
            self.replace_all_uses(old, new)
        self.remove_node(node)
        for old, new in pairs:
            if not any(new is v for v in self.inputs):
                new.name, old.name = old.name, new.name

    def only_reader(self, value: Value) -> Node | None:
        """The one node that reads `value`; None when several do, none does, or it is a graph output."""
        uses = value.uses()
        return uses[0][0] if len(uses) == 1 and value not in self.outputs else None

    def set_output(self, index: int, value: Value) -> None:
        self.outputs[index] = value

    def remove_constant(self, value: Value) -> None:
        if value._uses:
            raise InvariantError(f"constant {value.name!r} is still used")
        self.constants.pop(value.name, None)

    # -- queries ----------------------------------------------------------------------------
    def values(self) -> Iterable[Value]:
        """Every value defined in this graph (inputs, constants, node outputs)."""
        yield from self.inputs
        yield from self.constants.values()
        for n in self.nodes:
            yield from n.outputs

    def find_value(self, name: str) -> Value | None:
        for v in self.values():
            if v.name == name:
                return v
        for n in self.nodes:
            for g in n.subgraphs():
                found = g.find_value(name)
                if found is not None:
                    return found
        return None

    def all_nodes(self) -> Iterable[Node]:
        """Nodes of this graph and, depth first, of its subgraphs."""
        for n in self.nodes:
            yield n
            for g in n.subgraphs():
                yield from g.all_nodes()

    def layouts(self) -> dict[str, list[int] | str]:
        """Value name -> the layout it is held in, for every permuted value (what verification needs to
        compare it with the source's; recorded by every backend in its output)."""
        out = {}
        for node in self.all_nodes():
            for v in node.outputs:
                if v.layout:
                    out[v.name] = v.layout if isinstance(v.layout, str) else list(v.layout)
        for v in self.inputs:
            if v.layout:
                out[v.name] = list(v.layout)
        return out

    def op_histogram(self) -> dict[str, int]:
        hist: dict[str, int] = {}
        for n in self.all_nodes():
            hist[n.op] = hist.get(n.op, 0) + 1
        return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))

    def weight_bytes(self) -> int:
        return sum(int(v.const.nbytes) for v in self.constants.values())

    def topological_sort(self) -> None:
        """Reorder nodes so each comes after its producers; raise on a cycle."""
        produced = {id(v): n for n in self.nodes for v in n.outputs}
        order: list[Node] = []
        state: dict[int, int] = {}
        for root in self.nodes:
            if state.get(id(root)) == 2:
                continue
            stack = [(root, False)]
            while stack:
                node, done = stack.pop()
                if done:
                    state[id(node)] = 2
                    order.append(node)
                    continue
                if state.get(id(node)) in (1, 2):
                    continue
                state[id(node)] = 1
                stack.append((node, True))
                for v in values_read(node):
                    dep = produced.get(id(v))
                    if dep is None:
                        continue
                    if state.get(id(dep)) == 1:
                        raise InvariantError(
                            f"graph {self.name!r} has a cycle through node {dep.name!r} ({dep.op})")
                    if state.get(id(dep)) != 2:
                        stack.append((dep, False))
        self.nodes = order

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self.inputs)} inputs, {len(self.nodes)} nodes, " \
               f"{len(self.outputs)} outputs>"


def _claim(taken: set[str], base: str) -> str:
    name, i = base, 1
    while name in taken:
        name = f"{base}_{i}"
        i += 1
    taken.add(name)
    return name


def values_read(node: Node) -> list[Value]:
    """Values a node reads, including outer values read inside its subgraphs."""
    vals = [v for v in node.inputs if v is not None]
    for g in node.subgraphs():
        for inner in g.all_nodes():
            vals.extend(v for v in inner.inputs if v is not None)
        vals.extend(g.outputs)
    return vals


def clone(graph: Graph, parent: Graph | None = None, mapping: dict | None = None) -> Graph:
    """Structural copy of a graph; constant arrays are shared, not copied."""
    mapping = {} if mapping is None else mapping
    new = Graph(graph.name, parent)
    if parent is None:
        new._names = set(graph._names)
        new._node_names = set(graph._node_names)
    new.metadata = dict(graph.metadata)

    def copy_value(v: Value) -> Value:
        c = Value(v.name, v.dtype, v.shape, v.const)
        c.layout, c.quant, c.meta = v.layout, v.quant, dict(v.meta)
        mapping[id(v)] = c
        return c

    for v in graph.inputs:
        new.inputs.append(copy_value(v))
    for name, v in graph.constants.items():
        new.constants[name] = copy_value(v)
    for n in graph.nodes:
        attrs = {k: clone(a, new, mapping) if isinstance(a, Graph) else a for k, a in n.attrs.items()}
        node = Node(n.op, n.name, attrs, n.meta)
        node.graph = new
        node.set_inputs([None if v is None else mapping.get(id(v), v) for v in n.inputs])
        for i, v in enumerate(n.outputs):
            c = copy_value(v)
            c.producer, c.index = node, i
            node.outputs.append(c)
        new.nodes.append(node)
    new.outputs = [mapping[id(v)] for v in graph.outputs]
    return new
