"""Keras 3 -> IR: the `keras.ops` calls that functional models and traced custom layers record and no layer
stands for (numpy-style arithmetic and statistics, moving axes, one-hot, scatters, segment sums).

Converters take (importer, operation, operands, keyword operands, keras node). The generated Keras code
writes these IR ops through the writers beside their other readers.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import (
    as_int64,
    atan2,
    bitcast,
    diagonal,
    divide_no_nan,
    erfc,
    expm1,
    floor_divide,
    int64s,
    log1p,
    log_base,
    truncate,
    unstack,
)
from tensorbridge.rules.keras.base import axes_list, elementwise, keras_op, operand_value, result_dtype


def _float(imp, node, value):
    return imp.const(value, dtype=result_dtype(node))


def _shape(node, i: int = 0) -> tuple:
    """Positional operand `i`'s shape as Keras traced it (None for a dim it does not know), a tensor's or a
    constant's: the IR value may have none yet inside a traced layer."""
    return tuple(np.shape(node.arguments.args[i]) if not hasattr(node.arguments.args[i], "shape")
                 else node.arguments.args[i].shape)


def _rank(value, node, i: int) -> int:
    """The rank of operand `i` (`value`), from the IR value or, when it has no shape yet, from Keras."""
    if value.shape is not None:
        return len(value.shape)
    raise ModelError(f"{node.operation.name}: the rank of operand {i} is not known")


def _size(node, axis: int | None):
    """The size of operand 0 along `axis` (None: flattened), None when Keras does not know it."""
    shape = _shape(node)
    if axis is not None:
        return shape[axis]
    return int(np.prod(shape)) if all(isinstance(d, int) for d in shape) else None


# -- arithmetic --------------------------------------------------------------------------------------------
@keras_op("Square", produces="Mul")
def read_op_square(imp, op, args, kwargs, node):
    return imp.emit("Mul", [args[0], args[0]])


@keras_op("Rsqrt", produces="Reciprocal")
def read_op_rsqrt(imp, op, args, kwargs, node):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", [args[0]], suffix="sqrt")])


@keras_op("Expm1", produces="Sub")
def read_op_expm1(imp, op, args, kwargs, node):
    return expm1(imp, args[0], result_dtype(node))


@keras_op("Log1p", produces="Log")
def read_op_log1p(imp, op, args, kwargs, node):
    return log1p(imp, args[0], result_dtype(node))


@keras_op("Log2", "Log10", produces="Div")
def read_op_log_base(imp, op, args, kwargs, node):
    return log_base(imp, args[0], 2.0 if type(op).__name__ == "Log2" else 10.0, result_dtype(node))


@keras_op("Erfc", produces="Sub")
def read_op_erfc(imp, op, args, kwargs, node):
    return erfc(imp, args[0], result_dtype(node))


@keras_op("Trunc", produces="Floor")
def read_op_trunc(imp, op, args, kwargs, node):
    x = args[0]
    return x if x.dtype is not None and x.dtype.kind in "iub" else truncate(imp, x)


@keras_op("NotEqual", produces="Not")
def read_op_not_equal(imp, op, args, kwargs, node):
    return imp.emit("Not", [elementwise(imp, op, args, kwargs, node, "Equal")])


def _same_type(imp, node, args):
    out = result_dtype(node)
    values = [operand_value(imp, a, out) for a in args]
    return [v if v.dtype == out else imp.emit("Cast", [v], {"to": dtypes.name(out)}, suffix=f"cast{i}")
            for i, v in enumerate(values)]


@keras_op("FloorDivide", produces="Div")
def read_op_floor_divide(imp, op, args, kwargs, node):
    return floor_divide(imp, *_same_type(imp, node, args))


@keras_op("DivideNoNan", produces="Where")
def read_op_divide_no_nan(imp, op, args, kwargs, node):
    return divide_no_nan(imp, *_same_type(imp, node, args))


@keras_op("Fmod", produces="Mod")
def read_op_fmod(imp, op, args, kwargs, node):
    return imp.emit("Mod", _same_type(imp, node, args), {"fmod": 1})


@keras_op("Arctan2", produces=())
def read_op_arctan2(imp, op, args, kwargs, node):
    return atan2(imp, *_same_type(imp, node, args))


@keras_op("LeftShift", "RightShift", "BitwiseLeftShift", "BitwiseRightShift", produces="BitShift")
def read_op_shift(imp, op, args, kwargs, node):
    direction = "LEFT" if "Left" in type(op).__name__ else "RIGHT"
    return imp.emit("BitShift", _same_type(imp, node, args), {"direction": direction})


