"""Readable text form of a graph (what `tensorbridge inspect` prints); `parser.py` reads it back.

    graph "main" (%x: float32[N,3,8,8]) -> (%y) {
      %w = const float32[4,3,3,3]
      %b = const float32[2] [0.5, -1.0]
      %y: float32[N,4,6,6] = Conv(%x, %w, _) {"strides":[1,1]}  # {"framework":"onnx","name":"conv1"}
      return %y
    }

Names that are not plain identifiers are JSON-quoted, attributes are JSON, so hostile
names print safely and parse back exactly. Constants of at most `INLINE_LIMIT` elements
print their values; larger ones are `<external>` and come from the weights on parse.
"""

from __future__ import annotations

import json
import re

import numpy as np

from tensorbridge.ir import dtypes, shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.serde import attr_to_json
from tensorbridge.ir.value import Value

INLINE_LIMIT = 16
_PLAIN = re.compile(r"^[A-Za-z0-9_.\-/]+$")


def name(n: str) -> str:
    return "%" + (n if _PLAIN.match(n) else json.dumps(n))


def type_text(v: Value) -> str:
    out = "?" if v.dtype is None else dtypes.name(v.dtype)
    if v.shape is not None:
        out += "[" + ",".join("?" if d is None else (str(d) if isinstance(d, int) else json.dumps(d)
                                                     if not _PLAIN.match(d) else d) for d in v.shape) + "]"
    if v.layout:
        out += "@" + (v.layout if isinstance(v.layout, str) else json.dumps(list(v.layout), separators=(",", ":")))
    if v.quant is not None:
        out += "~" + json.dumps(v.quant.to_json(), separators=(",", ":"))
    return out


def _const_data(arr: np.ndarray) -> str:
    if arr.size > INLINE_LIMIT:
        return "<external>"
    if dtypes.name(arr.dtype) == "string":
        return json.dumps([str(s) for s in arr.ravel()])
    flat = arr.astype(np.float64).ravel() if dtypes.is_float(arr.dtype) else arr.ravel()
    return json.dumps([v.item() if isinstance(v, np.generic) else v for v in flat])


def print_graph(g: Graph, indent: str = "") -> str:
    lines = []
    ins = ", ".join(f"{name(v.name)}: {type_text(v)}" for v in g.inputs)
    outs = ", ".join(name(v.name) for v in g.outputs)
    lines.append(f"{indent}graph {json.dumps(g.name)} ({ins}) -> ({outs}) {{")
    inner = indent + "  "
    if g.metadata:
        lines.append(f"{inner}metadata {json.dumps(_plain(g.metadata), separators=(',', ':'))}")
    for v in g.constants.values():
        lines.append(f"{inner}{name(v.name)} = const {type_text(v)} {_const_data(v.const)}")
    for n in g.nodes:
        outs_t = ", ".join(f"{name(v.name)}: {type_text(v)}" for v in n.outputs)
        args = ", ".join("_" if v is None else name(v.name) for v in n.inputs)
        line = f"{inner}{outs_t} = {n.op}({args})"
        plain_attrs = {}
        graphs = {}
        for k, a in n.attrs.items():
            if isinstance(a, Graph):
                graphs[k] = a
            else:
                plain_attrs[k] = attr_to_json(a, None, {}, "") if not isinstance(a, np.ndarray) else \
                    {"array": {"dtype": dtypes.name(a.dtype), "shape": list(a.shape), "data": _const_data(a)}}
        if plain_attrs:
            line += " " + json.dumps(plain_attrs, separators=(",", ":"))
        line += f"  # {json.dumps({'name': n.name, **n.meta}, separators=(',', ':'))}"
        lines.append(line)
        for k, sg in graphs.items():
            lines.append(f"{inner}  .{k} =")
            lines.append(print_graph(sg, inner + "    "))
    lines.append(f"{inner}return {outs}")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x.item() if isinstance(x, np.generic) else x


def summary(g: Graph) -> str:
    """Inputs, outputs and op histogram, for `inspect`."""
    lines = [f"graph {g.name!r}: {sum(1 for _ in g.all_nodes())} nodes, {len(g.constants)} constants "
             f"({g.weight_bytes() / 1e6:.2f} MB of weights)"]
    for title, vals in (("inputs", g.inputs), ("outputs", g.outputs)):
        lines.append(f"{title}:")
        for v in vals:
            lines.append(f"  {v.name}: {dtypes.name(v.dtype) if v.dtype is not None else '?'}"
                         f"{shapes.format_shape(v.shape)}")
    lines.append("ops:")
    for op, count in g.op_histogram().items():
        lines.append(f"  {op:<28} {count}")
    return "\n".join(lines)
