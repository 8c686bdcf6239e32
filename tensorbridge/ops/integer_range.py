"""Bounds of integer tensors, proven from how they are computed: a shape's dims, an index into an axis, a
small constant, and what arithmetic makes of them.

A target whose kernels lack a 64-bit integer op (LiteRT's division) computes it exactly in 32 bits when both
operands are proven to lie in int32's range; nothing else is narrowed. `index_limits` gives the other direction:
the rows an integer input indexes, which values drawn for it must stay below.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.value import Value

#: the largest dim a shape can hold in the runtimes that need this (LiteRT's shapes are int32)
DIM_MAX = 2**31 - 1
INT32 = (-(2**31), 2**31 - 1)
_DEPTH = 64  # a longer chain of producers is taken as unbounded
#: ops whose output holds values of their inputs (listed by input position) and no others
_SELECTING = {"Identity": (0,), "Reshape": (0,), "Squeeze": (0,), "Unsqueeze": (0,), "Flatten": (0,),
              "Transpose": (0,), "Expand": (0,), "Slice": (0,), "Gather": (0,), "GatherElements": (0,),
              "GatherND": (0,), "Tile": (0,), "ReduceMax": (0,), "ReduceMin": (0,), "Concat": None,
              "Max": None, "Min": None, "Where": (1, 2)}
#: ops whose output indexes an axis of their first input: (output position, default axis)
_INDEXING = {"ArgMax": (0, 0), "ArgMin": (0, 0), "TopK": (1, -1), "NonZero": (0, None)}


def integer_range(value: Value | None, known: dict | None = None, depth: int = 0) -> tuple[int, int] | None:
    """(lowest, highest) that `value`'s elements can take, else None (unknown, or not an integer tensor);
    `known` caches the values already bounded (a graph shares them)."""
    known = {} if known is None else known
    if value is None:
        return None
    if id(value) not in known:
        known[id(value)] = _bounds(value, known, depth)
    return known[id(value)]


def _bounds(value: Value, known: dict, depth: int) -> tuple[int, int] | None:
    if value.dtype is None or np.dtype(value.dtype).kind not in "iub":
        return None
    if value.const is not None:
        data = np.asarray(value.const)
        return (int(data.min()), int(data.max())) if data.size else None
    dtype = np.dtype(value.dtype)
    if dtype.kind == "b":
        return (0, 1)
    if dtype.itemsize <= 2:
        info = np.iinfo(dtype)
        return (int(info.min), int(info.max))
    node = value.producer
    if node is None or depth > _DEPTH:
        return None
    op = node.op
    if op in ("Shape", "Size"):
        return (0, DIM_MAX)
    if op in _INDEXING and value is node.outputs[_INDEXING[op][0]]:
        return _index_range(node)
    bounds = [integer_range(v, known, depth + 1) for v in node.inputs]
    if op in ("TopK", "Cast"):  # TopK's values: some of its input's
        return bounds[0]
    if op in _SELECTING:
        chosen = [bounds[i] for i in (_SELECTING[op] or range(len(bounds)))]
        if not chosen or any(b is None for b in chosen):
            return None
        return (min(b[0] for b in chosen), max(b[1] for b in chosen))
    if op == "Range":
        start, limit = bounds[0], bounds[1]
        return None if start is None or limit is None else (min(start[0], limit[0]), max(start[1], limit[1]))
    return _arithmetic(op, bounds)


def _index_range(node) -> tuple[int, int]:
    """Indices into node's input: below the indexed axis's length when it is known (all axes' for NonZero)."""
    x = node.inputs[0]
    if x.shape is None:
        return (0, DIM_MAX)
    dims = list(x.shape) if node.op == "NonZero" else \
        [x.shape[node.attrs.get("axis", _INDEXING[node.op][1])]] if x.shape else []
    if dims and all(isinstance(d, int) for d in dims):
        return (0, max(max(dims) - 1, 0))
    return (0, DIM_MAX)


def _arithmetic(op: str, bounds: list) -> tuple[int, int] | None:
    if op == "Neg" and bounds[0] is not None:
        return (-bounds[0][1], -bounds[0][0])
    if op == "Abs" and bounds[0] is not None:
        lo, hi = bounds[0]
        return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
    if len(bounds) != 2 or None in bounds:
        return None
    (a, b), (c, d) = bounds
    if op == "Add":
        return (a + c, b + d)
    if op == "Sub":
        return (a - d, b - c)
    if op == "Mul":
        corners = [a * c, a * d, b * c, b * d]
        return (min(corners), max(corners))
    if op == "Div" and (c > 0 or d < 0):  # truncating division by a divisor that is never 0
        largest = max(abs(a), abs(b)) // min(abs(c), abs(d))
        return (-largest, largest)
    if op == "Mod":
        largest = max(abs(c), abs(d))
        return (-largest, largest)
    return None


#: ops that pass an index on unchanged in value
_INDEX_CARRIERS = frozenset({"Cast", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Expand"})


def index_limits(graph) -> dict[str, int]:
    """For each integer input used as the indices of a Gather, the fewest rows it indexes (a token-type table of
    2): values a verifier draws for it stay below."""
    limits = {}
    for v in graph.inputs:
        if v.dtype is None or v.dtype.kind not in "iu":
            continue
        frontier, rows = [v], []
        while frontier:
            value = frontier.pop()
            for node, position in value.uses():
                if node.op in _INDEX_CARRIERS and position == 0:
                    frontier.extend(node.outputs)
                elif node.op == "Gather" and position == 1 and node.inputs[0].shape is not None:
                    size = node.inputs[0].shape[node.attrs.get("axis", 0)]
                    rows += [size] if isinstance(size, int) else []
        if rows:
            limits[v.name] = min(rows)
    return limits