@keras_op("View", produces="BitCast")
def read_op_view(imp, op, args, kwargs, node):
    to = result_dtype(node)
    x = args[0]
    if op.dtype is None or to == x.dtype:
        return x
    return bitcast(imp, x, to, f"{op.name}: ops.view")


# -- activations -------------------------------------------------------------------------------------------
@keras_op("Selu", produces="Selu")
def read_op_selu(imp, op, args, kwargs, node):
    return imp.emit("Selu", [args[0]])


@keras_op("Celu", produces="Celu")
def read_op_celu(imp, op, args, kwargs, node):
    return imp.emit("Celu", [args[0]], {"alpha": float(op.alpha)})


@keras_op("Softsign", produces="Softsign")
def read_op_softsign(imp, op, args, kwargs, node):
    return imp.emit("Softsign", [args[0]])


@keras_op("HardTanh", produces="Clip")
def read_op_hard_tanh(imp, op, args, kwargs, node):
    return imp.emit("Clip", [args[0], _float(imp, node, -1), _float(imp, node, 1)])


@keras_op("LogSigmoid", produces="Softplus")
def read_op_log_sigmoid(imp, op, args, kwargs, node):
    """log(sigmoid(x)) = -softplus(-x)."""
    return imp.emit("Neg", [imp.emit("Softplus", [imp.emit("Neg", [args[0]], suffix="neg")], suffix="softplus")])


@keras_op("Glu", produces="Sigmoid")
def read_op_glu(imp, op, args, kwargs, node):
    a, b = imp.emit("Split", [args[0]], {"axis": int(op.axis), "num_outputs": 2}, outputs=2, suffix="halves")
    return imp.emit("Mul", [a, imp.emit("Sigmoid", [b], suffix="gate")])


# -- statistics and reductions ---------------------------------------------------------------------------
def population_variance(imp, x, axes, keepdims: bool, suffix: str = ""):
    """(the mean kept along `axes`, the mean squared deviation from it): numpy's default variance."""
    mean = imp.emit("ReduceMean", [x, axes], {"keepdims": 1}, suffix="mean")
    centred = imp.emit("Sub", [x, mean], suffix="centred")
    var = imp.emit("ReduceMean", [imp.emit("Mul", [centred, centred], suffix="squares"), axes],
                   {"keepdims": int(keepdims)}, suffix=suffix)
    return mean, var


@keras_op("Var", "Std", produces="ReduceMean")
def read_op_variance(imp, op, args, kwargs, node):
    """ops.var and ops.std (its root), population statistics."""
    std = type(op).__name__ == "Std"
    axes = int64s(imp, axes_list(op.axis, len(_shape(node))))
    _, var = population_variance(imp, args[0], axes, bool(op.keepdims), "var" if std else "")
    return imp.emit("Sqrt", [var]) if std else var


#: keras.ops reductions with no reader elsewhere -> the IR reduction (any/all over booleans: their max/min)
_REDUCTIONS = {"Amax": "ReduceMax", "Amin": "ReduceMin", "Any": "ReduceMax", "All": "ReduceMin",
               "Logsumexp": "ReduceLogSumExp"}


@keras_op(*_REDUCTIONS, produces=("ReduceMax", "ReduceMin", "ReduceLogSumExp"))
def read_op_reduction(imp, op, args, kwargs, node):
    x = args[0]
    if type(op).__name__ in ("Any", "All") and x.dtype != np.bool_:
        x = imp.emit("Cast", [x], {"to": "bool"}, suffix="truth")
    return imp.emit(_REDUCTIONS[type(op).__name__], [x, int64s(imp, axes_list(op.axis, len(_shape(node))))],
                    {"keepdims": int(bool(op.keepdims))})


# -- moving axes and filling -----------------------------------------------------------------------------
@keras_op("Swapaxes", produces="Transpose")
def read_op_swapaxes(imp, op, args, kwargs, node):
    x = args[0]
    perm = list(range(len(_shape(node))))
    a, b = int(op.axis1) % len(perm), int(op.axis2) % len(perm)
    perm[a], perm[b] = perm[b], perm[a]
    return imp.emit("Transpose", [x], {"perm": perm})


@keras_op("Moveaxis", produces="Transpose")
def read_op_moveaxis(imp, op, args, kwargs, node):
    x = args[0]
    rank = len(_shape(node))
    source = [int(a) % rank for a in np.atleast_1d(op.source)]
    destination = [int(a) % rank for a in np.atleast_1d(op.destination)]
    rest = [d for d in range(rank) if d not in source]
    perm = [None] * rank
    for s, d in sorted(zip(source, destination), key=lambda p: p[1]):
        perm[d] = s
    perm = [p if p is not None else rest.pop(0) for p in perm]
    return imp.emit("Transpose", [x], {"perm": perm})


