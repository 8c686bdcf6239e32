"""MXNet's activations, arithmetic and the ops that only move data, read into the IR."""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.mxnet.base import R, dtype_of, known_shape, op

UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
         "abs": "Abs", "negative": "Neg", "reciprocal": "Reciprocal", "erf": "Erf", "floor": "Floor", "ceil": "Ceil",
         "sin": "Sin", "cos": "Cos", "softsign": "Softsign", "sign": "Sign"}
IDENTITY = ("_copy", "identity", "BlockGrad", "stop_gradient")
BINARY = {"Add": ("elemwise_add", "_plus", "_Plus", "broadcast_add", "broadcast_plus"),
          "Sub": ("elemwise_sub", "_minus", "_Minus", "broadcast_sub", "broadcast_minus"),
          "Mul": ("elemwise_mul", "_mul", "_Mul", "broadcast_mul"),
          "Div": ("elemwise_div", "_div", "_Div", "broadcast_div"),
          "Max": ("_maximum", "_Maximum", "broadcast_maximum"),
          "Min": ("_minimum", "_Minimum", "broadcast_minimum"),
          "Pow": ("_power", "_Power", "broadcast_power")}
#: x OP scalar, and scalar OP x for the reflected ones
SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False), "_rminus_scalar": ("Sub", True),
          "_mul_scalar": ("Mul", False), "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
          "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True), "_maximum_scalar": ("Max", False),
          "_minimum_scalar": ("Min", False)}
ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus", "softsign": "Softsign"}
REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin", "prod": "ReduceProd"}

for _name, _ir in UNARY.items():
    R.row(_name, _ir)
for _ir, _names in BINARY.items():
    R.row(_names, _ir)


@op(*IDENTITY, produces=())
def identity(imp, node):
    return imp.x


@op(*SCALAR, produces=tuple(sorted({ir for ir, _ in SCALAR.values()})))
def scalar(imp, node):
    ir, reflected = SCALAR[node.op]
    a = imp.attrs
    a.bool("is_int")
    value = np.array(a.float("scalar"), dtype=imp.x.dtype)
    c = imp.b.const(value)
    return imp.b.op(ir, *((c, imp.x) if reflected else (imp.x, c)))


@op("square", produces="Mul")
def square(imp, node):
    return imp.b.op("Mul", imp.x, imp.x)


@op("rsqrt", produces=("Sqrt", "Reciprocal"))
def rsqrt(imp, node):
    return imp.b.op("Reciprocal", imp.b.op("Sqrt", imp.x, suffix="sqrt"))


@op("hard_sigmoid", produces="HardSigmoid")
def hard_sigmoid(imp, node):
    a = imp.attrs
    return imp.b.op("HardSigmoid", imp.x, alpha=a.float("alpha", 0.2), beta=a.float("beta", 0.5))


@op("clip", produces="Clip")
def clip(imp, node):
    a, b = imp.attrs, imp.b
    low, high = (b.const(np.array(a.float(k), imp.x.dtype)) for k in ("a_min", "a_max"))
    return b.op("Clip", imp.x, low, high)


@op("Activation", produces=(*ACTIVATIONS.values(), "Log"))
def activation(imp, node):
    kind = imp.attrs.choice("act_type", "relu", (*ACTIVATIONS, "log_sigmoid"))
    if kind == "log_sigmoid":
        return imp.b.op("Log", imp.b.op("Sigmoid", imp.x, suffix="sigmoid"))
    return imp.b.op(ACTIVATIONS[kind], imp.x)


