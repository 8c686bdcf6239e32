"""MXNet backend: IR `Graph` -> `PREFIX-symbol.json` + `PREFIX-0000.params` that MXNet 1.x loads
(`SymbolBlock.imports`, `mx.model.load_checkpoint`).

Each node becomes one MXNet op or a few through the export rules (rules/mxnet/export.py); each constant read as
a tensor becomes a variable with its value in the params (`arg:NAME`; BatchNorm's statistics `aux:NAME`), and
each input a variable that records its shape and dtype (`__shape__`, `__dtype__`), so the files say what they
take. What MXNet cannot express is reported, every node at once, before anything is written.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import BlockerReport
from tensorbridge.formats.mxnet import FLAGS, Node, Symbol, prefix_of, write_params, write_symbol
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget
from tensorbridge.passes.pipeline import Pipeline, writer_pipeline
from tensorbridge.rules.mxnet import REGISTRY

LAYOUT = LayoutTarget(("NCHW",), native="NCHW")


def pipeline(layout: LayoutOptions | None = None) -> Pipeline:
    return writer_pipeline("MXNet", LAYOUT, lambda g: legalize(g, REGISTRY.blocker, "MXNet"), layout)


def save(graph: Graph, dest, layout: LayoutOptions | None = None, **_options) -> None:
    """Write `dest` (`PREFIX-symbol.json`, `PREFIX.json` or `PREFIX`) and `PREFIX-0000.params` beside it."""
    symbol, params = write(graph, layout)
    prefix = prefix_of(dest)
    write_params(prefix.with_name(f"{prefix.name}-0000.params"), params)
    write_symbol(prefix.with_name(f"{prefix.name}-symbol.json"), symbol)


def write(graph: Graph, layout: LayoutOptions | None = None) -> tuple[Symbol, dict[str, np.ndarray]]:
    """(symbol, params by their prefixed names) of the graph."""
    g = pipeline(layout).run(clone(graph))
    report = BlockerReport("export to MXNet", "mxnet")
    for x in g.inputs:
        if x.shape is None or not all(isinstance(d, int) for d in x.shape) or x.dtype not in FLAGS:
            report.add("inputs", x.name, f"MXNet inputs are written with a known shape and dtype, not {x.dtype} "
                                         f"{x.shape}")
    report.raise_if_any()
    w = Writer(g)
    for node in g.nodes:
        REGISTRY.export_rule(node.op).write(w, node)
    w.finish()
    return Symbol(w.nodes, w.heads), w.params


class Writer:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes: list[Node] = []
        self.params: dict[str, np.ndarray] = {}
        self.edge: dict[int, tuple[int, int]] = {}  # IR value -> (node, output)
        self.names: set[str] = set()
        self.heads: list[tuple[int, int]] = []
        for x in graph.inputs:
            attrs = {"__shape__": _text(tuple(x.shape)), "__dtype__": str(FLAGS[x.dtype])}
            self.edge[id(x)] = (self._add(Node("null", self._unique(x.name), attrs)), 0)

    # -- what export rules use ---------------------------------------------------------------------------
    def op(self, kind: str, node, inputs, attrs: dict, outputs=None, name: str | None = None) -> tuple[int, int]:
        """Add an MXNet op computing `node` (or `outputs` of it: none for a step before the op that does) from
        `inputs` (IR values or edges); its first output's edge."""
        edges = [self._edge_of(v) for v in inputs]
        index = self._add(Node(kind, self._unique(name or node.name), {k: _text(v) for k, v in attrs.items()}, edges))
        for k, value in enumerate(outputs if outputs is not None else node.outputs):
            self.edge[id(value)] = (index, k)
        return index, 0

    def bind(self, value, edge: tuple[int, int]) -> None:
        """`value` is the output `edge` of an op already written."""
        self.edge[id(value)] = edge

    def param(self, node, suffix: str, array: np.ndarray):
        """A new parameter of `node` (a transformed weight): the edge of its variable."""
        name = self._unique(f"{node.name}_{suffix}")
        self.params[f"arg:{name}"] = _stored(array)
        return self._add(Node("null", name)), 0

    def aux(self, value):
        """The edge of a constant stored as an auxiliary state (BatchNorm's running statistics)."""
        if id(value) not in self.edge:
            name = self._unique(value.name)
            self.params[f"aux:{name}"] = _stored(value.const)
            self.edge[id(value)] = (self._add(Node("null", name)), 0)
        return self.edge[id(value)]

    # -- assembling --------------------------------------------------------------------------------------
    def _edge_of(self, value) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        if id(value) not in self.edge:
            if value.const is None:
                raise RuntimeError(f"{value.name} is read before it is computed")
            name = self._unique(value.name)
            self.params[f"arg:{name}"] = _stored(value.const)
            self.edge[id(value)] = (self._add(Node("null", name)), 0)
        return self.edge[id(value)]

    def _unique(self, name: str) -> str:
        """MXNet names variables and ops in one namespace; a second use gets a suffix."""
        base, i = name or "node", 1
        while name in self.names:
            name = f"{base}_{i}"
            i += 1
        return name

    def _add(self, node: Node) -> int:
        self.names.add(node.name)
        self.nodes.append(node)
        return len(self.nodes) - 1

    def finish(self) -> None:
        """The heads; an output that is an input or a constant is copied by an op, since MXNet's outputs are ops."""
        for v in self.graph.outputs:
            edge = self._edge_of(v)
            if self.nodes[edge[0]].op == "null":
                edge = (self._add(Node("_copy", self._unique(f"{v.name}_output"), {}, [edge])), 0)
            self.heads.append(edge)


def _stored(array) -> np.ndarray:
    """A parameter as MXNet 1.x stores it: it has no 0-d arrays (a rank-0 entry is an empty one), so a scalar is
    stored with shape (1,), which broadcasts the same."""
    array = np.ascontiguousarray(array)
    return array.reshape(1) if array.ndim == 0 else array


def _text(value) -> str:
    """MXNet's string form of an attribute value."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, tuple | list):
        return "(" + ", ".join("None" if v is None else str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, float):
        return repr(value) if np.isfinite(value) else ("inf" if value > 0 else "-inf")
    return str(value)
