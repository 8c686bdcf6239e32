"""Darknet backend: IR `Graph` -> `model.cfg` + `model.weights` that libdarknet loads.

Darknet runs a list of layers, each reading the one before it; the writer walks the graph in order and lets
each node's export rule (rules/darknet) add a section. A layer that must read another layer's output gets a
`[route]` before it; a batch normalisation or activation that follows a convolution, a product or a shortcut
becomes part of that section (`batch_normalize=1`, `activation=`). The model takes one channels-first image
(batch 1 or a symbolic batch, which Darknet sets when it loads the model). What Darknet cannot express is
reported, every node at once, before anything is written. A model read from Darknet is written back with its
weights file header and `[net]` options, so its weights come back bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport
from tensorbridge.formats.darknet import Header, Section, format_cfg, write_weights
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget
from tensorbridge.passes.pipeline import Pipeline, writer_pipeline
from tensorbridge.rules.darknet import REGISTRY
from tensorbridge.rules.darknet.base import WEIGHT_ORDER
from tensorbridge.rules.darknet.layers import inner_nodes

LAYOUT = LayoutTarget(("NCHW",), native="NCHW")
INPUT_READ = "reads the model's input after other layers, which Darknet layers cannot name"
#: layers an activation can be part of
ACTIVATED = ("convolutional", "connected", "shortcut")


def pipeline(layout: LayoutOptions | None = None) -> Pipeline:
    return writer_pipeline("Darknet", LAYOUT, _legalize, layout)


def _legalize(g: Graph) -> Graph:
    """Legalise what no section computes: the nodes a section computes with its own (a detector head's, a
    shortcut's sample) are written with it, whatever Darknet would make of them alone."""
    inside = {n for node in g.nodes for n in inner_nodes(node)}
    return legalize(g, lambda n: None if n in inside else REGISTRY.blocker(n), "Darknet")


def save(graph: Graph, dest, layout: LayoutOptions | None = None, **_options) -> None:
    """Write `dest` (a .cfg) and the .weights beside it."""
    sections, header, arrays = write(graph, layout)
    dest = Path(dest)
    dest.write_text(format_cfg(sections))
    write_weights(dest.with_suffix(".weights"), header, arrays)


def write(graph: Graph, layout: LayoutOptions | None = None) -> tuple[list[Section], Header, list[np.ndarray]]:
    g = pipeline(layout).run(clone(graph))
    report = BlockerReport("export to Darknet", "darknet")
    _check_signature(g, report)
    report.raise_if_any()
    w = Writer(g)
    for node in g.nodes:  # a detector head, a shortcut: one section, whose inner nodes are not written apart
        w.absorbed.update(inner_nodes(node))
    for node in g.nodes:
        if node in w.absorbed:
            continue
        try:
            REGISTRY.export_rule(node.op).write(w, node)
        except _Unwritable as e:
            report.add(node.op, node.name, str(e))
    w.finish_outputs(report)
    report.raise_if_any()
    return w.result(graph.metadata.get("darknet", {}))


def _check_signature(g: Graph, report: BlockerReport) -> None:
    if len(g.inputs) != 1:
        report.add("inputs", "", f"Darknet models take one image; this one takes {len(g.inputs)} inputs")
        return
    x = g.inputs[0]
    shape = x.shape or ()
    if len(shape) != 4 or not all(isinstance(d, int) for d in shape[1:]) or shape[0] not in (1,) and \
            isinstance(shape[0], int) or x.dtype != np.float32:
        report.add("inputs", x.name, f"Darknet models take one float32 image (1, C, H, W), not {x.dtype} "
                                     f"{list(shape)}")


@dataclass
class Layer:
    section: Section
    weights: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.section.kind

    @property
    def options(self) -> dict:
        return self.section.options

    @options.setter
    def options(self, value: dict) -> None:
        self.section.options = value


class Ref:
    """An option naming another layer: written relative to the section it is in (-1: the one before)."""

    def __init__(self, *values):
        self.values = values


class Writer:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.layers: list[Layer] = []
        self.where: dict[int, int] = {id(graph.inputs[0]): -1}
        self.absorbed: set = set()

    # -- what export rules use ---------------------------------------------------------------------------
    def is_last(self, value) -> bool:
        return self.where.get(id(value)) == len(self.layers) - 1

    def index(self, value) -> int:
        if id(value) not in self.where:
            raise _Unwritable(f"reads {value.name}, which no Darknet layer computes")
        return self.where[id(value)]

    def ref(self, *values) -> Ref:
        return Ref(*values)

    def layer(self, kind: str, options: dict, node, weights: dict | None = None, reads="first") -> Layer:
        """Add a section computing `node`'s output; `reads` (default: the node's first input) is routed in when it
        is not the previous layer's output (None: the section names what it reads itself)."""
        reads = node.input(0) if reads == "first" else reads
        if reads is not None and not self.is_last(reads):
            self._route(reads)
        position = len(self.layers)
        options = {k: self._relative(v, position) if isinstance(v, Ref) else v for k, v in options.items()}
        layer = Layer(Section(kind, options), dict(weights or {}))
        self.layers.append(layer)
        self.where[id(node.outputs[0])] = position
        return layer

    def merge(self, node, into) -> Layer:
        """Make `node`'s output the output of the section that computes `into`'s."""
        position = self.index(into.outputs[0])
        self.where[id(node.outputs[0])] = position
        return self.layers[position]

    def activate(self, node, name: str, x=None, inner=()) -> None:
        """`node` is the activation `name` of `x` (default: its input; `inner`: the nodes computing it with it)."""
        x = node.input(0) if x is None else x
        position = self.where.get(id(x))
        layer = self.layers[position] if position is not None and position >= 0 else None
        readers = {user for user, _ in x.uses()}
        if layer is not None and layer.kind in ACTIVATED and layer.options.get("activation", "linear") == "linear" \
                and readers <= {node, *inner} and x not in self.graph.outputs:
            layer.options["activation"] = name
            self.where[id(node.outputs[0])] = position
        else:
            self.layer("activation", {"activation": name}, node, reads=x)

    def alias(self, value, same) -> None:
        self.where[id(value)] = self.index(same)

    # -- assembling ----------------------------------------------------------------------------------------
    def _relative(self, ref: Ref, position: int) -> str:
        indices = [self.index(v) for v in ref.values]
        if any(i < 0 for i in indices):
            raise _Unwritable(INPUT_READ)
        return ", ".join(str(i - position) for i in indices)

    def _route(self, value) -> None:
        if self.index(value) < 0:
            raise _Unwritable(INPUT_READ)
        position = len(self.layers)
        self.layers.append(Layer(Section("route", {"layers": str(self.index(value) - position)})))
        self.where[id(value)] = position  # later readers of the value may read this copy

    def finish_outputs(self, report: BlockerReport) -> None:
        """Darknet outputs its detector heads and its last layer: one output that is not a head becomes the last
        layer (through a [route] when it is not already)."""
        others = [v for v in self.graph.outputs if not self._is_head(self.where.get(id(v)))]
        if len(others) > 1:
            report.add("outputs", "", f"a Darknet model outputs its detector heads and its last layer; this one has "
                                      f"{len(others)} other outputs")
        elif others and self.where.get(id(others[0])) != len(self.layers) - 1:
            self._route(others[0])

    def _is_head(self, position) -> bool:
        return position is not None and position >= 0 and self.layers[position].kind in ("yolo", "region")

    def result(self, source: dict) -> tuple[list[Section], Header, list[np.ndarray]]:
        x = self.graph.inputs[0]
        _, c, h, w = x.shape
        net = dict(source.get("net") or {"batch": 1, "subdivisions": 1})
        net.update({"width": w, "height": h, "channels": c})
        header = Header(*source["version"], source["seen"]) if "version" in source else Header()
        arrays = []
        for layer in self.layers:
            for key in WEIGHT_ORDER.get(layer.kind, ()):
                if key in layer.weights:
                    arrays.append(np.asarray(layer.weights[key], np.float32).reshape(-1))
        return [Section("net", net), *(layer.section for layer in self.layers)], header, arrays


class _Unwritable(Exception):
    """A node reads what no Darknet layer can name (the model's input, after the first layer)."""
