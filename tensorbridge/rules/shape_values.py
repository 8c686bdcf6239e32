"""Shape values as Python code: the `shape_write` of code targets' rules (PyTorch, Flax) for ops on the small
integer vectors computed from shapes alone (`Shape` -> `Gather` -> `Concat` -> `Reshape`). The code holds them
as Python ints and lists (`list(x.shape)` and arithmetic on it), so an open dim stays open in PyTorch code and
is the static int JAX traces. The emitter decides which values these are (`CodeEmitter.find_shape_values`)."""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import const_operand


def same(em, node):
    """Cast, Identity: the operand's Python value (a size cast to a float scalar: `float(size)`)."""
    out = node.outputs[0]
    if out.dtype.kind == "f" and node.inputs[0].dtype.kind != "f":
        return em.out(node, P.call("float", em.pylist(node.inputs[0])))
    em.var[id(out)] = em.pylist(node.inputs[0])


def arithmetic(sym: str):
    """Elementwise arithmetic on shape vectors: on Python ints, entry by entry (`//` for a division of sizes)."""
    return lambda em, node: entries(em, node, lambda a, b: P.binop(a, sym, b))


def entries(em, node, combine):
    """An op on shape vectors (arithmetic; an exported `expand` asks which entries are -1, then picks): entry by
    entry, on Python ints."""
    out = node.outputs[0]
    if out.shape == ():
        return em.out(node, combine(*[em.pylist(v) for v in node.inputs]))
    em.out(node, P.lit([combine(*[_entry(em, v, i) for v in node.inputs]) for i in range(out.shape[0])]))


def _entry(em, v, i):
    if v.shape == ():
        return em.pylist(v)
    if v.shape is not None and v.shape[0] == 1:
        return P.subscript(em.pylist(v), 0)
    return P.subscript(em.pylist(v), i)


def where(em, node):
    entries(em, node, lambda c, x, y: ast.IfExp(c, x, y))


def equal(em, node):
    entries(em, node, lambda a, b: ast.Compare(a, [ast.Eq()], [b]))


def shape(em, node):
    """`list(x.shape)`, or the part of it the Shape's start and end name."""
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    size = ast.Attribute(em.tensor(node.inputs[0]), "shape", ast.Load())
    part = P.subscript(size, P.slice_(start or None, end)) if (start or end is not None) else size
    em.out(node, P.call("list", part))


def concat(em, node):
    parts = [em.pylist(v) for v in node.inputs]
    expr = parts[0]
    for p in parts[1:]:
        expr = P.binop(expr, "+", p)
    em.out(node, expr)


def gather(em, node):
    data, idx = node.inputs
    ic = np.asarray(const_operand(idx))
    if ic.ndim == 0:
        return em.out(node, P.subscript(em.pylist(data), int(ic)))
    em.out(node, P.lit([P.subscript(em.pylist(data), int(i)) for i in ic.ravel()]))


def reshape(em, node):
    """Squeeze, Unsqueeze and Reshape between a one-entry vector and a scalar (or no change at all)."""
    x, out = node.inputs[0], node.outputs[0]
    if out.shape == ():
        return em.out(node, P.subscript(em.pylist(x), 0))
    if x.shape == ():
        return em.out(node, P.lit([em.pylist(x)]))
    em.var[id(out)] = em.pylist(x)


def slice_(em, node):
    starts, ends = (int(const_operand(v).ravel()[0]) for v in node.inputs[1:3])
    em.out(node, P.subscript(em.pylist(node.inputs[0]), P.slice_(starts, None if ends >= 2**62 else ends)))


def fill(em, node):
    """A small integer vector of one value (an exported `expand` fills ones): a Python list of it."""
    value = np.asarray(node.attrs.get("value") if node.attrs.get("value") is not None else np.zeros(1, np.float32))
    em.out(node, P.binop(P.lit([value.ravel()[0].item()]), "*", P.subscript(em.pylist(node.inputs[0]), 0)))
