"""Keras 3 <-> IR: trigonometric, bitwise and integer arithmetic, cumulative ops, arg/top-k selection,
triangles, one-hot, einsum and tiling (`keras.ops` calls both ways).

Each IR op's import converters (`keras.ops` calls -> IR) and export writer (IR -> Keras code) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand, top_k_writer
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules.core import shift_in_range
from tensorbridge.rules.keras.base import R, int_operand, keras_op, op_row, operand_value, result_dtype

op_row("Arccos", "Acos", "ops.arccos")
op_row("Arccosh", "Acosh", "ops.arccosh")
op_row("Arcsin", "Asin", "ops.arcsin")
op_row("Arcsinh", "Asinh", "ops.arcsinh")
op_row("Arctan", "Atan", "ops.arctan")
op_row("Arctanh", "Atanh", "ops.arctanh")
op_row("Cosh", "Cosh", "ops.cosh")
op_row("Sinh", "Sinh", "ops.sinh")
op_row("Tan", "Tan", "ops.tan")
op_row("BitwiseAnd", "BitwiseAnd", "ops.bitwise_and")
op_row("BitwiseOr", "BitwiseOr", "ops.bitwise_or")
op_row("BitwiseXor", "BitwiseXor", "ops.bitwise_xor")
op_row("BitwiseInvert", "BitwiseNot", "ops.bitwise_invert")
op_row("LogicalXor", "Xor", "ops.logical_xor")


@keras_op("Isinf", produces="IsInf")
def read_op_isinf(imp, op, args, kwargs, node):
    return imp.emit("IsInf", [args[0]])


@R.exports("IsInf")
def write_isinf(em, node):
    x = em.tensor(node.inputs[0])
    positive, negative = node.attrs.get("detect_positive", 1), node.attrs.get("detect_negative", 1)
    if positive and negative:
        return em.out(node, P.call("ops.isinf", x))
    if not positive and not negative:
        return em.out(node, P.call("ops.zeros_like", x, dtype="bool"))
    em.out(node, P.call("ops.equal", x, float("inf") if positive else float("-inf")))


@keras_op("Mod", produces="Mod")
def read_op_mod(imp, op, args, kwargs, node):
    from tensorbridge.rules.keras.base import elementwise

    return elementwise(imp, op, args, kwargs, node, "Mod")


@R.exports("Mod")
def write_mod(em, node):
    """fmod=0: the divisor's sign (ops.mod, as Python's %); fmod=1: the dividend's, a - trunc(a / b) * b."""
    a, b = (em.tensor(v) for v in node.inputs)
    if not node.attrs.get("fmod", 0):
        return em.out(node, P.call("ops.mod", a, b))
    if node.inputs[0].dtype is not None and node.inputs[0].dtype.kind == "f":
        quotient = P.call("ops.trunc", P.call("ops.divide", a, b))
    else:  # integer division rounding toward zero
        quotient = P.call("ops.cast", P.call("ops.trunc", P.call("ops.divide", a, b)),
                          dtypes.name(node.inputs[0].dtype))
    em.out(node, P.call("ops.subtract", a, P.call("ops.multiply", quotient, b)))


@R.exports("BitShift", check=shift_in_range)
def write_bit_shift(em, node):
    fn = "ops.left_shift" if node.attrs["direction"] == "LEFT" else "ops.right_shift"
    em.out(node, P.call(fn, *(em.tensor(v) for v in node.inputs)))


# -- cumulative ops ----------------------------------------------------------------------------------
@keras_op("Cumsum", "Cumprod", produces=("CumSum", "CumProd"))
def read_op_cumulative(imp, op, args, kwargs, node):
    ir_op = "CumSum" if type(op).__name__ == "Cumsum" else "CumProd"
    x = args[0]
    if op.axis is None:
        x = imp.emit("Reshape", [x, imp.const([-1], np.int64)], suffix="flat")
    return imp.emit(ir_op, [x, imp.const(int(op.axis or 0), np.int64)])


@R.exports("CumSum", "CumProd")
def write_cumulative(em, node):
    """ops.cumsum/cumprod; `reverse` flips around it, `exclusive` shifts by one (a pad of the identity)."""
    x, axis_v = node.inputs
    rank = len(x.shape) if x.shape is not None else None
    axis = int(const_operand(axis_v).ravel()[0])
    if axis < 0:
        if rank is None:
            raise Unsupported("a cumulative op over a negative axis of unknown rank")
        axis += rank
    reverse, exclusive = node.attrs.get("reverse", 0), node.attrs.get("exclusive", 0)
    fn = "ops.cumsum" if node.op == "CumSum" else "ops.cumprod"
    expr = em.tensor(x)
    if reverse:
        expr = P.call("ops.flip", expr, axis=axis)
    if exclusive:
        if rank is None or not isinstance(x.shape[axis], int):
            raise Unsupported("an exclusive cumulative op over a dynamic axis")
        widths = [[0, 0]] * rank
        widths[axis] = [1, 0]
        size = x.shape[axis]
        start = [0] * rank
        shape = list(x.shape)
        shape[axis] = size - 1
        if any(not isinstance(d, int) for d in shape):
            raise Unsupported("an exclusive cumulative op of a tensor with dynamic dims")
        head = P.call("ops.slice", expr, start, shape)
        identity = 0 if node.op == "CumSum" else 1
        expr = P.call("ops.pad", head, widths, constant_values=identity)
    expr = P.call(fn, expr, axis=axis)
    if reverse:
        expr = P.call("ops.flip", expr, axis=axis)
    em.out(node, expr)


