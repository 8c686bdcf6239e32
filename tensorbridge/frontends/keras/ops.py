"""`keras.ops` calls in a functional graph -> IR (named in `rules/keras.py` OPS / OPS_SPECIAL).

A call is a node whose operation is a `keras.ops` Operation, not a layer: `ops.add(x, c)`,
`x * 2.0`, `ops.reshape(x, (-1, 24))`. Its arguments keep their order, tensors and constants
mixed; `Importer.operands` resolves the tensors to IR values. Each converter here takes
(importer, operation, operands, keyword operands, keras node) and returns the output value(s);
the operation's own settings (axis, newshape ...) are attributes of the operation.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.value import Value


def _axes(axis, rank: int | None = None) -> list[int] | None:
    if axis is None:
        return None if rank is None else list(range(rank))
    return [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]


def _tensor(imp, a, like: np.dtype | None) -> Value:
    """An operand as an IR value: constants take `like`'s type (Keras converts them to the result's)."""
    if isinstance(a, Value):
        return a
    arr = np.asarray(a)
    return imp.const(arr, like if like is not None and arr.dtype.kind in "fiub" else arr.dtype)


def _out_dtype(node) -> np.dtype:
    return dtypes.dtype(dtypes.name(np.dtype(node.output_tensors[0].dtype)))


def elementwise(imp, op, args, kwargs, node, ir_op: str):
    """One IR op over the operands; constants and mixed-type tensors are brought to the operands' common
    type: the result's, or for a comparison its first tensor's (Where's condition stays boolean)."""
    out = _out_dtype(node)
    tensors = [a for a in args if isinstance(a, Value)]
    comparison = out.kind == "b" and any(t.dtype is not None and t.dtype.kind != "b" for t in tensors)
    common = tensors[0].dtype if comparison else out
    values = []
    for i, a in enumerate(args):
        v = _tensor(imp, a, common)
        if v.dtype is not None and common is not None and v.dtype != common and not (ir_op == "Where" and i == 0):
            v = imp.emit("Cast", [v], {"to": dtypes.name(common)}, suffix=f"cast{i}")
        values.append(v)
    return imp.emit(ir_op, values)


def clip(imp, op, args, kwargs, node):
    x = args[0]
    return imp.emit("Clip", [x, imp.const(op.x_min, x.dtype), imp.const(op.x_max, x.dtype)])


def relu6(imp, op, args, kwargs, node):
    x = args[0]
    return imp.emit("Clip", [x, imp.const(0.0, x.dtype), imp.const(6.0, x.dtype)])


def softmax(imp, op, args, kwargs, node):
    return imp.emit(type(op).__name__, [args[0]], {"axis": int(op.axis)})


def gelu(imp, op, args, kwargs, node):
    return imp.emit("Gelu", [args[0]], {"approximate": "tanh" if op.approximate else "none"})


def hard_sigmoid(imp, op, args, kwargs, node):
    return imp.emit("HardSigmoid", [args[0]], {"alpha": 1.0 / 6, "beta": 0.5})


def elu(imp, op, args, kwargs, node):
    return imp.emit("Elu", [args[0]], {"alpha": float(op.alpha)})


def leaky_relu(imp, op, args, kwargs, node):
    return imp.emit("LeakyRelu", [args[0]], {"alpha": float(op.negative_slope)})


def cast(imp, op, args, kwargs, node):
    return imp.emit("Cast", [args[0]], {"to": dtypes.name(dtypes.dtype(str(op.dtype)))})


def round_(imp, op, args, kwargs, node):
    if op.decimals:
        raise ModelError(f"{op.name}: ops.round with decimals={op.decimals} is not supported")
    return imp.emit("Round", [args[0]])


def reshape(imp, op, args, kwargs, node):
    shape = [int(d) for d in np.atleast_1d(op.newshape)]
    if 0 in shape:
        raise ModelError(f"{op.name}: a reshape to a zero-size dim is not supported")
    return imp.emit("Reshape", [args[0], imp.const(shape, np.int64)])


def transpose(imp, op, args, kwargs, node):
    x = args[0]
    perm = _axes(op.axes) or list(reversed(range(len(x.shape))))
    return imp.emit("Transpose", [x], {"perm": perm})


def squeeze(imp, op, args, kwargs, node):
    axes = _axes(op.axis)
    return imp.emit("Squeeze", [args[0]] + ([imp.const(axes, np.int64)] if axes else []))


def expand_dims(imp, op, args, kwargs, node):
    return imp.emit("Unsqueeze", [args[0], imp.const(_axes(op.axis), np.int64)])


def concatenate(imp, op, args, kwargs, node):
    parts = [_tensor(imp, a, None) for a in args[0]]
    return imp.emit("Concat", parts, {"axis": int(op.axis)})


def stack(imp, op, args, kwargs, node):
    axis = imp.const([int(op.axis)], np.int64)
    parts = [imp.emit("Unsqueeze", [_tensor(imp, a, None), axis], suffix=f"part{i}") for i, a in enumerate(args[0])]
    return imp.emit("Concat", parts, {"axis": int(op.axis)})


def split(imp, op, args, kwargs, node):
    x, axis = args[0], int(op.axis)
    n = len(node.output_tensors)
    if isinstance(op.indices_or_sections, int):
        return imp.emit("Split", [x], {"axis": axis, "num_outputs": n}, outputs=n)
    size = x.shape[axis] if x.shape is not None else None
    if not isinstance(size, int):
        raise ModelError(f"{op.name}: ops.split at indices needs a static size on axis {axis}")
    cuts = [0, *[int(i) for i in op.indices_or_sections], size]
    sizes = [b - a for a, b in zip(cuts, cuts[1:])]
    return imp.emit("Split", [x, imp.const(sizes, np.int64)], {"axis": axis}, outputs=n)


def take(imp, op, args, kwargs, node):
    x, indices = args[0], _tensor(imp, args[1], np.dtype(np.int64))
    if op.axis is None:
        x = imp.emit("Reshape", [x, imp.const([-1], np.int64)], suffix="flat")
    return imp.emit("Gather", [x, indices], {"axis": int(op.axis or 0)})


def broadcast_to(imp, op, args, kwargs, node):
    return imp.emit("Expand", [args[0], imp.const([int(d) for d in op.shape], np.int64)])


def flip(imp, op, args, kwargs, node):
    x = args[0]
    axes = _axes(op.axis, len(x.shape))
    big = np.iinfo(np.int64).max
    return imp.emit("Slice", [x, imp.const([-1] * len(axes), np.int64), imp.const([-big] * len(axes), np.int64),
                              imp.const(axes, np.int64), imp.const([-1] * len(axes), np.int64)])


def pad(imp, op, args, kwargs, node):
    x = args[0]
    width = np.broadcast_to(np.asarray(op.pad_width, np.int64).reshape(-1, 2) if np.ndim(op.pad_width) else
                            np.full((1, 2), int(op.pad_width)), (len(x.shape), 2))
    value = kwargs.get("constant_values", args[1] if len(args) > 1 else None)
    mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}.get(op.mode)
    if mode is None:
        raise ModelError(f"{op.name}: ops.pad mode {op.mode!r} is not supported")
    operands = [x, imp.const(np.concatenate([width[:, 0], width[:, 1]]), np.int64)]
    if value is not None:
        operands.append(_tensor(imp, value, x.dtype))
    return imp.emit("Pad", operands, {"mode": mode})


