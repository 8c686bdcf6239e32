"""Caffe backend: IR `Graph` -> `model.prototxt` + `model.caffemodel` that Caffe 1.0 loads.

Caffe names data by blob: each IR value becomes the blob of the same name, each node one layer or a few
(BatchNormalization: BatchNorm and its Scale, in place) through the export rules (rules/caffe/export.py). The
inputs are an Input layer; outputs are the blobs no layer reads, as Caffe defines them, so a part of a Slice
that nothing reads is consumed by a Silence layer. What Caffe cannot express is reported, every node at once,
before anything is written. The net's name comes back from a model read from Caffe.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from google.protobuf import json_format

from tensorbridge.errors import BlockerReport
from tensorbridge.formats.caffe import format_prototxt, messages, write_caffemodel
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget
from tensorbridge.passes.pipeline import Pipeline, writer_pipeline
from tensorbridge.rules.caffe import REGISTRY
from tensorbridge.rules.caffe.base import COPY
from tensorbridge.rules.caffe.export import inner_nodes

LAYOUT = LayoutTarget(("NCHW",), native="NCHW")


def pipeline(layout: LayoutOptions | None = None) -> Pipeline:
    return writer_pipeline("Caffe", LAYOUT, _legalize, layout)


def _legalize(g: Graph) -> Graph:
    inside = inner_nodes(g)
    return legalize(g, lambda n: None if n in inside else REGISTRY.blocker(n), "Caffe")


def save(graph: Graph, dest, layout: LayoutOptions | None = None, **_options) -> None:
    """Write `dest` (a .prototxt) and the .caffemodel beside it."""
    net, blobs = write(graph, layout)
    dest = Path(dest)
    dest.write_text(format_prototxt(net))
    write_caffemodel(dest.with_suffix(".caffemodel"), net, blobs)


def write(graph: Graph, layout: LayoutOptions | None = None):
    """(NetParameter, blobs by layer name) of the graph."""
    g = pipeline(layout).run(clone(graph))
    report = BlockerReport("export to Caffe", "caffe")
    for x in g.inputs:
        if x.dtype != np.float32 or x.shape is None or not all(isinstance(d, int) for d in x.shape):
            report.add("inputs", x.name, f"Caffe takes float32 inputs of known shape, not {x.dtype} {x.shape}")
    report.raise_if_any()
    w = Writer(g, (graph.metadata.get("caffe") or {}).get("name") or graph.name)
    inner = inner_nodes(g)
    for node in g.nodes:
        if node in inner:
            continue
        try:
            REGISTRY.export_rule(node.op).write(w, node)
        except _Unwritable as e:
            report.add(node.op, node.name, str(e))
    report.raise_if_any()
    w.finish()
    return w.net, w.blobs


class Writer:
    def __init__(self, graph: Graph, name: str):
        self.graph = graph
        self.net = messages().NetParameter(name=name)
        self.blobs: dict[str, list[np.ndarray]] = {}
        self.blob: dict[int, str] = {}  # IR value -> the blob holding it
        self.read: set[str] = set()
        for x in graph.inputs:
            self._add({"name": x.name, "type": "Input", "top": [x.name],
                       "input_param": {"shape": [{"dim": list(x.shape)}]}})
            self.blob[id(x)] = x.name

    # -- what export rules use ---------------------------------------------------------------------------
    def name_of(self, value) -> str:
        """The blob holding an IR value (a str is already a blob's name)."""
        if isinstance(value, str):
            return value
        if id(value) not in self.blob:
            raise _Unwritable(f"reads {value.name}, which no Caffe layer computes (a constant?)")
        return self.blob[id(value)]

    def layer(self, kind: str, node, bottoms, params: dict, blobs=(), tops=None, name: str | None = None):
        """Add a layer computing `node`; its tops are `tops` (values or spare blob names; default: the node's
        outputs), its weights `blobs`."""
        bottom_names = [self.name_of(v) for v in bottoms]
        top_names = []
        for top in tops or node.outputs:
            if isinstance(top, str):
                top_names.append(top)
            else:
                self.blob[id(top)] = top.name
                top_names.append(top.name)
        layer_name = name or node.name
        self._add({"name": layer_name, "type": kind, "bottom": bottom_names, "top": top_names, **params})
        self.read.update(bottom_names)
        if len(blobs):
            self.blobs[layer_name] = [np.asarray(b, np.float32) for b in blobs]

    def alias(self, value, same) -> None:
        self.blob[id(value)] = self.name_of(same)

    def spare(self, node, part: str) -> str:
        """The name of a top that nothing reads (a Slice's other parts)."""
        return f"{node.name}.{part}"

    # -- assembling ----------------------------------------------------------------------------------------
    def _add(self, layer: dict) -> None:
        json_format.ParseDict(layer, self.net.layer.add())

    def finish(self) -> None:
        """Copy outputs that are an input (or another output) into a blob of their own, and consume the blobs
        that are not outputs and that nothing reads, so Caffe's outputs are the graph's."""
        taken = {x.name for x in self.graph.inputs}
        for v in self.graph.outputs:
            blob = self.name_of(v)
            if blob in taken:
                top = v.name if v.name not in taken else f"{v.name}.output"
                self._add({"name": top, "type": COPY, "bottom": [blob], "top": [top]})
                self.read.add(blob)
                self.blob[id(v)] = blob = top
            taken.add(blob)
        outputs = {self.name_of(v) for v in self.graph.outputs}
        written = [top for lay in self.net.layer if lay.type != "Input" for top in lay.top]
        unread = [b for b in dict.fromkeys(written) if b not in self.read and b not in outputs]
        if unread:
            self._add({"name": "unread", "type": "Silence", "bottom": unread})


class _Unwritable(Exception):
    """A node reads what no Caffe layer computes."""