@keras_op("Ravel", produces="Reshape")
def read_op_ravel(imp, op, args, kwargs, node):
    return imp.emit("Reshape", [args[0], int64s(imp, [-1])])


@keras_op("ZerosLike", "OnesLike", "FullLike", produces="ConstantOfShape")
def read_op_full_like(imp, op, args, kwargs, node):
    out = result_dtype(node)
    kind = type(op).__name__
    if kind == "FullLike":
        fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
        if isinstance(fill, (int, float, bool, np.number)):
            value = fill
        else:
            shape = imp.emit("Shape", [args[0]], suffix="shape")
            filled = operand_value(imp, fill, out)
            return imp.emit("Expand", [filled if filled.dtype == out else imp.emit(
                "Cast", [filled], {"to": dtypes.name(out)}, suffix="fill"), shape])
    else:
        value = 0 if kind == "ZerosLike" else 1
    return imp.emit("ConstantOfShape", [imp.emit("Shape", [args[0]], suffix="shape")],
                    {"value": np.asarray([value], out)})


@keras_op("Repeat", produces="Gather")
def read_op_repeat(imp, op, args, kwargs, node):
    """np.repeat along an axis of known size: a gather of each index repeated."""
    x = args[0]
    if op.axis is None:
        x, axis = imp.emit("Reshape", [x, int64s(imp, [-1])], suffix="flat"), 0
    else:
        axis = int(op.axis) % len(_shape(node))
    size = _size(node, None if op.axis is None else axis)
    if not isinstance(size, int):
        raise ModelError(f"{op.name}: ops.repeat along an axis of unknown size is not supported")
    index = np.repeat(np.arange(size), np.asarray(op.repeats).astype(np.int64))
    return imp.emit("Gather", [x, int64s(imp, index)], {"axis": axis})


@keras_op("Roll", produces="Concat")
def read_op_roll(imp, op, args, kwargs, node):
    """np.roll: the last `shift` entries moved first, per axis (of known size)."""
    x = args[0]
    flat_shape = None
    if op.axis is None:
        flat_shape = imp.emit("Shape", [x], suffix="shape")
        x = imp.emit("Reshape", [x, int64s(imp, [-1])], suffix="flat")
    axes = [0] if op.axis is None else [int(a) for a in np.atleast_1d(op.axis)]
    shifts = np.broadcast_to(np.atleast_1d(op.shift), (len(axes),))
    for axis, shift in zip(axes, shifts):
        size = _size(node, None if op.axis is None else axis)
        if not isinstance(size, int):
            raise ModelError(f"{op.name}: ops.roll along an axis of unknown size is not supported")
        index = (np.arange(size) - int(shift)) % size
        x = imp.emit("Gather", [x, int64s(imp, index)], {"axis": axis}, suffix=f"roll{axis}")
    return imp.emit("Reshape", [x, flat_shape]) if flat_shape is not None else x


@keras_op("Unstack", produces="Split")
def read_op_unstack(imp, op, args, kwargs, node):
    axis = int(op.axis) % len(_shape(node))
    n = _shape(node)[axis]
    if not isinstance(n, int):
        raise ModelError(f"{op.name}: ops.unstack along an axis of unknown size is not supported")
    return unstack(imp, args[0], axis, n)


@keras_op("Slice", produces="Slice")
def read_op_slice(imp, op, args, kwargs, node):
    """ops.slice(x, start_indices, shape): a block of the given shape from the start (computed or constant)."""
    x = args[0]
    start = operand_value(imp, args[1], np.dtype(np.int64))
    start = as_int64(imp, start, "start")
    size = np.asarray(op.shape, np.int64)
    if np.any(size < 0):
        raise ModelError(f"{op.name}: ops.slice with a size of -1 is not supported")
    end = imp.emit("Add", [start, int64s(imp, size)], suffix="end")
    return imp.emit("Slice", [x, start, end])


@keras_op("Diagonal", "Trace", produces=("Gather", "ReduceSum"))
def read_op_diagonal(imp, op, args, kwargs, node):
    """ops.diagonal (the diagonal last, as numpy) and ops.trace (its sum)."""
    trace = type(op).__name__ == "Trace"
    values = diagonal(imp, args[0], _shape(node), int(op.offset), int(op.axis1), int(op.axis2), op.name,
                      "diagonal" if trace else "")
    return imp.emit("ReduceSum", [values, int64s(imp, [-1])], {"keepdims": 0}) if trace else values


