"""What the code generators' emit rules share: the Unsupported signal, operand helpers and checks."""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P


class Unsupported(Exception):
    """A node configuration the target framework cannot express (collected into one report)."""


def const_operand(v) -> np.ndarray:
    """The constant data of a weight operand (layers need weights as data)."""
    if v is None or v.const is None:
        raise Unsupported(f"{v.name if v is not None else 'weight'} must be a constant to become a layer weight")
    return np.asarray(v.const)


def split_sized_at_run_time(node) -> str | None:
    """The check of writers that split by constant sizes: a Split whose sizes the model computes (from the data
    or the input dims) is decomposed into Slices (tensorbridge/ops/shape.py)."""
    sizes = node.input(1)
    return "Split into parts of sizes known only at run time" if sizes is not None and sizes.const is None else None


def same(values):
    """(3, 3) -> 3: layer constructors take one int for a square kernel, stride or padding."""
    values = tuple(int(v) for v in values)
    return values[0] if values and all(v == values[0] for v in values) else values


def from_data(v) -> bool:
    """Whether a value is computed from tensor data (JetMoE's per-expert counts), not only from constants and
    tensor shapes."""
    from tensorbridge.ops import schema as op_schema

    seen, pending = set(), [v]
    while pending:
        value = pending.pop()
        if value is None or value.const is not None or id(value) in seen:
            continue
        seen.add(id(value))
        node = value.producer
        if node is None:
            return True  # a graph input
        schema = op_schema.get(node.op)
        if schema is None or not schema.reads_shape_only:
            pending.extend(node.inputs)
    return False


def int_operand(v) -> list[int]:
    """The entries of a constant integer operand (code takes such an argument as a literal)."""
    if v is None or v.const is None:
        name = v.name if v is not None else "operand"
        raise Unsupported(f"{name} must be a constant, and it is computed from the data when the model runs" if
                          v is not None and from_data(v) else f"{name} must be a constant (if it is computed from "
                          "input dims, fixing them with --input-shape makes it one)")
    return [int(x) for x in np.asarray(v.const).ravel()]


def python_slices(node, rank: int) -> list[ast.expr]:
    """A Slice with constant operands as one Python slice per axis, for `x[...]`. Python clamps out-of-range
    bounds as ONNX does; an end at or beyond ONNX's +-2^62 "to the end" in the step's direction is left open."""
    starts, ends = int_operand(node.inputs[1]), int_operand(node.inputs[2])
    axes = [a % rank for a in int_operand(node.input(3))] if node.input(3) is not None else list(range(len(starts)))
    steps = int_operand(node.input(4)) if node.input(4) is not None else [1] * len(axes)
    items: list[ast.expr] = [P.slice_()] * rank
    for axis, start, stop, step in zip(axes, starts, ends, steps):
        if (step < 0 and stop <= -(2 ** 62)) or (step > 0 and stop >= 2 ** 62):
            stop = None
        items[axis] = P.slice_(start or None if step > 0 else start, stop, step if step != 1 else None)
    return items


def hard_sigmoid_writer(native: str, clip: str):
    """HardSigmoid as `native(x)` where its slope and offset are the usual 1/6 and 0.5, else `clip(a*x + b, 0, 1)`."""
    def write(em, node):
        a, b = node.attrs.get("alpha", 0.2), node.attrs.get("beta", 0.5)
        x = em.tensor(node.inputs[0])
        if abs(a - 1 / 6) < 1e-7 and b == 0.5:
            return em.out(node, P.call(native, x))
        em.out(node, P.call(clip, P.binop(P.binop(x, "*", a), "+", b), 0.0, 1.0))
    return write


def top_k_writer(ns: str, top_k: str, index_cast=None):
    """An export rule for TopK through `top_k(x, k)`, which works on the last axis, largest first (keras.ops',
    jax.lax's): other axes move there and back (`ns`.transpose), smallest first negates; `index_cast(expr)` gives
    the indices as int64 where the target's are narrower."""
    def write(em, node):
        x, k = node.inputs
        rank = len(x.shape) if x.shape is not None else None
        if rank is None:
            raise Unsupported("TopK of a tensor of unknown rank")
        axis = node.attrs.get("axis", -1) % rank
        largest = node.attrs.get("largest", 1)
        if not largest and x.dtype is not None and x.dtype.kind == "u":
            raise Unsupported("smallest-first TopK of unsigned integers")
        perm = [*[a for a in range(rank) if a != axis], axis]
        moved = axis != rank - 1
        expr = em.tensor(x)
        if moved:
            expr = P.call(f"{ns}.transpose", expr, perm)
        if not largest:
            expr = P.call(f"{ns}.negative", expr)
        values, indices = em.namer.name(node.outputs[0].name, "values"), em.namer.name(node.outputs[1].name, "indices")
        em.body.append(P.assign([values, indices], P.call(top_k, expr, int(int_operand(k)[0]))))
        value_expr, index_expr = P.name(values), P.name(indices)
        if index_cast is not None:
            index_expr = index_cast(index_expr)
        if not largest:
            value_expr = P.call(f"{ns}.negative", value_expr)
        if moved:
            back = [int(a) for a in np.argsort(perm)]
            value_expr, index_expr = (P.call(f"{ns}.transpose", e, back) for e in (value_expr, index_expr))
        em.out(node, value_expr, 0)
        em.out(node, index_expr, 1)
    return write
