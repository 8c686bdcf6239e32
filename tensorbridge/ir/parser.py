"""Parser for the text form written by `printer.py` (round trip: parse(print(g)) == g).

Constants printed as `<external>` take their data from `weights` (name -> array), e.g. the
weights of the `.tbir` the text came from.
"""

from __future__ import annotations

import json

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import QuantParams, Value

_STOP = set(" \t\n,()=:{}[]#@~")


class _Cursor:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def error(self, what: str) -> ModelError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ModelError(f"IR text, line {line}: {what}")

    def skip(self, newlines: bool = True) -> None:
        ws = " \t\n\r" if newlines else " \t"
        while self.pos < len(self.text) and self.text[self.pos] in ws:
            self.pos += 1

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def expect(self, s: str) -> None:
        if not self.peek(s):
            raise self.error(f"expected {s!r}, found {self.text[self.pos:self.pos + 20]!r}")
        self.pos += len(s)

    def json(self):
        self.skip()
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
        except json.JSONDecodeError as e:
            raise self.error(f"bad JSON ({e.msg})") from None
        self.pos = end
        return value

    def word(self) -> str:
        self.skip()
        if self.peek('"'):
            return self.json()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _STOP:
            self.pos += 1
        if start == self.pos:
            raise self.error("expected a name")
        return self.text[start:self.pos]

    def name(self) -> str:
        self.expect("%")
        return self.word()

    def rest_of_line(self) -> str:
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        out = self.text[self.pos:end]
        self.pos = end
        return out


def parse_graph(text: str, weights: dict[str, np.ndarray] | None = None) -> Graph:
    cur = _Cursor(text)
    g = _graph(cur, weights or {}, None, {})
    cur.skip()
    if cur.pos != len(text):
        raise cur.error("unexpected text after the graph")
    return g


def _type(cur: _Cursor, v: Value) -> None:
    cur.skip()
    if cur.peek("?"):
        cur.pos += 1
    else:
        v.dtype = dtypes.dtype(cur.word())
    if cur.text.startswith("[", cur.pos):
        cur.pos += 1
        dims = []
        while not cur.peek("]"):
            if cur.peek("?"):
                cur.expect("?")
                dims.append(None)
            else:
                tok = cur.word()
                dims.append(int(tok) if tok.lstrip("-").isdigit() else tok)
            if cur.peek(","):
                cur.pos += 1
        cur.expect("]")
        v.shape = tuple(dims)
    if cur.text.startswith("@", cur.pos):
        cur.pos += 1
        v.layout = tuple(cur.json()) if cur.peek("[") else cur.word()
    if cur.text.startswith("~", cur.pos):
        cur.pos += 1
        v.quant = QuantParams.from_json(cur.json())


def _graph(cur: _Cursor, weights, parent, scope) -> Graph:
    cur.expect("graph")
    g = Graph(cur.json(), parent)
    scope = dict(scope)
    cur.expect("(")
    while not cur.peek(")"):
        v = g.add_input(cur.name())
        cur.expect(":")
        _type(cur, v)
        scope[v.name] = v
        if cur.peek(","):
            cur.pos += 1
    cur.expect(")")
    cur.expect("->")
    cur.expect("(")
    out_names = []
    while not cur.peek(")"):
        out_names.append(cur.name())
        if cur.peek(","):
            cur.pos += 1
    cur.expect(")")
    cur.expect("{")
    pending_node = None
    while True:
        if cur.peek("}"):
            cur.pos += 1
            break
        if cur.peek("return"):
            cur.expect("return")
            cur.rest_of_line()
            continue
        if cur.peek("metadata"):
            cur.expect("metadata")
            g.metadata = cur.json()
            continue
        if cur.peek("."):
            cur.pos += 1
            key = cur.word()
            cur.expect("=")
            if pending_node is None:
                raise cur.error("subgraph attribute without a node")
            pending_node.attrs[key] = _graph(cur, weights, g, scope)
            continue
        pending_node = _statement(cur, g, weights, scope)
    for n in out_names:
        if n not in scope:
            raise cur.error(f"output {n!r} is not defined")
        g.outputs.append(scope[n])
    return g


def _statement(cur: _Cursor, g: Graph, weights, scope):
    decls = []
    while True:
        nm = cur.name()
        if cur.peek("= const"):
            cur.expect("=")
            cur.expect("const")
            probe = Value(nm)
            _type(cur, probe)
            if cur.peek("<external>"):
                cur.expect("<external>")
                if nm not in weights:
                    raise cur.error(f"constant {nm!r} is external and no weights were given for it")
                arr = np.asarray(weights[nm])
            else:
                data = cur.json()
                arr = np.array(data, dtype=object if dtypes.name(probe.dtype) == "string" else None)
                arr = arr.astype(probe.dtype).reshape(probe.shape)
            v = g.add_constant(nm, arr)
            v.layout, v.quant = probe.layout, probe.quant
            scope[nm] = v
            return None
        cur.expect(":")
        v = Value(nm)
        _type(cur, v)
        decls.append(v)
        if cur.peek(","):
            cur.pos += 1
            continue
        break
    cur.expect("=")
    op = cur.word()
    cur.expect("(")
    inputs = []
    while not cur.peek(")"):
        if cur.peek("_"):
            cur.pos += 1
            inputs.append(None)
        else:
            n = cur.name()
            if n not in scope:
                raise cur.error(f"{n!r} is used before it is defined")
            inputs.append(scope[n])
        if cur.peek(","):
            cur.pos += 1
    cur.expect(")")
    cur.skip(newlines=False)
    attrs = {}
    if cur.text.startswith("{", cur.pos):
        attrs = {k: _attr(v) for k, v in cur.json().items()}
    cur.skip(newlines=False)
    meta = {}
    if cur.text.startswith("#", cur.pos):
        cur.pos += 1
        meta = cur.json()
    node_name = meta.pop("name", op)
    node = g.add_node(op, inputs, attrs, outputs=[d.name for d in decls], name=node_name, meta=meta)
    for out, d in zip(node.outputs, decls):
        out.dtype, out.shape, out.layout, out.quant = d.dtype, d.shape, d.layout, d.quant
        scope[d.name] = out
    return node


def _attr(v):
    if isinstance(v, dict) and "array" in v:
        a = v["array"]
        if a["data"] == "<external>":
            raise ModelError("a tensor attribute too large to print cannot be parsed back")
        data = json.loads(a["data"])
        return np.array(data).astype(dtypes.dtype(a["dtype"])).reshape(a["shape"])
    return v
