"""Structural checks of a graph, reporting every problem at once.

Checked: every input of every node is defined before it is read (graph input, constant,
earlier node output, or a value of an enclosing graph), value names are unique, the graph
is acyclic, ops are in the catalogue with attributes of the kinds it declares and valid input/output
counts, values have well-formed dtypes and shapes, and graph outputs are defined.
"""

from __future__ import annotations

import numbers

import numpy as np

from tensorbridge.errors import InvariantError
from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema


def _sequence_of(kind):
    def check(x) -> bool:
        items = x.ravel().tolist() if isinstance(x, np.ndarray) else x
        return isinstance(items, (list, tuple)) and all(isinstance(i, kind) for i in items)
    return check


#: attribute kind -> whether a value is of that kind
_KINDS = {
    "int": lambda x: isinstance(x, numbers.Integral),
    "float": lambda x: isinstance(x, numbers.Real),
    "ints": _sequence_of(numbers.Integral),
    "floats": _sequence_of(numbers.Real),
    "str": lambda x: isinstance(x, str),
    "strs": _sequence_of(str),
    "graph": lambda x: isinstance(x, Graph),
    "tensor": lambda x: isinstance(x, np.ndarray),
    "dtype": lambda x: isinstance(x, (str, np.dtype, type)),
}


def _value_problem(v) -> str | None:
    if v.dtype is not None and not isinstance(v.dtype, np.dtype):
        return f"value {v.name!r} has dtype {v.dtype!r}, not a dtype"
    if v.shape is not None:
        if not isinstance(v.shape, tuple):
            return f"value {v.name!r} has shape {v.shape!r}, not a tuple"
        for d in v.shape:
            if not (d is None or isinstance(d, str) or (isinstance(d, numbers.Integral) and 0 <= d < 1 << 48)):
                made = f" (output of {v.producer.op} {v.producer.name!r})" if v.producer is not None else ""
                return f"value {v.name!r}{made} has dim {d!r} (a size must be a non-negative integer or a name)"
    if v.const is not None and v.shape is not None and len(v.shape) != np.ndim(v.const):
        return f"constant {v.name!r} has {np.ndim(v.const)} dims but its shape says {len(v.shape)}"
    return None


def check(graph: Graph) -> None:
    problems: list[str] = []
    _check(graph, set(), problems)
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise InvariantError(f"graph {graph.name!r} is malformed ({len(problems)} problem(s)):\n{listing}{more}")


def _check(g: Graph, outer: set[int], problems: list[str]) -> None:
    defined = set(outer)
    names: dict[str, str] = {}

    def define(v, what):
        problem = _value_problem(v)
        if problem:
            problems.append(problem)
        if v.name in names:
            problems.append(f"value name {v.name!r} is defined twice ({names[v.name]} and {what})")
        names[v.name] = what
        defined.add(id(v))

    for v in g.inputs:
        define(v, "graph input")
    for v in g.constants.values():
        define(v, "constant")
        if v.const is None:
            problems.append(f"constant {v.name!r} has no data")
    produced_later = {id(v): n for n in g.nodes for v in n.outputs}
    for n in g.nodes:
        for i, v in enumerate(n.inputs):
            if v is None:
                continue
            if id(v) not in defined:
                if id(v) in produced_later:
                    later = produced_later[id(v)]
                    problems.append(f"node {n.name!r} ({n.op}) reads {v.name!r} before node {later.name!r} "
                                    "produces it (cycle or wrong order)")
                else:
                    problems.append(f"node {n.name!r} ({n.op}) input {i} reads {v.name!r}, which nothing defines "
                                    "(dangling input)")
            elif (n, i) not in v._uses:
                problems.append(f"use list of {v.name!r} misses node {n.name!r}")
        schema = op_schema.get(n.op)
        if schema is None:
            problems.append(f"node {n.name!r}: op {n.op!r} is not in the catalogue")
        else:
            unknown = set(n.attrs) - set(schema.attrs)
            if unknown:
                problems.append(f"node {n.name!r} ({n.op}): unknown attribute(s) {sorted(unknown)}")
            missing = [k for k, a in schema.attrs.items() if a.required and n.attrs.get(k) is None]
            if missing:
                problems.append(f"node {n.name!r} ({n.op}): missing attribute(s) {missing}")
            for k, value in n.attrs.items():
                kind = schema.attrs[k].kind if k in schema.attrs else None
                if value is not None and kind in _KINDS and not _KINDS[kind](value):
                    problems.append(f"node {n.name!r} ({n.op}): attribute {k!r} should be {kind}, "
                                    f"got {type(value).__name__}")
            variadic = any(p.variadic for p in schema.inputs)
            if not variadic and len(n.inputs) > len(schema.inputs):
                problems.append(f"node {n.name!r} ({n.op}): {len(n.inputs)} inputs, at most "
                                f"{len(schema.inputs)} allowed")
            required = [p for p in schema.inputs if not p.optional and not p.variadic]
            for idx, p in enumerate(required):
                if idx < len(schema.inputs) and schema.inputs[idx] is p and n.input(idx) is None:
                    problems.append(f"node {n.name!r} ({n.op}): required input {p.name!r} is missing")
            if schema.max_outputs is not None and len(n.outputs) > schema.max_outputs:
                problems.append(f"node {n.name!r} ({n.op}): {len(n.outputs)} outputs, at most "
                                f"{schema.max_outputs}")
        for sg in n.subgraphs():
            _check(sg, defined, problems)
        for v in n.outputs:
            define(v, f"output of {n.name!r}")
    for v in g.outputs:
        if id(v) not in defined:
            problems.append(f"graph output {v.name!r} is not defined")