# -- selection -----------------------------------------------------------------------------------------
@keras_op("Argmax", "Argmin", produces=("ArgMax", "ArgMin"))
def read_op_arg(imp, op, args, kwargs, node):
    if op.axis is None:
        raise ModelError(f"{op.name}: argmax/argmin over the flattened tensor is not supported")
    ir_op = "ArgMax" if type(op).__name__ == "Argmax" else "ArgMin"
    return imp.emit(ir_op, [args[0]], {"axis": int(op.axis), "keepdims": int(bool(op.keepdims))})


@R.exports("ArgMax", "ArgMin")
def write_arg(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 0)
    expr = em.tensor(x)
    if node.attrs.get("select_last_index", 0):
        if x.shape is None or not isinstance(x.shape[axis], int):
            raise Unsupported("select_last_index over a dynamic axis")
        last = x.shape[axis] - 1
        found = P.call("ops.argmax" if node.op == "ArgMax" else "ops.argmin", P.call("ops.flip", expr, axis=axis),
                       axis=axis, keepdims=bool(node.attrs.get("keepdims", 1)))
        return em.out(node, P.call("ops.subtract", last, found))
    fn = "ops.argmax" if node.op == "ArgMax" else "ops.argmin"
    em.out(node, P.call("ops.cast", P.call(fn, expr, axis=axis, keepdims=bool(node.attrs.get("keepdims", 1))),
                        "int64"))


@keras_op("TopK", produces="TopK")
def read_op_top_k(imp, op, args, kwargs, node):
    if not op.sorted:
        raise ModelError(f"{op.name}: unsorted top_k is not supported")
    return imp.emit("TopK", [args[0], imp.const([int(op.k)], np.int64)], {"axis": -1}, outputs=2)


R.exports("TopK")(top_k_writer("ops", "ops.top_k", index_cast=lambda i: P.call("ops.cast", i, "int64")))


@R.exports("Hardmax")
def write_hardmax(em, node):
    x = node.inputs[0]
    if x.shape is None or not isinstance(x.shape[node.attrs.get("axis", -1)], int):
        raise Unsupported("Hardmax over a dynamic axis")
    axis = node.attrs.get("axis", -1)
    depth = x.shape[axis]
    em.out(node, P.call("ops.one_hot", P.call("ops.argmax", em.tensor(x), axis=axis), depth,
                        axis=_one_hot_axis(axis, len(x.shape)), dtype=dtypes.name(x.dtype)))


# -- triangles, einsum, tiling, one-hot -------------------------------------------------------------------
@keras_op("Tril", "Triu", produces="Trilu")
def read_op_tri(imp, op, args, kwargs, node):
    upper = int(type(op).__name__ == "Triu")
    return imp.emit("Trilu", [args[0], imp.const(int(op.k), np.int64)], {"upper": upper})


@R.exports("Trilu")
def write_trilu(em, node):
    """ops.triu / ops.tril; a diagonal offset beyond the matrix (TensorFlow's band part refuses it) is clamped to
    its edge, where the triangle is already all or nothing."""
    k = int(const_operand(node.input(1)).ravel()[0]) if node.input(1) is not None else 0
    rows, cols = (node.inputs[0].shape or (None, None))[-2:]
    if isinstance(rows, int) and isinstance(cols, int):
        k = max(-rows, min(k, cols))
    fn = "ops.triu" if node.attrs.get("upper", 1) else "ops.tril"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), k=k))


@keras_op("Einsum", produces="Einsum")
def read_op_einsum(imp, op, args, kwargs, node):
    """ops.einsum; an operand the layer computed when traced (ViTDet's relative positions) is a constant."""
    return imp.emit("Einsum", [operand_value(imp, a, result_dtype(node)) for a in args], {"equation": op.subscripts})


@R.exports("Det")
def write_det(em, node):
    em.out(node, P.call("ops.det", em.tensor(node.inputs[0])))


