"""Paddle's activations, arithmetic, constants and the ops that only move data, read into the IR.

PIR gives most options as inputs made by `full` (a scalar or filled tensor) and `full_int_array` (a list of
integers): those are read as constants. Legacy element-wise ops align a lower-rank `Y` with `X` at `axis`
instead of from the right.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.paddle.base import R, const, ints, known_shape, op, rank_of

#: only ops a recorded fixture exercises are claimed (tests/paddle: programs Paddle saved, and programs written
#: by tensorbridge that Paddle ran)
for _name, _ir in (("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"), ("log", "Log"),
                   ("sqrt", "Sqrt"), ("abs", "Abs"), ("swish", "SiLU"), ("erf", "Erf"), ("floor", "Floor"),
                   ("ceil", "Ceil"), ("sin", "Sin"), ("cos", "Cos"), ("reciprocal", "Reciprocal"),
                   ("assign", "Identity")):
    R.row(_name, _ir)

#: element-wise ops of two inputs
BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "elementwise_pow": "Pow",
          "maximum": "Max", "minimum": "Min"}


@op(*BINARY, produces=tuple(BINARY.values()) + ("Reshape",))
def binary(imp, node):
    x, y = imp.inputs[:2]
    axis = imp.attrs.get("axis", -1)  # legacy programs only
    if axis != -1 and y.shape is not None and x.shape is not None and len(y.shape) < len(x.shape):
        tail = len(x.shape) - axis - len(y.shape)
        if tail < 0:
            raise ModelError(f"axis {axis} does not align a rank-{len(y.shape)} Y with a rank-{len(x.shape)} X")
        y = imp.b.op("Reshape", y, imp.b.const(np.array([*[1] * axis, *y.shape, *[1] * tail], np.int64)),
                     suffix="aligned")
    return imp.b.op(BINARY[node.type], x, y)


@op("full", "full_int_array", produces=())
def full(imp, node):
    """A constant: `value` in `shape` (full), or the list `value` (full_int_array)."""
    a = imp.attrs
    dtype = _dtype(a.get("dtype", "float32"))
    if node.type == "full_int_array":
        return imp.b.const(np.array(a.get("value"), dtype))
    return imp.b.const(np.full(a.get("shape"), a.get("value"), dtype))


@op("fill_constant", produces=("Expand", "Concat", "Reshape", "Cast"))
def fill_constant(imp, node):
    """`value` (exactly `str_value` where given) in `shape`, or in the shape a tensor or a list of scalars gives
    (legacy programs: an LSTM's zero initial states sized by the batch)."""
    from tensorbridge.formats.paddle import DTYPES

    a, b = imp.attrs, imp.b
    a.get("force_cpu"), a.get("place_type")  # where the constant is made
    dtype = DTYPES.get(a.get("dtype", 5))
    if dtype is None:
        raise ModelError(f"fill_constant of VarType {a.raw.get('dtype')}")
    text, number = a.get("str_value", ""), a.get("value", 0.0)
    value = np.array(float(text) if text else number).astype(dtype)
    shape_tensor, shape_list, value_tensor = (imp.inputs + [None] * 3)[:3]
    if value_tensor is not None:
        raise ModelError("fill_constant with a value computed at run time")
    if shape_tensor is None and not shape_list:
        return b.const(np.full([int(d) for d in a.get("shape", [])], value))
    if shape_tensor is None:
        parts = [b.op("Reshape", b.op("Cast", v, to="int64", suffix=f"dim{i}"), b.const(np.array([1], np.int64)),
                      suffix=f"dim{i}_vector") for i, v in enumerate(shape_list)]
        shape_tensor = b.op("Concat", *parts, axis=0, suffix="shape")
    a.get("shape")
    return b.op("Expand", b.const(value), shape_tensor)


@op("full_with_tensor", produces=("Expand",))
def full_with_tensor(imp, node):
    """`value` in the shape an input computes (zeros for initial states sized by the batch)."""
    value, shape = imp.inputs[:2]
    dtype = _dtype(imp.attrs.get("dtype", "float32"))
    filled = np.asarray(const(imp, 0, "value")).astype(dtype).reshape(())
    if shape.const is not None:
        return imp.b.const(np.full([int(d) for d in shape.const], filled))
    return imp.b.op("Expand", imp.b.const(filled), shape)


@op("shape64", produces="Shape")
def shape(imp, node):
    return imp.b.op("Shape", imp.x)


@op("stack", produces=("Unsqueeze", "Concat"))
def stack(imp, node):
    axis, parts, b = imp.attrs.get("axis", 0), imp.inputs[0], imp.b
    rank = rank_of(parts[0], "stack")
    axis = axis % (rank + 1)
    if all(p.const is not None for p in parts):
        return b.const(np.stack([np.asarray(p.const) for p in parts], axis))
    cast = [p if p.dtype == parts[0].dtype else b.op("Cast", p, to=parts[0].dtype.name, suffix="cast")
            for p in parts]
    expanded = [b.op("Unsqueeze", p, b.const(np.array([axis], np.int64)), suffix=f"part{i}")
                for i, p in enumerate(cast)]
    return b.op("Concat", *expanded, axis=axis)


def _dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        raise ModelError(f"dtype {name!r} is not read") from None


@op("scale", produces=("Mul", "Add"))
def scale(imp, node):
    """x * scale + bias, or (x + bias) * scale without `bias_after_scale`."""
    a, b = imp.attrs, imp.b
    factor = float(const(imp, 1, "scale").reshape(-1)[0]) if len(imp.inputs) > 1 and imp.inputs[1] is not None \
        else a.get("scale", 1.0)
    bias, after = a.get("bias", 0.0), a.get("bias_after_scale", True)
    x = imp.x
    dtype = x.dtype
    if not after and bias:
        x = b.op("Add", x, b.const(np.array(bias, dtype)), suffix="bias")
    if factor != 1.0:
        x = b.op("Mul", x, b.const(np.array(factor, dtype)), suffix="scale" if after and bias else "")
    if after and bias:
        x = b.op("Add", x, b.const(np.array(bias, dtype)))
    return x if x is not imp.x else b.op("Identity", x)


@op("hardswish", produces="HardSwish")
def hardswish(imp, node):
    """x * relu6(x + 3) / 6 (legacy programs state the three constants)."""
    a = imp.attrs
    stated = (a.get("threshold", 6.0), a.get("scale", 6.0), a.get("offset", 3.0))
    if stated != (6.0, 6.0, 3.0):
        raise ModelError(f"hard swish with threshold, scale, offset {stated} is not read (only 6, 6, 3)")
    return imp.b.op("HardSwish", imp.x)


@op("hardsigmoid", produces="HardSigmoid")
def hardsigmoid(imp, node):
    a = imp.attrs
    return imp.b.op("HardSigmoid", imp.x, alpha=a.get("slope", 1 / 6), beta=a.get("offset", 0.5))


@op("relu6", produces="Clip")
def relu6(imp, node):
    top = imp.attrs.get("threshold", 6.0)
    return imp.b.op("Clip", imp.x, imp.b.const(np.array(0.0, imp.x.dtype)), imp.b.const(np.array(top, imp.x.dtype)))


@op("clip", produces="Clip")
def clip(imp, node):
    low, high = (float(const(imp, i, what).reshape(-1)[0]) for i, what in ((1, "minimum"), (2, "maximum")))
    return imp.b.op("Clip", imp.x, imp.b.const(np.array(low, imp.x.dtype)), imp.b.const(np.array(high, imp.x.dtype)))


@op("leaky_relu", produces="LeakyRelu")
def leaky_relu(imp, node):
    return imp.b.op("LeakyRelu", imp.x, alpha=imp.attrs.get("negative_slope", 0.02))


@op("elu", produces="Elu")
def elu(imp, node):
    return imp.b.op("Elu", imp.x, alpha=imp.attrs.get("alpha", 1.0))


@op("gelu", produces="Gelu")
def gelu(imp, node):
    return imp.b.op("Gelu", imp.x, approximate="tanh" if imp.attrs.get("approximate", False) else "none")


@op("softplus", produces="Softplus")
def softplus(imp, node):
    """log(1 + exp(x)); Paddle returns x itself past `threshold`, the same in float32 from 20 on."""
    a = imp.attrs
    if a.get("beta", 1.0) != 1.0 or a.get("threshold", 20.0) < 20.0:
        raise ModelError(f"softplus with beta {a.raw.get('beta')} and threshold {a.raw.get('threshold')} is not read")
    return imp.b.op("Softplus", imp.x)


@op("softmax", produces="Softmax")
def softmax(imp, node):
    return imp.b.op("Softmax", imp.x, axis=imp.attrs.get("axis", -1))


# -- reductions --------------------------------------------------------------------------------------------
REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax"}


@op(*REDUCE, produces=tuple(REDUCE.values()))
def reduce(imp, node):
    a = imp.attrs
    axes = ints(imp, 1, "axes") if len(imp.inputs) > 1 and imp.inputs[1] is not None else []
    if node.type == "sum" and a.get("dtype", "Undefined(ALL_DTYPE)") not in ("Undefined(ALL_DTYPE)", imp.x.dtype.name):
        raise ModelError(f"a sum in {a.raw['dtype']} is not read")
    if a.get("in_dtype", -1) != -1 or a.get("out_dtype", -1) != -1:  # legacy programs: -1 keeps the input's type
        raise ModelError(f"a reduction cast to VarType {a.raw.get('out_dtype')} is not read")
    rank = rank_of(imp.x, node.type)
    axes = list(range(rank)) if a.get("reduce_all", False) or not axes else axes  # reduce_all: legacy programs
    return imp.b.op(REDUCE[node.type], imp.x, imp.b.const(np.array(axes, np.int64)), keepdims=int(a.get("keepdim")))


# -- data movement -----------------------------------------------------------------------------------------
@op("reshape", produces="Reshape")
def reshape(imp, node):
    """0 keeps the input's size on that axis, -1 takes what is left (as the IR's Reshape)."""
    target = ints(imp, 1, "shape")
    return [imp.b.op("Reshape", imp.x, imp.b.const(np.array(target, np.int64))), None]


@op("flatten", produces="Reshape")
def flatten(imp, node):
    a = imp.attrs
    rank = rank_of(imp.x, "flatten")
    start, stop = a.get("start_axis", 1) % max(rank, 1), a.get("stop_axis", -1) % max(rank, 1)
    tail = imp.x.shape[stop + 1:]
    if not all(isinstance(d, int) for d in tail):
        raise ModelError(f"flatten keeps axes of unknown size {list(tail)}")
    target = [0] * start + [-1] + list(tail)
    return [imp.b.op("Reshape", imp.x, imp.b.const(np.array(target, np.int64))), None]


@op("transpose", produces="Transpose")
def transpose(imp, node):
    return imp.b.op("Transpose", imp.x, perm=list(imp.attrs.get("perm")))


@op("unsqueeze", "squeeze", produces=("Unsqueeze", "Squeeze"))
def squeeze(imp, node):
    axes = ints(imp, 1, "axes")
    if node.type == "squeeze" and not axes:
        shape = known_shape(imp.x, "squeeze")
        axes = [i for i, d in enumerate(shape) if d == 1]
    return [imp.b.op(node.type.capitalize(), imp.x, imp.b.const(np.array(axes, np.int64))), None]


@op("concat", produces="Concat")
def concat(imp, node):
    parts = imp.inputs[0]
    axis = int(const(imp, 1, "axis").reshape(-1)[0])
    return imp.b.op("Concat", *parts, axis=axis)


@op("split", produces="Split")
def split(imp, node):
    """Into the given sizes (-1 takes the rest)."""
    b = imp.b
    axis = int(const(imp, 2, "axis").reshape(-1)[0])
    shape = known_shape(imp.x, node.type)
    axis %= len(shape)
    sizes = ints(imp, 1, "sections")
    parts = imp.attrs.get("num", 0)  # legacy programs: `num` equal parts when no sections are given
    if parts and not sizes:
        sizes = [shape[axis] // parts] * parts
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = shape[axis] - sum(s for s in sizes if s != -1)
    if sum(sizes) != shape[axis]:
        raise ModelError(f"sections {sizes} do not add up to {shape[axis]}")
    return [b.emit("Split", [imp.x, b.const(np.array(sizes, np.int64))], {"axis": axis}, outputs=len(sizes))]


@op("slice", produces=("Slice", "Squeeze"))
def slice_(imp, node):
    a, b = imp.attrs, imp.b
    starts, ends = ints(imp, 1, "starts"), ints(imp, 2, "ends")
    axes = list(a.get("axes"))
    a.get("infer_flags")
    y = b.op("Slice", imp.x, b.const(np.array(starts, np.int64)), b.const(np.array(ends, np.int64)),
             b.const(np.array(axes, np.int64)), suffix="slice" if a.get("decrease_axis") else "")
    drop = list(a.get("decrease_axis") or [])
    return b.op("Squeeze", y, b.const(np.array(drop, np.int64))) if drop else y


#: comparisons and logic (boolean results)
LOGIC = {"equal": "Equal", "greater_than": "Greater", "less_than": "Less", "logical_and": "And",
         "logical_or": "Or"}


@op(*LOGIC, produces=tuple(LOGIC.values()))
def logic(imp, node):
    if imp.attrs.get("axis", -1) != -1:
        raise ModelError(f"{node.type} aligning Y at axis {imp.attrs.raw['axis']} is not read")
    return imp.b.op(LOGIC[node.type], *imp.inputs[:2])


@op("logical_not", produces="Not")
def logical_not(imp, node):
    return imp.b.op("Not", imp.x)


@op("where", produces="Where")
def where(imp, node):
    return imp.b.op("Where", *imp.inputs[:3])


@op("cast", produces="Cast")
def cast(imp, node):
    """To `dtype` (PIR) or the VarType code `out_dtype` (legacy programs, which also state `in_dtype`)."""
    from tensorbridge.formats.paddle import DTYPES

    a = imp.attrs
    if a.get("out_dtype") is not None:
        a.get("in_dtype")
        to = DTYPES.get(a.get("out_dtype"))
        if to is None:
            raise ModelError(f"a cast to VarType {a.raw['out_dtype']}")
        return imp.b.op("Cast", imp.x, to=to)
    return imp.b.op("Cast", imp.x, to=_dtype(a.get("dtype")).name)


@op("expand", produces="Expand")
def expand(imp, node):
    """Broadcast to `shape` (a -1 keeps the input's size)."""
    shape = ints(imp, 1, "shape")
    given = known_shape(imp.x, "expand", start=0)
    lead = len(shape) - len(given)
    shape = [given[i - lead] if d == -1 else d for i, d in enumerate(shape)]
    return imp.b.op("Expand", imp.x, imp.b.const(np.array(shape, np.int64)))


@op("gather_nd", produces="GatherND")
def gather_nd(imp, node):
    return imp.b.op("GatherND", *imp.inputs[:2])


@op("gather", produces="Gather")
def gather(imp, node):
    axis = int(const(imp, 2, "axis").reshape(-1)[0]) if len(imp.inputs) > 2 and imp.inputs[2] is not None else 0
    return imp.b.op("Gather", imp.x, imp.inputs[1], axis=axis)


@op("pad", produces="Pad")
def pad(imp, node):
    """A constant pad of any rank: `paddings` [before, after] per axis (legacy programs)."""
    a = imp.attrs
    pads = list(a.get("paddings"))
    rank = rank_of(imp.x, "pad")
    if len(pads) != 2 * rank:
        raise ModelError(f"pad of a rank-{rank} tensor with {len(pads)} paddings")
    value = imp.b.const(np.array(a.get("pad_value", 0.0), imp.x.dtype))
    return imp.b.op("Pad", imp.x, imp.b.const(np.array(pads[0::2] + pads[1::2], np.int64)), value, mode="constant")


@op("pad3d", produces="Pad")
def pad3d(imp, node):
    """[left, right, top, bottom, front, back] on the last three axes of an NCDHW tensor (constant, reflect,
    replicate or circular)."""
    a = imp.attrs
    if a.get("data_format", "NCDHW") != "NCDHW":
        raise ModelError(f"data_format={a.raw.get('data_format')}: only NCDHW is read")
    pads = ints(imp, 1, "paddings")
    rank = len(known_shape(imp.x, "pad3d"))
    if rank != 5 or len(pads) != 6:
        raise ModelError(f"pad3d of a rank-{rank} tensor with {len(pads)} paddings")
    mode = a.choice("mode", "constant", ("constant", "reflect", "replicate", "circular"))
    begins, ends = [0, 0, pads[4], pads[2], pads[0]], [0, 0, pads[5], pads[3], pads[1]]
    ir_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
    value = imp.b.const(np.array(a.get("pad_value", 0.0), imp.x.dtype))
    return imp.b.op("Pad", imp.x, imp.b.const(np.array(begins + ends, np.int64)), value if mode == "constant" else
                    None, mode=ir_mode)