@op("LeakyReLU", produces=("LeakyRelu", "PRelu", "Elu", "Selu", "Gelu"))
def leaky_relu(imp, node):
    """`rrelu` draws its slope at training; at inference it is the middle of its range."""
    a, b = imp.attrs, imp.b
    kind = a.choice("act_type", "leaky", ("leaky", "prelu", "elu", "selu", "gelu", "rrelu"))
    slope = a.float("slope", 0.25)
    low, high = a.float("lower_bound", 0.125), a.float("upper_bound", 0.334)
    if kind == "leaky":
        return b.op("LeakyRelu", imp.x, alpha=slope)
    if kind == "rrelu":
        return b.op("LeakyRelu", imp.x, alpha=(low + high) / 2)
    if kind == "elu":
        return b.op("Elu", imp.x, alpha=slope)
    if kind == "selu":
        return b.op("Selu", imp.x)
    if kind == "gelu":
        return b.op("Gelu", imp.x)
    gamma = imp.inputs[1]
    if gamma is None or gamma.const is None:
        raise ModelError("its prelu slopes are not a parameter in the params file")
    rank, slopes = len(imp.x.shape or ()), np.asarray(gamma.const)
    shaped = slopes.reshape(-1) if slopes.size == 1 else slopes.reshape([-1] + [1] * max(rank - 2, 0))
    return b.op("PRelu", imp.x, imp.weight("slope", shaped))


@op("softmax", "log_softmax", "SoftmaxActivation", produces=("Softmax", "LogSoftmax", "Div"))
def softmax(imp, node):
    a, b = imp.attrs, imp.b
    x = imp.x
    if node.op == "SoftmaxActivation":
        axis = 1 if a.choice("mode", "instance", ("instance", "channel")) == "channel" else None
        if axis is None:  # over all but the batch axis
            shape = known_shape(x, "SoftmaxActivation")
            flat = b.op("Flatten", x, suffix="flatten", axis=1)
            y = b.op("Softmax", flat, axis=-1, suffix="softmax")
            return b.op("Reshape", y, b.const(np.array(shape, np.int64)))
        return b.op("Softmax", x, axis=1)
    axis = a.int("axis", -1)
    if a.bool("use_length"):
        raise ModelError("use_length (a softmax over the first `length` entries) is not read")
    a.text("dtype")
    temperature = a.float("temperature")
    if temperature is not None and temperature != 1.0:
        x = b.op("Div", x, b.const(np.array(temperature, x.dtype)), suffix="temperature")
    return b.op("Softmax" if node.op == "softmax" else "LogSoftmax", x, axis=axis)


@op("SoftmaxOutput", produces="Softmax")
def softmax_output(imp, node):
    """At inference a softmax of its data (the label input only trains): over axis 1 with `multi_output`, else
    over everything but the batch axis (or the last axis with `preserve_shape`)."""
    a, b = imp.attrs, imp.b
    for key in ("grad_scale", "ignore_label", "use_ignore", "normalization", "out_grad", "smooth_alpha"):
        a.text(key)
    x = imp.x
    if a.bool("multi_output"):
        return b.op("Softmax", x, axis=1)
    if a.bool("preserve_shape") or len(x.shape or ()) <= 2:
        return b.op("Softmax", x, axis=-1)
    shape = known_shape(x, "SoftmaxOutput")
    y = b.op("Softmax", b.op("Flatten", x, suffix="flatten", axis=1), axis=-1, suffix="softmax")
    return b.op("Reshape", y, b.const(np.array(shape, np.int64)))


@op("Flatten", "flatten", produces="Flatten")
def flatten(imp, node):
    return imp.b.op("Flatten", imp.x, axis=1)