# -- indices -----------------------------------------------------------------------------------------------
@keras_op("OneHot", produces="OneHot")
def read_op_one_hot(imp, op, args, kwargs, node):
    """ops.one_hot: an index outside [0, num_classes) gives a row of zeros (as tf.one_hot)."""
    if op.sparse:
        raise ModelError(f"{op.name}: a sparse one-hot is not supported")
    out = result_dtype(node)
    return tf_semantics.one_hot(imp, args[0], int64s(imp, [int(op.num_classes)]), imp.const(1, dtype=out),
                                imp.const(0, dtype=out), int(op.axis))


@keras_op("TakeAlongAxis", produces="GatherElements")
def read_op_take_along_axis(imp, op, args, kwargs, node):
    x, indices = args[0], operand_value(imp, args[1], np.dtype(np.int64))
    if op.axis is None:
        x, axis = imp.emit("Reshape", [x, int64s(imp, [-1])], suffix="flat"), 0
    else:
        axis = int(op.axis)
    indices = as_int64(imp, indices, "idx")
    shape, index_shape = _shape(node), _shape(node, 1)
    rank = len(shape)
    axis %= rank
    others = [d for d in range(rank) if d != axis]
    if len(index_shape) != rank or any(index_shape[d] not in (shape[d], 1) for d in others):
        raise ModelError(f"{op.name}: ops.take_along_axis with indices broadcast over the other axes is not "
                         f"supported ({list(index_shape)} into {list(shape)})")
    if any(index_shape[d] != shape[d] for d in others):  # indices of size 1 there (CLIP's end-of-text token)
        row = imp.emit("Slice", [x, int64s(imp, [0]), int64s(imp, [1]), int64s(imp, [axis])], suffix="row")
        indices = imp.emit("Expand", [indices, imp.emit("Shape", [row], suffix="row_shape")], suffix="spread")
    return imp.emit("GatherElements", [x, indices], {"axis": axis})


@keras_op("ScatterUpdate", produces="ScatterND")
def read_op_scatter_update(imp, op, args, kwargs, node):
    """ops.scatter_update(inputs, indices, updates): the rows at the index tuples replaced (or reduced)."""
    reduction = {None: "none", "add": "add", "max": "max", "min": "min", "mul": "mul"}.get(op.reduction)
    if reduction is None:
        raise ModelError(f"{op.name}: scatter_update with reduction={op.reduction!r} is not supported")
    x = args[0]
    indices = operand_value(imp, args[1], np.dtype(np.int64))
    indices = as_int64(imp, indices, "idx")
    return imp.emit("ScatterND", [x, indices, operand_value(imp, args[2], x.dtype)], {"reduction": reduction})


@keras_op("Scatter", produces="ScatterND")
def read_op_scatter(imp, op, args, kwargs, node):
    """ops.scatter(indices, values, shape): values summed into zeros."""
    return tf_semantics.scatter_nd(imp, operand_value(imp, args[0], np.dtype(np.int64)),
                                   operand_value(imp, args[1], result_dtype(node)), int64s(imp, list(op.shape)))


@keras_op("SegmentSum", "SegmentMax", produces="ScatterND")
def read_op_segment(imp, op, args, kwargs, node):
    """ops.segment_sum / segment_max: an empty segment holds 0 / the dtype's lowest (TensorFlow's unsorted
    segment ops, which Keras calls on its TensorFlow backend)."""
    if op.num_segments is None:
        raise ModelError(f"{op.name}: ops.{type(op).__name__} without num_segments is not supported")
    kind = "sum" if type(op).__name__ == "SegmentSum" else "max"
    ids = operand_value(imp, args[1], np.dtype(np.int64))
    return tf_semantics.segment_reduce(imp, args[0], ids, int64s(imp, int(op.num_segments)), kind)


@keras_op("Nonzero", produces="NonZero")
def read_op_nonzero(imp, op, args, kwargs, node):
    """ops.nonzero: a tuple of index vectors, one per axis."""
    x = args[0]
    coords = imp.emit("NonZero", [x], suffix="coords")
    rank = len(_shape(node))
    if rank == 1:
        return [imp.emit("Squeeze", [coords, int64s(imp, [0])])]
    parts = imp.emit("Split", [coords, int64s(imp, [1] * rank)], {"axis": 0}, outputs=rank, suffix="axes")
    return [imp.emit("Squeeze", [p, int64s(imp, [0])], suffix=f"axis{i}") for i, p in enumerate(parts)]


