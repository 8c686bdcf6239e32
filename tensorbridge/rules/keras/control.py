"""Keras code for control flow: If as `ops.cond`, Loop as `ops.while_loop` (or, counted with scan outputs, as
`ops.scan` over its iteration numbers), Scan as `ops.scan`, each in a layer class of its own
(backends/keras/own_layers.py: a functional graph holds no control flow). TensorFlow's TFLite converter turns
them into LiteRT's IF and WHILE.

Each body becomes a nested function of the class's `call` reading the enclosing values as a closure. Keras traces
the branches and the loop body once, so their values must keep one shape and type; what differs is refused with
the reason (a Scan of a static length is then unrolled).
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.ir import dtypes
from tensorbridge.ir.shapes import is_static
from tensorbridge.ops.control import (
    branches_blocker,
    counted,
    gated_count,
    traced_loop_blocker,
    traced_scan_blocker,
    values_alike,
)
from tensorbridge.rules import traced_control
from tensorbridge.rules.keras.base import R


@R.exports("If", check=branches_blocker)
def write_if(em, node):
    traced_control.write_cond(em, node, "ops.cond", "ops.reshape")


def _scanned(node) -> bool:
    """Whether a Loop is written as a scan over its iteration numbers: it has scan outputs of static shapes and
    runs its trip count (a computed one too) or, where its first condition is false, no step, its carried values
    keeping their shapes."""
    body = node.attrs["body"]
    carried = len(node.inputs) - 2
    steps = body.outputs[1 + carried:]
    return bool(steps) and gated_count(node) and values_alike(node.inputs[2:], body.outputs[1:1 + carried]) \
        and all(v.shape is not None and is_static(v.shape) and v.dtype is not None for v in steps)


def _iteration_type(body) -> str:
    """The type of the iteration number a Loop body takes."""
    return dtypes.name(body.inputs[0].dtype) if body.inputs[0].dtype is not None else "int64"


@R.exports("Loop", check=lambda node: None if _scanned(node) else traced_loop_blocker(node))
def write_loop(em, node):
    (_write_scanned if _scanned(node) else _write_while)(em, node)


def _write_while(em, node):
    """`ops.while_loop` over (iteration, go on, *carried): the test reads the first two, a step runs the body once
    (its condition made a scalar, as the loop keeps it)."""
    trips, flag = node.input(0), node.input(1)
    body_graph = node.attrs["body"]
    body = em.function(body_graph, f"{node.name}_body")
    carried = [em.namer.name(v.name, "carried") for v in body_graph.inputs[2:]]
    index, going = (em.namer.name(f"{node.name}_{tag}", tag) for tag in ("index", "going"))
    params = [index, going, *carried]
    test_value = P.name(going)
    if trips is not None:
        test_value = P.call("ops.logical_and", test_value,
                            P.binop(P.name(index), "<", P.call("ops.reshape", em.tensor(trips), ())))
    test, step = (em.namer.name(f"{node.name}_{tag}", tag) for tag in ("test", "step"))
    em.body.append(P.function(test, params, [P.ret(test_value)]))
    stepped = [P.assign([going, *carried], P.call(body, *map(P.name, params))),
               P.ret(ast.Tuple([P.binop(P.name(index), "+", 1), P.call("ops.reshape", P.name(going), ()),
                                *map(P.name, carried)], ast.Load()))]
    em.body.append(P.function(step, params, stepped))
    start = [P.call("ops.convert_to_tensor", 0, dtype=_iteration_type(body_graph)),
             P.call("ops.reshape", em.tensor(flag), ()) if flag is not None else P.call("ops.convert_to_tensor", True),
             *(em.tensor(v) for v in node.inputs[2:])]
    final = P.call("ops.while_loop", P.name(test), P.name(step), ast.Tuple(start, ast.Load()))
    em.outs(node, final, len(node.outputs), discarded=2)


def _write_scanned(em, node):
    """`ops.scan` over range(trips). Keras's scan on TensorFlow stacks the step outputs in arrays made for its
    state, so the state holds the step outputs too (zeros before the first step) and each step returns its new
    state as its outputs: the final state gives the carried values, the stacked outputs the scan outputs."""
    body_graph = node.attrs["body"]
    carried = len(node.inputs) - 2
    body = em.function(body_graph, f"{node.name}_body")
    flag = em.tensor(node.input(1)) if node.input(1) is not None else P.call("ops.convert_to_tensor", True)
    step = em.namer.name(f"{node.name}_step", "step")
    out, state = P.name("out"), P.name("state")
    em.body.append(P.function(step, ["state", "index"], [
        P.assign(["out"], P.call(body, P.name("index"), flag,
                                 ast.Starred(P.subscript(state, P.slice_(None, carried)), ast.Load()))),
        P.ret(ast.Tuple([P.subscript(out, P.slice_(1)), P.subscript(out, P.slice_(1))], ast.Load()))]))
    start = [em.tensor(v) for v in node.inputs[2:]]
    start += [P.call("ops.zeros", tuple(v.shape), dtype=dtypes.name(v.dtype)) for v in body_graph.outputs[1 + carried:]]
    count = P.call("ops.reshape", em.tensor(node.inputs[0]), ())
    if not counted(node):  # no step where the first condition is false
        count = P.call("ops.where", P.call("ops.reshape", flag, ()), count, 0)
    iterations = P.call("ops.arange", count, dtype=_iteration_type(body_graph))
    final, stacked = (em.namer.name(f"{node.name}_{tag}", tag) for tag in ("final", "stacked"))
    em.body.append(P.assign([final, stacked], P.call("ops.scan", P.name(step), ast.Tuple(start, ast.Load()),
                                                     iterations)))
    em.outs(node, P.binop(P.subscript(P.name(final), P.slice_(None, carried)), "+",
                          P.subscript(P.name(stacked), P.slice_(carried))), len(node.outputs))


def _scan_blocker(node) -> str | None:
    body = node.attrs["body"]
    n_state = len(node.inputs) - node.attrs["num_scan_inputs"]
    state, steps = body.outputs[:n_state], body.outputs[n_state:]
    if len(state) != len(steps) or not values_alike(state, steps):
        return "step outputs unlike the state (keras.ops.scan on TensorFlow stores them in arrays made for the state)"
    return traced_scan_blocker(node)


@R.exports("Scan", check=_scan_blocker)
def write_scan(em, node):
    """`ops.scan` over the scan inputs' first axis."""
    traced_control.write_scan(em, node, "ops.scan")
