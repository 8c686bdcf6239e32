"""CNTK's element-wise ops, reductions and the ops that move data, read into the IR.

CNTK broadcasts element-wise operands by their static axes aligned at the innermost (NumPy's trailing alignment),
over dynamic axes a parameter does not have; `align` gives operands with dynamic axes the leading size-1 static
axes that make the IR's broadcasting the same. Comparisons give 1.0 / 0.0 in the operands' type, as CNTK's do.
`Softmax` and `Hardmax` normalise over all of a value's static elements together (`softmax(x, axis)` and
`log_softmax` are blocks of reductions, read as those).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.cntk import ALL_STATIC_AXES, Axis
from tensorbridge.rules.cntk.base import NAMES, R, numpy_order, op, static_axis, static_rank, static_shape

UNARY = {"Negate": "Neg", "Sigmoid": "Sigmoid", "StableSigmoid": "Sigmoid", "Tanh": "Tanh", "ReLU": "Relu",
         "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Floor": "Floor", "Abs": "Abs", "Reciprocal": "Reciprocal",
         "Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Asin": "Asin", "Acos": "Acos", "Atan": "Atan", "Sinh": "Sinh",
         "Cosh": "Cosh", "Asinh": "Asinh", "Atanh": "Atanh", "ELU": "Elu"}
BINARY = {"Plus": "Add", "Minus": "Sub", "ElementTimes": "Mul", "Pow": "Pow"}
COMPARE = {"Equal": "Equal", "NotEqual": "Equal", "Less": "Less", "LessEqual": "LessOrEqual", "Greater": "Greater",
           "GreaterEqual": "GreaterOrEqual"}
REDUCE = {"Sum": "ReduceSum", "Mean": "ReduceMean", "Max": "ReduceMax", "Min": "ReduceMin", "Prod": "ReduceProd",
          "LogSum": "ReduceLogSumExp"}
ARG = {"Argmax": "ArgMax", "Argmin": "ArgMin"}
PAD_MODES = {0: "constant", 1: "reflect"}
#: the end of a slice that runs to the end of its axis
END = 2 ** 62

for _name, _ir in UNARY.items():
    R.row(_name, _ir)


def align(imp, *values) -> list:
    """The operands of an element-wise op with the leading size-1 axes that make the IR broadcast them as CNTK
    does: a batch-only value read with a sequence gets a sequence axis of one, and a value with dynamic axes but
    fewer static axes gets size-1 static axes after its dynamic ones."""
    dynamic = max(imp.dynamic(v) for v in values)
    rank = max(static_rank(imp, v) for v in values)
    out = []
    for v in values:
        d = imp.dynamic(v)
        axes = ([1] if 0 < d < dynamic else []) + list(range(dynamic, dynamic + rank - static_rank(imp, v)) if d
                                                         else [])
        if axes:
            v = imp.result(imp.emit("Unsqueeze", [v, imp.ints(axes)], suffix="aligned"), dynamic)
        out.append(v)
    return out


@op("Pass", "NoOp", "StopGradient", "Dropout", produces=())
def identity(imp, f):
    """Passes at inference (dropout's rate and seed only matter while training)."""
    return imp.inputs[0]


@op(*BINARY, produces=tuple(BINARY.values()))
def binary(imp, f):
    return imp.emit(BINARY[NAMES[f.op]], align(imp, *imp.inputs))


@op(*COMPARE, produces=(*sorted(set(COMPARE.values())), "Not", "Cast"))
def compare(imp, f):
    name = NAMES[f.op]
    a, b = align(imp, *imp.inputs)
    flag = imp.emit(COMPARE[name], [a, b], suffix="flag")
    if name == "NotEqual":
        flag = imp.emit("Not", [flag], suffix="not")
    return imp.emit("Cast", [flag], {"to": a.dtype})


@op("Select", produces=("Cast", "Where"))
def select(imp, f):
    condition, a, b = align(imp, *imp.inputs)
    return imp.emit("Where", [imp.emit("Cast", [condition], {"to": np.dtype(bool)}, suffix="condition"), a, b])


@op("Clip", produces=("Clip", "Max", "Min"))
def clip(imp, f):
    x, low, high = imp.inputs
    if all(v.const is not None and v.const.size == 1 for v in (low, high)):
        bounds = [imp.const(np.asarray(v.const).reshape(()).astype(x.dtype)) for v in (low, high)]
        return imp.emit("Clip", [x, *bounds])
    x, low, high = align(imp, x, low, high)
    return imp.emit("Min", [imp.emit("Max", [x, low], suffix="low"), high])


@op("LogPlus", produces=("Max", "Sub", "Abs", "Neg", "Softplus", "Add"))
def log_plus(imp, f):
    """log(exp(a) + exp(b)) as max(a, b) + softplus(-|a - b|)."""
    a, b = align(imp, *imp.inputs)
    gap = imp.emit("Neg", [imp.emit("Abs", [imp.emit("Sub", [a, b], suffix="gap")], suffix="distance")], suffix="neg")
    return imp.emit("Add", [imp.emit("Max", [a, b], suffix="max"), imp.emit("Softplus", [gap], suffix="softplus")])


@op("Softmax", "Hardmax", produces=("Softmax", "Hardmax", "Reshape"))
def softmax(imp, f):
    """Over all static elements together: the static axes flattened into one when there are several."""
    (x,) = imp.inputs
    ir = NAMES[f.op]
    dynamic, static = imp.dynamic(x), static_shape(imp, x)
    if len(static) <= 1:
        return imp.emit(ir, [x], {"axis": -1})
    flat = imp.emit("Reshape", [x, imp.ints([0] * dynamic + [-1])], suffix="flat")
    return imp.emit("Reshape", [imp.emit(ir, [flat], {"axis": -1}, suffix="flat_out"),
                                imp.ints([0] * dynamic + list(static))])


@op("Reshape", produces="Reshape")
def reshape(imp, f):
    """The stored axes [beginAxis, endAxis) replaced by `newShape` (a -1 among it inferred)."""
    (x,) = imp.inputs
    a = imp.attrs
    stored = numpy_order(static_shape(imp, x))  # innermost first, as CNTK stores shapes
    begin, end = a.get("beginAxis"), a.get("endAxis")
    begin = 0 if begin is None else _stored_index(begin, len(stored))
    end = len(stored) if end is None else _stored_index(end, len(stored))
    new = list(a.require("newShape"))
    if any(d < -1 for d in new) or new.count(-1) > 1 or not 0 <= begin <= end <= len(stored):
        raise ModelError(f"a Reshape to {new} of axes [{begin}, {end}) of a value of {len(stored)} static axes")
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        size = int(np.prod(stored[begin:end]))
        if known == 0 or size % known:
            raise ModelError(f"a Reshape of {size} elements to {new}")
        new[new.index(-1)] = size // known
    shape = numpy_order(stored[:begin] + new + stored[end:])
    if int(np.prod(shape)) != int(np.prod(stored)):
        raise ModelError(f"a Reshape of static shape {static_shape(imp, x)} to {shape}")
    return imp.emit("Reshape", [x, imp.ints([0] * imp.dynamic(x) + shape)])


def _stored_index(axis, rank: int) -> int:
    if not isinstance(axis, Axis) or not axis.static:
        raise ModelError(f"a Reshape over the {getattr(axis, 'name', axis)} axis")
    return axis.index if axis.index >= 0 else rank + axis.index


@op("TransposeAxes", produces="Transpose")
def transpose(imp, f):
    """Two static axes swapped (axis1, axis2), or the static axes permuted (axisVec: the input axis each output
    axis takes, stored innermost first)."""
    (x,) = imp.inputs
    a = imp.attrs
    dynamic, rank = imp.dynamic(x), static_rank(imp, x)
    perm = list(range(dynamic + rank))
    if a.get("axisVec") is not None:
        stored = [_stored_index(axis, rank) for axis in a.get("axisVec")]
        if sorted(stored) != list(range(rank)):
            raise ModelError(f"a permutation {stored} of {rank} static axes")
        for j, source in enumerate(stored):  # stored output axis j takes stored input axis `source`
            perm[dynamic + rank - 1 - j] = dynamic + rank - 1 - source
    else:
        i, j = (static_axis(imp, x, a.require(k)) for k in ("axis1", "axis2"))
        perm[i], perm[j] = perm[j], perm[i]
    return imp.emit("Transpose", [x], {"perm": perm})


@op("Slice", produces="Slice")
def slice_(imp, f):
    """[begin, end) with a stride along one static axis (or several: the *Vec attributes); an end of 0 runs to
    the end of the axis."""
    (x,) = imp.inputs
    a = imp.attrs
    if a.get("axisVec") is not None:
        axes, begins = a.get("axisVec"), a.require("beginIndexVec")
        ends, strides = a.require("endIndexVec"), a.get("sliceStridesVec") or [1] * len(axes)
        a.get("axis"), a.get("beginIndex"), a.get("endIndex"), a.get("sliceStrides")
    else:
        axes, begins, ends = [a.require("axis")], [a.require("beginIndex")], [a.require("endIndex")]
        strides = [a.get("sliceStrides", 1)]
    if any(int(s) < 1 for s in strides):
        raise ModelError(f"a Slice with strides {strides}")
    ir_axes = [static_axis(imp, x, axis) for axis in axes]
    stops = [END if int(e) == 0 else int(e) for e in ends]
    return imp.emit("Slice", [x, imp.ints([int(b) for b in begins]), imp.ints(stops), imp.ints(ir_axes),
                              imp.ints([int(s) for s in strides])])


@op("Splice", produces=("Concat", "Unsqueeze"))
def splice(imp, f):
    """Concatenation along a static axis; an axis past the inputs' rank is a new outermost one (the inputs
    stacked), and inputs of fewer static axes get leading ones of size one."""
    axis = imp.attrs.require("axis")
    values = list(imp.inputs)
    if len({imp.dynamic(v) for v in values}) != 1:
        raise ModelError("a Splice of values with different dynamic axes")
    dynamic = imp.dynamic(values[0])
    rank = max(static_rank(imp, v) for v in values)
    if not isinstance(axis, Axis) or not axis.static or axis.index < 0:
        raise ModelError(f"a Splice along the {getattr(axis, 'name', axis)} axis")
    rank = max(rank, axis.index + 1)
    aligned = []
    for v in values:
        missing = rank - static_rank(imp, v)
        if missing:
            v = imp.result(imp.emit("Unsqueeze", [v, imp.ints(list(range(dynamic, dynamic + missing)))],
                                    suffix="aligned"), dynamic)
        aligned.append(v)
    return imp.emit("Concat", aligned, {"axis": dynamic + rank - 1 - axis.index})


@op("ReduceElements", produces=(*REDUCE.values(), *ARG.values(), "Cast"))
def reduce(imp, f):
    (x,) = imp.inputs
    a = imp.attrs
    kind = a.require("reductionOpName")
    keep = bool(a.get("reductionKeepDimensions", True))
    chosen = a.get("axisVec") if a.get("axisVec") is not None else [a.require("axis")]
    dynamic, rank = imp.dynamic(x), static_rank(imp, x)
    if any(isinstance(axis, Axis) and axis.index == ALL_STATIC_AXES for axis in chosen):
        axes = list(range(dynamic, dynamic + rank))
    else:
        axes = sorted(static_axis(imp, x, axis) for axis in chosen)
    if kind in ARG:
        if len(axes) != 1:
            raise ModelError(f"{kind} over {len(axes)} axes")
        index = imp.emit(ARG[kind], [x], {"axis": axes[0], "keepdims": int(keep)}, suffix="index")
        return imp.emit("Cast", [index], {"to": x.dtype})
    if kind not in REDUCE:
        raise ModelError(f"reduction {kind!r} (read: {', '.join([*REDUCE, *ARG])})")
    return imp.emit(REDUCE[kind], [x, imp.ints(axes)], {"keepdims": int(keep)})


@op("Pad", produces="Pad")
def pad(imp, f):
    (x,) = imp.inputs
    a = imp.attrs
    mode = int(a.get("paddingMode", 0))
    if mode not in PAD_MODES:
        raise ModelError("symmetric padding (CNTK's mode 2) is not read")
    head, foot = numpy_order(a.require("paddingHead")), numpy_order(a.require("paddingFoot"))
    dynamic, rank = imp.dynamic(x), static_rank(imp, x)
    if len(head) != rank or len(foot) != rank:
        raise ModelError(f"padding for {len(head)} axes of a value of {rank} static axes")
    pads = [0] * dynamic + head + [0] * dynamic + foot
    value = imp.const(np.array(a.get("paddingConstantValue", 0.0), x.dtype))
    return imp.emit("Pad", [x, imp.ints(pads), value], {"mode": PAD_MODES[mode]})


@op("Cast", produces="Cast")
def cast(imp, f):
    from tensorbridge.formats.cntk import DTYPES

    to = DTYPES.get(int(imp.attrs.require("newDataType")))
    if to is None:
        raise ModelError(f"a Cast to CNTK type {imp.attrs.raw['newDataType']}")
    return imp.emit("Cast", [imp.inputs[0]], {"to": np.dtype(to)})


@op("Squeeze", produces="Squeeze")
def squeeze(imp, f):
    """The static axes of size one removed (all of them, or those of axisVec)."""
    (x,) = imp.inputs
    dynamic = imp.dynamic(x)
    chosen = imp.attrs.get("axisVec")
    if chosen is not None:
        axes = [static_axis(imp, x, axis) for axis in chosen]
    else:
        axes = [dynamic + i for i, d in enumerate(static_shape(imp, x)) if d == 1]
    return imp.emit("Squeeze", [x, imp.ints(axes)]) if axes else x
