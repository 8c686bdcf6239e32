"""What pattern recoveries (`schema.set_recovery`) share: walking up the graph from a value by op, and the
operand checks they make."""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.value import Value


def producer(v: Value | None, *ops: str):
    """The node making `v` when its op is one of `ops`, else None."""
    p = v.producer if v is not None else None
    return p if p is not None and p.op in ops else None


def only_use(v: Value | None, ops: tuple[str, ...], graph) -> object:
    """The node making `v` (op in `ops`) when `v` feeds nothing else and is not a graph output: a node a rewrite
    of its single reader may drop."""
    p = producer(v, *ops)
    return p if p is not None and len(v.uses()) == 1 and v not in graph.outputs else None


def constant(v: Value | None) -> np.ndarray | None:
    """The array a constant holds, else None (also for an absent optional input)."""
    return None if v is None or v.const is None else np.asarray(v.const)


def scalar(v: Value | None) -> float | None:
    """The number a constant of one element holds, else None."""
    if v is None or v.const is None or np.asarray(v.const).size != 1:
        return None
    return float(np.asarray(v.const).ravel()[0])


def other(node, v: Value) -> Value | None:
    """The operand of binary `node` that is not `v`."""
    a, b = node.inputs[:2]
    return b if a is v else a if b is v else None


def strip_cast(v: Value) -> Value:
    """`v` before the Cast that makes it, if one does."""
    cast = producer(v, "Cast")
    return cast.inputs[0] if cast is not None else v
