"""Framework ops that the IR spells as several of its ops, shared by every reader that meets them (PyTorch's `//`,
TensorFlow's FloorDiv and TFLite's FLOOR_DIV are one floor division; torch.flip and tf.reverse one reversal).

Each function takes the reader (`imp.emit`, `imp.const`) and IR values and returns the IR value.
"""

from __future__ import annotations

import numpy as np


def floor_divide(imp, a, b):
    """a / b rounded toward negative infinity. The IR's integer Div truncates, so integers divide a - Mod(a, b)
    (the remainder with the divisor's sign), which b divides exactly."""
    if a.dtype is not None and a.dtype.kind in "iu":
        exact = imp.emit("Sub", [a, imp.emit("Mod", [a, b], suffix="mod")], suffix="exact")
        return imp.emit("Div", [exact, b])
    return imp.emit("Floor", [imp.emit("Div", [a, b], suffix="div")])


def truncate(imp, x):
    """x rounded toward zero: the floor of |x| with x's sign."""
    return imp.emit("Mul", [imp.emit("Sign", [x], suffix="sign"),
                            imp.emit("Floor", [imp.emit("Abs", [x], suffix="abs")], suffix="floor")])


def atan2(imp, y, x):
    """atan2(y, x) from Atan with the quadrant corrections: atan(y/x), + pi or - pi where x < 0 by the sign
    of y, +-pi/2 on the y axis, 0 at the origin."""
    dt = y.dtype or np.float32
    zero = imp.const(0, dtype=dt)
    base = imp.emit("Atan", [imp.emit("Div", [y, x], suffix="ratio")], suffix="atan")
    y_neg = imp.emit("Less", [y, zero], suffix="y_neg")
    half_turn = imp.emit("Where", [y_neg, imp.const(-np.pi, dtype=dt), imp.const(np.pi, dtype=dt)], suffix="half_turn")
    left = imp.emit("Add", [base, half_turn], suffix="left")
    on_axis = imp.emit("Where", [y_neg, imp.const(-np.pi / 2, dtype=dt),
                                 imp.emit("Where", [imp.emit("Greater", [y, zero], suffix="y_pos"),
                                                    imp.const(np.pi / 2, dtype=dt), zero], suffix="up")], suffix="axis")
    result = imp.emit("Where", [imp.emit("Less", [x, zero], suffix="x_neg"), left, base], suffix="by_x")
    return imp.emit("Where", [imp.emit("Equal", [x, zero], suffix="x_zero"), on_axis, result])


def reverse(imp, x, axes):
    """x read backwards along `axes`: a slice stepping back from the last entry past the first."""
    axes = [int(a) for a in np.asarray(axes).ravel()]
    if not axes:
        return imp.emit("Identity", [x])
    n = len(axes)
    ints = lambda values: imp.const(np.asarray(values, np.int64), dtype=np.int64)  # noqa: E731
    return imp.emit("Slice", [x, ints([-1] * n), ints([-2**62] * n), ints(axes), ints([-1] * n)])