def reshape_target(shape: tuple[int, ...], codes: list[int], reverse: bool = False) -> list[int]:
    """MXNet's Reshape codes on a known shape: 0 copies a dimension, -1 infers one, -2 copies the rest, -3 merges
    two, -4 splits one into the next two codes (one may be -1); `reverse` matches from the right."""
    if reverse:
        return reshape_target(shape[::-1], _reversed_codes(codes))[::-1]
    out, i, j = [], 0, 0
    infer = None
    while j < len(codes):
        c = codes[j]
        if c > 0:
            out.append(c)
            i += 1
        elif c == 0:
            out.append(shape[i])
            i += 1
        elif c == -1:
            if infer is not None:
                raise ModelError(f"shape {codes}: more than one -1")
            infer = len(out)
            out.append(1)
            i += 1
        elif c == -2:
            out.extend(shape[i:])
            i = len(shape)
        elif c == -3:
            out.append(shape[i] * shape[i + 1])
            i += 2
        elif c == -4:
            d1, d2 = codes[j + 1], codes[j + 2]
            whole = shape[i]
            d1, d2 = (whole // d2 if d1 == -1 else d1), (whole // d1 if d2 == -1 else d2)
            if d1 * d2 != whole:
                raise ModelError(f"shape {codes}: -4 splits {whole} into {d1} x {d2}")
            out += [d1, d2]
            i += 1
            j += 2
        else:
            raise ModelError(f"shape {codes}: code {c} is not MXNet's")
        j += 1
    total = int(np.prod(shape))
    if infer is not None:
        rest = int(np.prod(out))
        if rest == 0 or total % rest:
            raise ModelError(f"shape {codes} does not fit {list(shape)}")
        out[infer] = total // rest
    if int(np.prod(out)) != total:
        raise ModelError(f"shape {codes} gives {out}, which does not hold {list(shape)}")
    return out


def _reversed_codes(codes: list[int]) -> list[int]:
    """The codes read from the right (a -4 keeps its two sizes after it)."""
    out, j = [], len(codes) - 1
    while j >= 0:
        if j >= 2 and codes[j - 2] == -4:
            out += [-4, codes[j], codes[j - 1]]
            j -= 3
        else:
            out.append(codes[j])
            j -= 1
    return out


@op("Reshape", "reshape", produces="Reshape")
def reshape(imp, node):
    a = imp.attrs
    codes = a.ints("shape")
    if a.ints("target_shape"):
        raise ModelError("target_shape (the deprecated form of shape) is not read")
    a.bool("keep_highest")
    target = reshape_target(known_shape(imp.x, "Reshape"), codes, a.bool("reverse"))
    return imp.b.op("Reshape", imp.x, imp.b.const(np.array(target, np.int64)))


@op("transpose", produces="Transpose")
def transpose(imp, node):
    rank = len(imp.x.shape or ())
    axes = imp.attrs.ints("axes") or list(range(rank))[::-1]
    return imp.b.op("Transpose", imp.x, perm=axes)


@op("SwapAxis", "swapaxes", produces="Transpose")
def swap_axes(imp, node):
    rank = len(imp.x.shape or ())
    perm = list(range(rank))
    d1, d2 = imp.attrs.int("dim1", 0) % rank, imp.attrs.int("dim2", 0) % rank
    perm[d1], perm[d2] = perm[d2], perm[d1]
    return imp.b.op("Transpose", imp.x, perm=perm)


@op("expand_dims", produces="Unsqueeze")
def expand_dims(imp, node):
    return imp.b.op("Unsqueeze", imp.x, imp.b.const(np.array([imp.attrs.int("axis")], np.int64)))


@op("squeeze", produces="Squeeze")
def squeeze(imp, node):
    axes = imp.attrs.ints("axis")
    shape = known_shape(imp.x, "squeeze")
    axes = [i for i, d in enumerate(shape) if d == 1] if not axes else axes
    return imp.b.op("Squeeze", imp.x, imp.b.const(np.array(axes, np.int64)))


@op("Concat", "concat", "_rnn_param_concat", produces="Concat")
def concat(imp, node):
    return imp.b.op("Concat", *imp.inputs, axis=imp.attrs.int("dim", 1))


@op("SliceChannel", "split", produces=("Split", "Squeeze"))
def split(imp, node):
    a, b = imp.attrs, imp.b
    parts, axis = a.int("num_outputs"), a.int("axis", 1)
    outputs = b.emit("Split", [imp.x], {"axis": axis, "num_outputs": parts}, outputs=parts)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    if a.bool("squeeze_axis"):
        outputs = [b.op("Squeeze", y, b.const(np.array([axis], np.int64)), suffix=f"squeeze{i}")
                   for i, y in enumerate(outputs)]
    return outputs


@op("slice_axis", produces="Slice")
def slice_axis(imp, node):
    a, b = imp.attrs, imp.b
    axis, begin = a.int("axis"), a.int("begin")
    end = a.int("end")
    end = np.iinfo(np.int64).max if end is None else end
    return b.op("Slice", imp.x, *(b.const(np.array([v], np.int64)) for v in (begin, end, axis)))


@op("slice", "crop", produces="Slice")
def slice_(imp, node):
    a, b = imp.attrs, imp.b
    begin, end = a.ints("begin"), a.ints("end")
    step = a.ints("step") or [None] * len(begin)
    big = np.iinfo(np.int64).max
    starts, ends, axes, steps = [], [], [], []
    for axis, (s, e, st) in enumerate(zip(begin, end, step)):
        st = 1 if st is None else st
        if st == 0:
            raise ModelError("slice with step 0")
        starts.append(s if s is not None else (0 if st > 0 else -1))
        ends.append(e if e is not None else (big if st > 0 else -big))
        axes.append(axis)
        steps.append(st)
    return b.op("Slice", imp.x, *(b.const(np.array(v, np.int64)) for v in (starts, ends, axes, steps)))


@op(*REDUCE, produces=tuple(REDUCE.values()))
def reduce(imp, node):
    a, b = imp.attrs, imp.b
    rank = len(imp.x.shape or ())
    axes = a.ints("axis")
    axes = list(range(rank)) if not axes else [d % rank for d in axes]
    if a.bool("exclude"):
        axes = [d for d in range(rank) if d not in axes]
    return b.op(REDUCE[node.op], imp.x, b.const(np.array(axes, np.int64)), keepdims=int(a.bool("keepdims")))


@op("batch_dot", "dot", produces=("MatMul", "Transpose"))
def matmul(imp, node):
    """batch_dot multiplies the last two axes of each batch; dot multiplies matrices (and a tensor's last axis by
    a matrix), transposing either side first when asked."""
    a, b = imp.attrs, imp.b
    lhs, rhs = imp.inputs
    if a.text("forward_stype") is not None:
        raise ModelError("forward_stype (sparse outputs) is not read")
    if node.op == "dot" and (len(rhs.shape or ()) != 2 or (a.bool("transpose_a") and len(lhs.shape or ()) != 2)):
        raise ModelError("dot of tensors other than matrices (and a tensor times a matrix)")
    sides = []
    for value, key in ((lhs, "transpose_a"), (rhs, "transpose_b")):
        if a.bool(key):
            rank = len(value.shape)
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            value = b.op("Transpose", value, perm=perm, suffix=key)
        sides.append(value)
    return b.op("MatMul", *sides)


@op("add_n", "ElementWiseSum", produces="Sum")
def add_n(imp, node):
    return imp.b.op("Sum", *imp.inputs)


@op("Cast", "cast", produces="Cast")
def cast(imp, node):
    return imp.b.op("Cast", imp.x, to=dtype_of(imp.attrs.text("dtype")))


@op("Pad", "pad", produces="Pad")
def pad(imp, node):
    a, b = imp.attrs, imp.b
    mode = a.choice("mode", "constant", ("constant", "edge", "reflect"))
    widths = a.ints("pad_width")
    rank = len(imp.x.shape or ())
    if len(widths) != 2 * rank:
        raise ModelError(f"pad_width {widths} does not fit a rank-{rank} tensor")
    pads = np.array(widths[0::2] + widths[1::2], np.int64)
    value = b.const(np.array(a.float("constant_value", 0.0), imp.x.dtype))
    return b.op("Pad", imp.x, b.const(pads), value if mode == "constant" else None, mode=mode)


@op("zeros_like", "ones_like", produces=())
def filled_like(imp, node):
    """A constant of the input's (known) shape and dtype."""
    shape = known_shape(imp.x, node.op)
    fill = np.zeros if node.op == "zeros_like" else np.ones
    return imp.b.const(fill(shape, imp.x.dtype))


@op("broadcast_mod", "_mod", produces="Mod")
def mod(imp, node):
    """MXNet's modulo takes the sign of the divisor (Python's), which is the IR's for integers."""
    if any(v.dtype.kind not in "iu" for v in imp.inputs):
        raise ModelError("modulo of floats (read for integers)")
    return imp.b.op("Mod", *imp.inputs)


COMPARE = {"broadcast_greater": "Greater", "broadcast_lesser": "Less", "broadcast_equal": "Equal",
           "broadcast_greater_equal": "GreaterOrEqual", "broadcast_lesser_equal": "LessOrEqual"}


@op(*COMPARE, produces=(*COMPARE.values(), "Cast"))
def compare(imp, node):
    """0/1 in the operands' dtype, as MXNet gives them."""
    return imp.b.op("Cast", imp.b.op(COMPARE[node.op], *imp.inputs, suffix="compare"), to=str(imp.x.dtype))


@op("argmax", "argmin", produces=("ArgMax", "ArgMin", "Cast"))
def argmax(imp, node):
    """The first index of the extreme value, as a float (MXNet's)."""
    a, b = imp.attrs, imp.b
    axis = a.int("axis")
    if axis is None:
        raise ModelError("argmax over the flattened tensor (no axis) is not read")
    index = b.op("ArgMax" if node.op == "argmax" else "ArgMin", imp.x, axis=axis, keepdims=int(a.bool("keepdims")),
                 suffix="index")
    return b.op("Cast", index, to=str(imp.x.dtype))


@op("where", produces=("Cast", "Where"))
def where(imp, node):
    cond, x, y = imp.inputs
    if cond.shape != x.shape:
        raise ModelError("where with a 1-D condition choosing rows is not read")
    return imp.b.op("Where", imp.b.op("Cast", cond, to="bool", suffix="condition"), x, y)


@op("tile", produces=("Reshape", "Tile"))
def tile(imp, node):
    """MXNet's tile: repeats for the last axes (ones before), or new leading axes of size 1 first."""
    b, x = imp.b, imp.x
    reps = imp.attrs.ints("reps")
    shape = known_shape(x, "tile")
    if len(reps) > len(shape):
        shape = (1,) * (len(reps) - len(shape)) + shape
        x = b.op("Reshape", x, b.const(np.array(shape, np.int64)), suffix="lifted")
    reps = [1] * (len(shape) - len(reps)) + list(reps)
    return b.op("Tile", x, b.const(np.array(reps, np.int64)))


@op("broadcast_to", produces="Expand")
def broadcast_to(imp, node):
    shape = known_shape(imp.x, "broadcast_to")
    target = imp.attrs.ints("shape")
    target = [s if t == 0 else t for s, t in zip((1,) * (len(target) - len(shape)) + shape, target)]
    return imp.b.op("Expand", imp.x, imp.b.const(np.array(target, np.int64)))


@op("_zeros", "zeros", "_ones", "ones", produces=())
def filled(imp, node):
    """A constant (zeros whose shape MXNet infers from the op reading them are left to that op)."""
    a = imp.attrs
    shape = a.ints("shape")
    dtype = dtype_of(a.text("dtype", "float32"))
    a.text("ctx")
    if node.op.endswith("ones"):
        return imp.b.const(np.ones(known_dims(shape, node.op), dtype))
    return imp.zeros(shape, dtype)


def known_dims(shape, what: str) -> list[int]:
    if not all(isinstance(d, int) and d > 0 for d in shape):
        raise ModelError(f"{what} of shape {shape}, which MXNet infers at run time")
    return shape


LOGICAL = {"broadcast_logical_and": "And", "broadcast_logical_or": "Or", "broadcast_logical_xor": "Xor"}


@op(*LOGICAL, "logical_not", produces=("Cast", "And", "Or", "Xor", "Not"))
def logical(imp, node):
    """0/1 in the operands' dtype, as MXNet gives them (any non-zero is true)."""
    b = imp.b
    truths = [b.op("Cast", v, to="bool", suffix=f"truth{i}") for i, v in enumerate(imp.inputs)]
    result = b.op(LOGICAL.get(node.op, "Not"), *truths, suffix="logical")
    return b.op("Cast", result, to=str(imp.x.dtype))


@op("gather_nd", produces="GatherND")
def gather_nd(imp, node):
    """MXNet's indices (M, ...) index the first M axes: the IR's (..., M) form, moved. Negative indices are not
    read (MXNet does not wrap them)."""
    b = imp.b
    data, indices = imp.inputs
    if indices.const is None or np.any(np.asarray(indices.const) < 0):
        raise ModelError("gather_nd with indices computed at run time or negative is not read")
    moved = np.moveaxis(np.asarray(indices.const), 0, -1).astype(np.int64)
    return b.op("GatherND", data, b.const(moved))
