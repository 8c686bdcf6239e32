"""Shape/dtype rules shared by many ops (combinators used in the op tables).

A rule takes the node's input values and its attributes (defaults filled in) and returns
one `(dtype, shape)` pair per output; `None` in either place means unknown.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes, shapes


def same_as(i: int = 0):
    def rule(inputs, attrs):
        v = inputs[i]
        return [(v.dtype, v.shape)]
    return rule


def broadcast_rule(out_dtype=None, first: int = 0):
    """Output shape broadcasts all inputs; dtype is the first input's unless fixed."""
    def rule(inputs, attrs):
        present = [v for v in inputs[first:] if v is not None]
        dt = dtypes.dtype(out_dtype) if out_dtype else present[0].dtype
        return [(dt, shapes.broadcast(*[v.shape for v in present]))]
    return rule


def dtype_from_attr(attr: str, shape_of: int = 0):
    def rule(inputs, attrs):
        return [(dtypes.dtype(attrs[attr]), inputs[shape_of].shape)]
    return rule


def const_ints(value) -> list[int] | None:
    """The constant integer data of a value, if known at conversion time."""
    if value is None or value.const is None:
        return None
    return [int(x) for x in np.asarray(value.const).ravel()]


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis
