"""Framework ops that the IR spells as several of its ops, shared by every reader that meets them (PyTorch's `//`,
TensorFlow's FloorDiv and TFLite's FLOOR_DIV are one floor division; torch.flip and tf.reverse one reversal), and
the int64 operands those spellings and the readers' own need.

Each function takes the reader (`imp.emit`, `imp.const`) and IR values and returns the IR value. A constant's
type is the operand's unless the caller names one (`dtype`: Keras gives the result's).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes


def int64s(imp, values):
    """An int64 constant: indices, axes, a shape."""
    return imp.const(np.asarray(values, np.int64), dtype=np.int64)


def as_int64(imp, v, suffix: str):
    """An index-like operand as int64 (TensorFlow's are often int32): converted now when constant."""
    if v.dtype == np.int64:
        return v
    if v.const is not None:
        return int64s(imp, v.const)
    return imp.emit("Cast", [v], {"to": "int64"}, suffix=suffix)


def reduction_identity(reduction: str, dtype):
    """What a slot holds before a scatter reduction writes into it: 0 for add, 1 for mul, the dtype's lowest for
    max and highest for min."""
    dt = np.dtype(dtype)
    limits = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
    return {"add": 0, "mul": 1, "max": limits.min, "min": limits.max}[reduction]


def not_equal(imp, a, b):
    return imp.emit("Not", [imp.emit("Equal", [a, b], suffix="equal")])


def divide_no_nan(imp, a, b):
    """a / b, and 0 where b is 0 (TensorFlow's DivNoNan, keras.ops.divide_no_nan)."""
    zero = imp.const(0, dtype=b.dtype)
    return imp.emit("Where", [imp.emit("Equal", [b, zero], suffix="by_zero"), imp.const(0, dtype=a.dtype),
                              imp.emit("Div", [a, b], suffix="quotient")])


def expm1(imp, x, dtype=None):
    return imp.emit("Sub", [imp.emit("Exp", [x], suffix="exp"), imp.const(1, dtype=dtype or x.dtype)])


def log1p(imp, x, dtype=None):
    return imp.emit("Log", [imp.emit("Add", [x, imp.const(1, dtype=dtype or x.dtype)], suffix="plus1")])


def log_base(imp, x, base: float, dtype=None):
    """The logarithm to `base` (log2, log10): ln(x) / ln(base)."""
    return imp.emit("Div", [imp.emit("Log", [x], suffix="ln"), imp.const(np.log(base), dtype=dtype or x.dtype)])


def erfc(imp, x, dtype=None):
    return imp.emit("Sub", [imp.const(1, dtype=dtype or x.dtype), imp.emit("Erf", [x], suffix="erf")])


def bitcast(imp, x, to, what: str):
    """`x`'s bits read as `to`; between types of different sizes (which changes the shape) `what` is refused."""
    to = np.dtype(to)
    if x.dtype is not None and np.dtype(x.dtype).itemsize != to.itemsize:
        raise ModelError(f"{what} between types of different sizes ({x.dtype} -> {to}) is not supported")
    return imp.emit("BitCast", [x], {"to": dtypes.name(to)})


def unstack(imp, x, axis: int, count: int) -> list:
    """The `count` slices of `x` along `axis`, that axis dropped (tf.unstack, UNPACK, ops.unstack)."""
    parts = imp.emit("Split", [x, int64s(imp, [1] * count)], {"axis": axis}, outputs=count, suffix="split")
    parts = parts if isinstance(parts, list) else [parts]
    return [imp.emit("Squeeze", [p, int64s(imp, [axis])], suffix=f"item{i}") for i, p in enumerate(parts)]


def diagonal(imp, x, shape, offset: int, axis1: int, axis2: int, what: str, suffix: str = ""):
    """The diagonal of `x` (its framework shape `shape`) over two axes of known size, last (torch.diagonal,
    np.diagonal): the two axes moved last and flattened, the diagonal's entries gathered."""
    rank = len(shape)
    axis1, axis2 = axis1 % rank, axis2 % rank
    m, n = shape[axis1], shape[axis2]
    if not isinstance(m, int) or not isinstance(n, int):
        raise ModelError(f"{what}: a diagonal of axes of unknown size ({m}, {n}) is not supported")
    rest = [d for d in range(rank) if d not in (axis1, axis2)]
    moved = imp.emit("Transpose", [x], {"perm": rest + [axis1, axis2]}, suffix="last")
    keep = imp.emit("Slice", [imp.emit("Shape", [moved], suffix="shape"), int64s(imp, [0]), int64s(imp, [len(rest)])],
                    suffix="rest")
    flat_shape = imp.emit("Concat", [keep, int64s(imp, [m * n])], {"axis": 0}, suffix="flat_shape")
    flat = imp.emit("Reshape", [moved, flat_shape], suffix="flat")
    positions = [r * n + r + offset for r in range(max(0, -offset), min(m, n - offset))]
    return imp.emit("Gather", [flat, int64s(imp, positions)], {"axis": len(rest)}, suffix=suffix)


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
    return imp.emit("Slice", [x, int64s(imp, [-1] * n), int64s(imp, [-2**62] * n), int64s(imp, axes),
                              int64s(imp, [-1] * n)])


def mask_over_keys(imp, mask, keys):
    """An attention mask broadcast over the keys (last dim 1: ESM's and RoFormer's query padding, as frameworks
    broadcast it) widened to the keys' count: the IR's Attention, like ONNX's, pads a short mask with -inf."""
    if mask is None or mask.shape is None or not mask.shape or mask.shape[-1] != 1 or keys.shape is None:
        return mask
    count = keys.shape[-2]
    if count == 1:
        return mask
    if isinstance(count, int):
        target = int64s(imp, [1] * (len(mask.shape) - 1) + [count])
    else:
        ones = int64s(imp, [1] * (len(mask.shape) - 1))
        shape = imp.emit("Shape", [keys], suffix="keys_shape")
        count_of = imp.emit("Slice", [shape, int64s(imp, [-2]), int64s(imp, [-1])], suffix="keys_count")
        target = imp.emit("Concat", [ones, count_of], {"axis": 0}, suffix="mask_shape")
    return imp.emit("Expand", [mask, target], suffix="mask_keys")