_REDUCE = {"Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin", "Prod": "ReduceProd"}


def reduce(imp, op, args, kwargs, node):
    if getattr(op, "initial", None) is not None:
        raise ModelError(f"{op.name}: ops.{op.name} with initial= is not supported")
    x = args[0]
    axes = _axes(op.axis, len(x.shape))
    return imp.emit(_REDUCE[type(op).__name__], [x, imp.const(axes, np.int64)], {"keepdims": int(bool(op.keepdims))})


def get_item(imp, op, args, kwargs, node):
    """`x[key]`: slices become one Slice, integer indices a Squeeze after it, None a new axis."""
    x, key = args[0], args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
    if any(isinstance(k, Value) for k in key):
        raise ModelError(f"{op.name}: indexing with a tensor is not supported")
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        named = sum(k is not None for k in key) - 1
        key = [*key[:at], *[slice(None)] * (len(x.shape) - named), *key[at + 1:]]
    starts, ends, axes, steps, drop, new_axes, axis = [], [], [], [], [], [], 0
    big = np.iinfo(np.int64).max
    for k in key:
        if k is None:
            new_axes.append(axis + len(new_axes) - len(drop))
            continue
        if isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if (k.start, k.stop, step) != (None, None, 1):
                starts.append(int(k.start) if k.start is not None else (0 if step > 0 else -1))
                ends.append(int(k.stop) if k.stop is not None else (big if step > 0 else -big))
                axes.append(axis)
                steps.append(step)
        else:
            i = int(k)
            starts.append(i)
            ends.append(i + 1 if i != -1 else big)
            axes.append(axis)
            steps.append(1)
            drop.append(axis)
        axis += 1
    parts = []
    if axes:
        parts.append(("Slice", [imp.const(v, np.int64) for v in (starts, ends, axes, steps)]))
    if drop:
        parts.append(("Squeeze", [imp.const(drop, np.int64)]))
    if new_axes:
        parts.append(("Unsqueeze", [imp.const(new_axes, np.int64)]))
    y = x if parts else imp.emit("Identity", [x])
    for i, (ir_op, operands) in enumerate(parts):
        y = imp.emit(ir_op, [y, *operands], suffix="" if i == len(parts) - 1 else ir_op.lower())
    return y


def dot_product_attention(imp, op, args, kwargs, node):
    """Keras [batch, time, heads, depth] operands around the IR's [batch, heads, time, depth] Attention."""
    names = ("query", "key", "value", "bias", "mask", "scale")
    given = dict(zip(names, args)) | kwargs
    bias, mask, scale = given.get("bias"), given.get("mask"), given.get("scale")
    if bias is not None and mask is not None:
        raise ModelError(f"{op.name}: dot_product_attention with both a bias and a mask is not supported")
    q, k, v = [imp.emit("Transpose", [given[n]], {"perm": [0, 2, 1, 3]}, suffix=n) for n in names[:3]]
    attrs = {"is_causal": int(bool(op.is_causal))}
    if scale is not None:
        attrs["scale"] = float(scale)
    if op.attn_logits_soft_cap is not None:
        attrs["softcap"] = float(op.attn_logits_soft_cap)
    extra = bias if bias is not None else mask
    y = imp.emit("Attention", [q, k, v] + ([_tensor(imp, extra, None)] if extra is not None else []), attrs,
                 suffix="bhtd")
    return imp.emit("Transpose", [y], {"perm": [0, 2, 1, 3]})