def _lowercase_subscripts(equation: str) -> str:
    """The equation with its subscripts renamed a, b, c, ... in order of appearance: Keras's einsum sizes its
    result from lowercase subscripts only (PEGASUS-X writes "BHGF,BHXF->BHGX")."""
    names: dict[str, str] = {}
    for ch in equation:
        if ch.isalpha() and ch not in names:
            names[ch] = chr(ord("a") + len(names))
    if len(names) > 26:
        return equation
    return "".join(names.get(ch, ch) for ch in equation)


@R.exports("Einsum")
def write_einsum(em, node):
    equation = _lowercase_subscripts(node.attrs["equation"].replace(" ", ""))
    em.out(node, P.call("ops.einsum", equation, *(em.tensor(v) for v in node.inputs)))


@keras_op("Tile", produces="Tile")
def read_op_tile(imp, op, args, kwargs, node):
    reps = [int(r) for r in np.atleast_1d(op.repeats)]
    x = args[0]
    if x.shape is not None and len(reps) != len(x.shape):
        raise ModelError(f"{op.name}: ops.tile with repeats of another rank than its input is not supported")
    return imp.emit("Tile", [x, imp.const(reps, np.int64)])


@R.exports("Tile")
def write_tile(em, node):
    em.out(node, P.call("ops.tile", em.tensor(node.inputs[0]), int_operand(node.inputs[1])))


@R.exports("OneHot")
def write_one_hot(em, node):
    """(indices, depth, [off, on]): negative indices count from the end, as ONNX's OneHot reads them."""
    indices, depth, values = node.inputs
    n = int(const_operand(depth).ravel()[0])
    off, on = (v.item() for v in const_operand(values).ravel()[:2])
    idx = em.tensor(indices)
    idx = P.call("ops.where", P.call("ops.less", idx, 0), P.call("ops.add", idx, n), idx)
    dt = dtypes.name(node.outputs[0].dtype)
    axis = _one_hot_axis(node.attrs.get("axis", -1), len(node.outputs[0].shape))
    hot = P.call("ops.one_hot", P.call("ops.cast", idx, "int32"), n, axis=axis, dtype=dt)
    if (off, on) != (0, 1):
        hot = P.call("ops.add", P.call("ops.multiply", hot, on - off), off)
    em.out(node, hot)


def _one_hot_axis(axis: int, out_rank: int) -> int:
    """ops.one_hot's axis: within [0, rank of the indices), or -1 for the new last axis."""
    axis %= out_rank
    return -1 if axis == out_rank - 1 else axis


@R.exports("GatherElements")
def write_gather_elements(em, node):
    data, indices = node.inputs
    axis = node.attrs.get("axis", 0)
    size = data.shape[axis] if data.shape is not None else None
    idx = em.tensor(indices)
    if not isinstance(size, int):
        raise Unsupported("GatherElements over a dynamic axis")
    idx = P.call("ops.where", P.call("ops.less", idx, 0), P.call("ops.add", idx, size), idx)
    em.out(node, P.call("ops.take_along_axis", em.tensor(data), idx, axis=axis))


@R.exports("Mean")
def write_mean(em, node):
    total = em.tensor(node.inputs[0])
    for v in node.inputs[1:]:
        total = P.call("ops.add", total, em.tensor(v))
    em.out(node, P.call("ops.divide", total, float(len(node.inputs))) if len(node.inputs) > 1 else total)


# -- Fourier transforms ------------------------------------------------------------------------------
#: keras.ops' complex transforms (each takes and gives a (real, imaginary) pair) -> (inverse, transformed axes)
_FOURIER = {"FFT": (0, (-1,)), "FFT2": (0, (-2, -1)), "IFFT2": (1, (-2, -1))}


@keras_op(*_FOURIER, produces=("DFT", "Concat", "Unsqueeze", "Split", "Squeeze"))
def read_op_fourier(imp, op, args, kwargs, node):
    """The (real, imaginary) pair stacked on a last axis of 2 (the IR's complex form), one DFT per transformed axis
    (FNet's token mixing is ops.fft2), split back into the pair."""
    inverse, axes = _FOURIER[type(op).__name__]
    pair = args[0]
    last = imp.const([-1], np.int64)
    signal = imp.emit("Concat", [imp.emit("Unsqueeze", [operand, last], suffix=f"part{i}")
                                 for i, operand in enumerate(pair)], {"axis": -1}, suffix="complex")
    for axis in axes:  # an axis of the pair is one before its place in the stacked signal
        signal = imp.emit("DFT", [signal, None, imp.const(axis - 1, np.int64)], {"inverse": inverse},
                          suffix=f"dft{axis}")
    parts = imp.emit("Split", [signal, imp.const([1, 1], np.int64)], {"axis": -1}, outputs=2, suffix="parts")
    return [imp.emit("Squeeze", [part, last], suffix=tag) for part, tag in zip(parts, ("real", "imag"))]