@keras_op("Det", produces="Det")
def read_op_det(imp, op, args, kwargs, node):
    return imp.emit("Det", [args[0]])


# -- numpy-style products, joins, orders -----------------------------------------------------------------
@keras_op("Arange", produces="Range")
def read_op_arange(imp, op, args, kwargs, node):
    out = result_dtype(node)
    start, stop, step = (args[i] if len(args) > i else kwargs.get(k) for i, k in enumerate(("start", "stop", "step")))
    if stop is None:
        start, stop = 0, start
    operands = [operand_value(imp, v, out) for v in (start, stop, 1 if step is None else step)]
    operands = [v if v.dtype == out else imp.emit("Cast", [v], {"to": dtypes.name(out)}, suffix=f"cast{i}")
                for i, v in enumerate(operands)]
    scalars = [v if v.shape == () else imp.emit("Reshape", [v, int64s(imp, [])], suffix=f"scalar{i}")
               for i, v in enumerate(operands)]
    return imp.emit("Range", scalars)


@keras_op("Sort", "Argsort", produces="TopK")
def read_op_sort(imp, op, args, kwargs, node):
    """ops.sort / ops.argsort along an axis of known size: TopK of every entry, smallest first (equal entries in
    index order)."""
    axis = int(op.axis)
    size = _size(node, axis % len(_shape(node)))
    if not isinstance(size, int):
        raise ModelError(f"{op.name}: ops.{type(op).__name__.lower()} along an axis of unknown size is not supported")
    values, indices = imp.emit("TopK", [args[0], int64s(imp, [size])], {"axis": axis, "largest": 0, "sorted": 1},
                               outputs=2, suffix="topk")
    if type(op).__name__ == "Sort":
        return imp.emit("Identity", [values])
    return tf_semantics.cast_to(imp, indices, result_dtype(node))


@keras_op("Dot", produces="MatMul")
def read_op_dot(imp, op, args, kwargs, node):
    """np.dot: a matrix product where the second operand has at most two axes (beyond that np.dot is no matmul)."""
    a, b = _same_type(imp, node, args[:2])
    if _rank(b, node, 1) > 2:
        raise ModelError(f"{op.name}: ops.dot with a second operand of more than two axes is not supported")
    return imp.emit("MatMul", [a, b])


@keras_op("Tensordot", produces="Einsum")
def read_op_tensordot(imp, op, args, kwargs, node):
    a, b = _same_type(imp, node, args[:2])
    ra, rb = _rank(a, node, 0), _rank(b, node, 1)
    if isinstance(op.axes, int):
        pairs = list(zip(range(ra - op.axes, ra), range(op.axes)))
    else:
        pairs = list(zip(np.atleast_1d(op.axes[0]).tolist(), np.atleast_1d(op.axes[1]).tolist()))
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    left = [next(letters) for _ in range(ra)]
    right = [next(letters) for _ in range(rb)]
    for i, j in pairs:
        right[j % rb] = left[i % ra]
    summed = {left[i % ra] for i, _ in pairs}
    out = [c for c in left if c not in summed] + [c for c in right if c not in summed]
    return imp.emit("Einsum", [a, b], {"equation": f"{''.join(left)},{''.join(right)}->{''.join(out)}"})


@keras_op("Outer", produces="Mul")
def read_op_outer(imp, op, args, kwargs, node):
    a, b = _same_type(imp, node, args[:2])
    column = imp.emit("Reshape", [a, int64s(imp, [-1, 1])], suffix="column")
    return imp.emit("Mul", [column, imp.emit("Reshape", [b, int64s(imp, [1, -1])], suffix="row")])


@keras_op("Hstack", "Vstack", produces="Concat")
def read_op_stack_along(imp, op, args, kwargs, node):
    """np.hstack (1-D arrays joined, others along axis 1) and np.vstack (1-D arrays as rows)."""
    parts = _same_type(imp, node, list(args[0]))
    ranks = [_rank(p, node, i) for i, p in enumerate(parts)]
    if type(op).__name__ == "Hstack":
        return imp.emit("Concat", parts, {"axis": 0 if ranks[0] == 1 else 1})
    rows = [imp.emit("Unsqueeze", [p, int64s(imp, [0])], suffix=f"row{i}") if r == 1 else p
            for i, (p, r) in enumerate(zip(parts, ranks))]
    return imp.emit("Concat", rows, {"axis": 0})
