"""Keras 3 <-> IR: reshapes, joins and splits, slicing and indexing, gathers, padding.

Each IR op's import converters (layers and `keras.ops` calls -> IR) and export writer (IR -> Keras
code) sit together.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, python_slices, split_sized_at_run_time
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.value import Value
from tensorbridge.ops.integer_range import integer_range
from tensorbridge.ops.shape import negative_pads
from tensorbridge.rules.keras.base import (
    R,
    axes_list,
    int_operand,
    keras_op,
    layer,
    operand_value,
    to_numpy,
)


@layer("Reshape", produces="Reshape")
def read_reshape(imp, layer, inputs, node):
    return imp.emit("Reshape", [inputs[0], imp.const([0] + [int(d) for d in layer.target_shape], np.int64)])


@keras_op("Reshape", produces="Reshape")
def read_op_reshape(imp, op, args, kwargs, node):
    """ops.reshape; dims open when the layer was traced are None: a leading one is the batch, the input's own (ONNX's
    0 copies it: `ops.reshape(x, (batch, -1, c))`), another one -1; more are known only with the input shapes."""
    given = list(np.atleast_1d(np.asarray(op.newshape, dtype=object)))
    if 0 in given:
        raise ModelError(f"{op.name}: a reshape to a zero-size dim is not supported")
    x = args[0]
    copied = bool(given) and given[0] is None and bool(x.shape) and not isinstance(x.shape[0], int)
    shape = [0 if copied and i == 0 else -1 if d is None else int(d) for i, d in enumerate(given)]
    if shape.count(-1) > 1:
        raise ModelError(f"{op.name}: a reshape to {tuple(op.newshape)} has several dims open when traced: give the "
                         "input shapes (--input-shape)")
    return imp.emit("Reshape", [x, imp.const(shape, np.int64)])


@R.exports("Reshape", check=lambda node: "Reshape allowzero=1" if node.attrs.get("allowzero") else None)
def write_reshape(em, node):
    x, shape = node.inputs
    if shape.const is None:
        _write_computed_reshape(em, node)
        return
    given = int_operand(shape)
    target = given
    if 0 in given:
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(given)]
        out = node.outputs[0].shape
        if not isinstance(target[0], int) and -1 not in target[1:]:
            target[0] = -1  # the (dynamic) batch dim
        elif out is not None and all(isinstance(d, int) for d in out[1:]):
            target = [-1, *out[1:]]  # only the batch dim is dynamic: the others are known
        if not all(isinstance(d, int) for d in target):  # an open dim copied beside a -1: read as the model runs
            return em.in_own_layer(node, lambda em, node: _reshape_copying_dims(em, node, given))
    em.out(node, P.call("ops.reshape", em.tensor(x), tuple(target)))


def _write_computed_reshape(em, node):
    """A target computed when the model runs: where shape inference knows every output dim but one, that one is
    -1 (the element count fixes it); else the target is read at run time, in a layer of its own."""
    out = node.outputs[0].shape
    unknown = [i for i, d in enumerate(out or ()) if not isinstance(d, int)]
    if out is not None and len(unknown) <= 1:
        em.out(node, P.call("ops.reshape", em.tensor(node.inputs[0]), tuple(-1 if i in unknown else d
                                                                            for i, d in enumerate(out))))
        return
    em.in_own_layer(node, _reshape_at_run_time)


def _reshape_at_run_time(em, node):
    """ops.reshape to the target's values, or, where shape inference knows an entry is 0, as _reshape_copying_dims
    writes it."""
    entries = node.inputs[1].meta.get("elements") or []
    if 0 not in entries:
        return em.out(node, P.call("ops.reshape", *map(em.tensor, node.inputs)))
    _reshape_copying_dims(em, node, entries)


def _reshape_copying_dims(em, node, entries: list):
    """ops.reshape to a target whose 0 entries copy the input's dims (ONNX's, not TensorFlow's empty dim:
    paddle2onnx writes them), read from its shape as the model runs; an entry known only then is the computed
    target's own."""
    x = em.tensor(node.inputs[0])
    sizes = [P.subscript(P.call("ops.shape", x), i) if e == 0 else P.lit(e) if isinstance(e, int) else
             P.call("ops.cast", P.subscript(em.tensor(node.inputs[1]), i), "int32")  # of ops.shape's type
             for i, e in enumerate(entries)]
    em.out(node, P.call("ops.reshape", x, ast.Tuple(sizes, ast.Load())))


@layer("Flatten", produces="Flatten")
def read_flatten(imp, layer, inputs, node):
    return imp.emit("Flatten", [inputs[0]], {"axis": 1})


@R.exports("Flatten", check=lambda node: None if node.attrs.get("axis", 1) == 1 else "Flatten at an axis other than 1")
def write_flatten(em, node):
    x = node.inputs[0]
    em.out(node, em.layer(node, "layers.Flatten", [], {}, [], em.tensor(x)))


@layer("Permute", produces="Transpose")
def read_permute(imp, layer, inputs, node):
    return imp.emit("Transpose", [inputs[0]], {"perm": [0] + [int(d) for d in layer.dims]})


@keras_op("Transpose", produces="Transpose")
def read_op_transpose(imp, op, args, kwargs, node):
    x = args[0]
    perm = axes_list(op.axes) or list(reversed(range(len(x.shape))))
    return imp.emit("Transpose", [x], {"perm": perm})


@R.exports("Transpose")
def write_transpose(em, node):
    """ops.transpose; no perm reverses the axes, as ops.transpose does without its axes."""
    perm = node.attrs.get("perm")
    args = (tuple(perm),) if perm else ()
    em.out(node, P.call("ops.transpose", em.tensor(node.inputs[0]), *args))


@keras_op("Squeeze", produces="Squeeze")
def read_op_squeeze(imp, op, args, kwargs, node):
    axes = axes_list(op.axis)
    return imp.emit("Squeeze", [args[0]] + ([imp.const(axes, np.int64)] if axes else []))


@R.exports("Squeeze")
def write_squeeze(em, node):
    """ops.squeeze; where the input has open dims, the squeezed axes are indexed at 0 instead: Keras's own shapes
    may not know a dim of 1 that shape inference knows (a concatenation with an open size beside a 1, in
    PP-OCRv4's recogniser), and ops.squeeze refuses a dim it does not know to be 1."""
    x, axes = node.inputs[0], node.input(1)
    kwargs = {"axis": tuple(int_operand(axes))} if axes else {}
    if axes is None or x.shape is None or all(isinstance(d, int) for d in x.shape):
        return em.out(node, P.call("ops.squeeze", em.tensor(x), **kwargs))
    dropped = {a % len(x.shape) for a in int_operand(axes)}
    index = [P.lit(0) if a in dropped else P.slice_(None, None) for a in range(max(dropped) + 1)]
    em.out(node, P.subscript(em.tensor(x), ast.Tuple(index, ast.Load())))


@keras_op("ExpandDims", produces="Unsqueeze")
def read_op_expand_dims(imp, op, args, kwargs, node):
    return imp.emit("Unsqueeze", [args[0], imp.const(axes_list(op.axis), np.int64)])


@R.exports("Unsqueeze")
def write_unsqueeze(em, node):
    axes = sorted(int_operand(node.inputs[1]))
    expr = em.tensor(node.inputs[0])
    for a in axes:
        expr = P.call("ops.expand_dims", expr, a)
    em.out(node, expr)


@layer("Concatenate", produces="Concat")
def read_concatenate(imp, layer, inputs, node):
    return imp.emit("Concat", inputs, {"axis": int(layer.axis)})


@keras_op("Concatenate", produces="Concat")
def read_op_concatenate(imp, op, args, kwargs, node):
    parts = [operand_value(imp, a, None) for a in args[0]]
    return imp.emit("Concat", parts, {"axis": int(op.axis)})


@keras_op("Stack", produces="Concat")
def read_op_stack(imp, op, args, kwargs, node):
    axis = imp.const([int(op.axis)], np.int64)
    parts = [imp.emit("Unsqueeze", [operand_value(imp, a, None), axis], suffix=f"part{i}")
             for i, a in enumerate(args[0])]
    return imp.emit("Concat", parts, {"axis": int(op.axis)})


@R.exports("Concat")
def write_concat(em, node):
    em.out(node, P.call("ops.concatenate", P.lit([em.tensor(v) for v in node.inputs]), axis=node.attrs["axis"]))


@keras_op("Split", produces="Split")
def read_op_split(imp, op, args, kwargs, node):
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


@R.exports("Split", check=split_sized_at_run_time)
def write_split(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 0)
    sizes = node.input(1)
    if sizes is not None:
        parts = int_operand(sizes)
    elif x.shape is not None and isinstance(x.shape[axis], int):
        from tensorbridge.ops.shape import split_sizes

        parts = split_sizes(x.shape[axis], node.attrs.get("num_outputs") or len(node.outputs))
    else:
        raise Unsupported("Split of a dynamic dim")
    if len(parts) == 1:  # one part (Pixtral's patch embedding): the tensor itself (TensorFlow's split takes no cut)
        return em.alias(node, em.tensor(x))
    cuts = [int(c) for c in np.cumsum(parts)[:-1]]
    em.outs(node, P.call("ops.split", em.tensor(x), cuts, axis=axis), len(node.outputs))


@layer("Cropping1D", "Cropping2D", "Cropping3D", produces="Slice")
def read_cropping(imp, layer, inputs, node):
    x = inputs[0]
    crops = layer.cropping
    pairs = [tuple(crops)] if isinstance(crops[0], int) else [tuple(c) for c in crops]
    starts = [p[0] for p in pairs]
    ends = [-p[1] if p[1] else 2**62 for p in pairs]
    axes = list(range(1, len(pairs) + 1))
    return imp.emit("Slice", [x, imp.const(starts, np.int64), imp.const(ends, np.int64), imp.const(axes, np.int64)])


@keras_op("Flip", produces="Slice")
def read_op_flip(imp, op, args, kwargs, node):
    x = args[0]
    axes = axes_list(op.axis, len(x.shape))
    big = np.iinfo(np.int64).max
    return imp.emit("Slice", [x, imp.const([-1] * len(axes), np.int64), imp.const([-big] * len(axes), np.int64),
                              imp.const(axes, np.int64), imp.const([-1] * len(axes), np.int64)])


@keras_op("GetItem", produces="Slice")
def read_op_get_item(imp, op, args, kwargs, node):
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


@R.exports("Slice")
def write_slice(em, node):
    x = node.inputs[0]
    if x.shape is None:
        raise Unsupported("Slice needs the input rank")
    if any(v is not None and v.const is None for v in node.inputs[1:3]):  # bounds computed when the model runs
        em.in_own_layer(node, _write_computed_slice)
        return
    items = python_slices(node, len(x.shape))
    em.out(node, P.subscript(em.tensor(x), ast.Tuple(items, ast.Load())))


def _write_computed_slice(em, node):
    """A Slice whose bounds are computed (a sequence's length read from an input), in a layer of its own whose
    `call` sees their values: Python slices of the tensor, which clamp out-of-range bounds as ONNX does."""
    x, starts, ends = node.inputs[:3]
    rank = len(x.shape)
    axes = [a % rank for a in int_operand(node.input(3))] if node.input(3) is not None else \
        list(range(int(starts.shape[0])))
    steps = int_operand(node.input(4)) if node.input(4) is not None else [1] * len(axes)

    def bound(v, j):
        if v.const is not None:
            b = int(np.asarray(v.const).ravel()[j])
            return None if abs(b) >= 2**62 else P.lit(b)
        return P.subscript(em.tensor(v), j)
    items = [P.slice_(None, None)] * rank
    for j, (axis, step) in enumerate(zip(axes, steps)):
        items[axis] = P.slice_(bound(starts, j), bound(ends, j), step if step != 1 else None)
    data = P.call("ops.convert_to_tensor", em.tensor(x)) if x.const is not None else em.tensor(x)  # not NumPy's
    em.out(node, P.subscript(data, ast.Tuple(items, ast.Load())))


@layer("Embedding", produces="Gather")
def read_embedding(imp, layer, inputs, node):
    return imp.emit("Gather", [imp.weight("embeddings", to_numpy(layer.embeddings)), inputs[0]], {"axis": 0})


@keras_op("Take", produces="Gather")
def read_op_take(imp, op, args, kwargs, node):
    x, indices = args[0], operand_value(imp, args[1], np.dtype(np.int64))
    if op.axis is None:
        x = imp.emit("Reshape", [x, imp.const([-1], np.int64)], suffix="flat")
    return imp.emit("Gather", [x, indices], {"axis": int(op.axis or 0)})


@R.exports("Gather")
def write_gather(em, node):
    data, idx = node.inputs
    axis = node.attrs.get("axis", 0)
    if data.const is not None and axis == 0 and np.asarray(data.const).ndim == 2 and dtypes.is_float(data.const.dtype):
        table = np.asarray(data.const)
        return em.out(node, em.layer(node, "layers.Embedding", [table.shape[0], table.shape[1]], {}, [table],
                                     em.tensor(idx)))
    s = em.scalar(idx)
    index = P.lit(int(s)) if s is not None and idx.const.ndim == 0 else em.tensor(idx)
    em.out(node, P.call("ops.take", em.tensor(data), index, axis=axis))


def _flat_positions(em, data, idx):
    """(data with its first k dims flattened, the index tuples' positions in it, the remaining dims) for an
    ND gather or scatter whose index tuples have k entries; negative entries count from the end."""
    if data.shape is None or idx.shape is None:
        raise Unsupported("an ND index into unknown shapes")
    k = idx.shape[-1]
    if not isinstance(k, int) or not all(isinstance(d, int) for d in data.shape):
        raise Unsupported("an ND index over dynamic dims")
    index = em.tensor(idx)
    bounds = integer_range(idx)
    if bounds is None or bounds[0] < 0:  # negative indices count from the end
        lead = np.array(data.shape[:k], np.int64)  # of the index's rank (TFLite has no int64 BiasAdd, which a
        if idx.shape is not None:  # vector added to the last axis becomes in TensorFlow's converter)
            lead = lead.reshape((1,) * (len(idx.shape) - 1) + (k,))
        wrapped = P.call("ops.add", index, P.call("np.array", lead.tolist(), dtype="int64"))
        index = P.call("ops.where", P.call("ops.less", index, 0), wrapped, index)
    strides = [int(np.prod(data.shape[j + 1:k])) for j in range(k)]
    rest = tuple(data.shape[k:])
    flat = P.call("ops.reshape", em.tensor(data), (-1, *rest))
    position = P.call("ops.sum", P.binop(index, "*", P.call("np.array", strides, dtype="int64")), axis=-1)
    return flat, position, rest


@R.exports("GatherND", check=lambda node: "GatherND with batch_dims" if node.attrs.get("batch_dims") else None)
def write_gather_nd(em, node):
    flat, position, _ = _flat_positions(em, *node.inputs)
    em.out(node, P.call("ops.take", flat, position, axis=0))


#: ScatterND's reductions other than "none" -> (the keras.ops segment reduction of the updates, how it joins the data)
_SCATTER_SEGMENTS = {"add": ("ops.segment_sum", "ops.add"), "mul": ("ops.segment_prod", "ops.multiply"),
                     "max": ("ops.segment_max", "ops.maximum"), "min": ("ops.segment_min", "ops.minimum")}


@R.exports("ScatterND")
def write_scatter_nd(em, node):
    """ops.scatter_update of the flattened leading dims at the index tuples' positions; with a reduction, the data
    joined with the segment reduction of the updates by position (a position no update hits gets the reduction's
    identity, which leaves the data as it is)."""
    data, idx, updates = node.inputs
    flat, position, rest = _flat_positions(em, data, idx)
    values = P.call("ops.reshape", em.tensor(updates), (-1, *rest))
    reduction = node.attrs.get("reduction", "none")
    if reduction == "none":
        scattered = P.call("ops.scatter_update", flat, P.call("ops.reshape", position, (-1, 1)), values)
    else:
        segment, join = _SCATTER_SEGMENTS[reduction]
        rows = int(np.prod(data.shape)) // max(int(np.prod(rest)), 1)
        scattered = P.call(join, flat, P.call(segment, values, P.call("ops.reshape", position, (-1,)),
                                              num_segments=rows))
    em.out(node, P.call("ops.reshape", scattered, tuple(data.shape)))


@keras_op("BroadcastTo", produces="Expand")
def read_op_broadcast_to(imp, op, args, kwargs, node):
    return imp.emit("Expand", [args[0], imp.const([int(d) for d in op.shape], np.int64)])


@R.exports("Expand")
def write_expand(em, node):
    x, shape = node.inputs
    out = node.outputs[0].shape
    static = out is not None and all(isinstance(d, int) for d in out)
    dynamic = x.shape is None or not all(isinstance(d, int) for d in x.shape)
    if shape.const is None and not static or dynamic:  # a shape or a tensor known only when the model runs
        em.in_own_layer(node, _write_computed_expand)
        return
    # a computed shape whose entries are known gives the result's
    target = tuple(out) if shape.const is None else np.broadcast_shapes(tuple(x.shape), tuple(int_operand(shape)))
    em.out(node, P.call("ops.broadcast_to", em.tensor(x), tuple(target)))


def _write_computed_expand(em, node):
    """Expand to a shape computed when the model runs, or of a tensor whose dims are, in a layer of its own:
    adding zeros of that shape broadcasts both ways, as Expand does (a 1 in the shape keeps the tensor's dim)."""
    x, shape = node.inputs
    dtype = dtypes.name(x.dtype) if x.dtype is not None else "float32"
    combine = "ops.logical_or" if dtype == "bool" else "ops.add"
    target = tuple(int_operand(shape)) if shape.const is not None else em.tensor(shape)
    em.out(node, P.call(combine, em.tensor(x), P.call("ops.zeros", target, dtype=dtype)))


@layer("RepeatVector", produces="Tile")
def read_repeat_vector(imp, layer, inputs, node):
    x = imp.emit("Unsqueeze", [inputs[0], imp.const([1], np.int64)], suffix="unsqueeze")
    return imp.emit("Tile", [x, imp.const([1, int(layer.n), 1], np.int64)])


@layer("ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", produces="Pad")
def read_zero_padding(imp, layer, inputs, node):
    x = inputs[0]
    rank = len(x.shape)
    pads = layer.padding
    pairs = [(int(pads[0]), int(pads[1]))] if isinstance(pads[0], int) and rank == 3 else [tuple(p) for p in pads]
    begin = [0] + [p[0] for p in pairs] + [0]
    end = [0] + [p[1] for p in pairs] + [0]
    return imp.emit("Pad", [x, imp.const(begin + end, np.int64)], {"mode": "constant"})


@keras_op("Pad", produces="Pad")
def read_op_pad(imp, op, args, kwargs, node):
    x = args[0]
    width = np.broadcast_to(np.asarray(op.pad_width, np.int64).reshape(-1, 2) if np.ndim(op.pad_width) else
                            np.full((1, 2), int(op.pad_width)), (len(x.shape), 2))
    value = kwargs.get("constant_values", args[1] if len(args) > 1 else None)
    mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}.get(op.mode)
    if mode is None:
        raise ModelError(f"{op.name}: ops.pad mode {op.mode!r} is not supported")
    operands = [x, imp.const(np.concatenate([width[:, 0], width[:, 1]]), np.int64)]
    if value is not None:
        operands.append(operand_value(imp, value, x.dtype))
    return imp.emit("Pad", operands, {"mode": mode})


@R.exports("Pad", check=lambda n: "Pad with axes" if n.input(3) is not None else negative_pads(n) or (
           None if n.attrs.get("mode", "constant") in ("constant", "reflect") else
           "Keras's TensorFlow backend pads only with a constant or a reflection"))
def write_pad(em, node):
    x, pads = node.inputs[0], node.inputs[1]
    p = int_operand(pads)
    n = len(p) // 2
    mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}[
        node.attrs.get("mode", "constant")]
    value = em.scalar(node.input(2)) if node.input(2) is not None else None
    kwargs = {"mode": mode}
    if mode == "constant" and value:
        kwargs["constant_values"] = value
    em.out(node, P.call("ops.pad", em.tensor(x), [[p[i], p[i + n]] for i in range(n)], **kwargs))


@layer("Weight", produces=())
def read_weight(imp, layer, inputs, node):
    """A learned tensor tensorbridge's Keras code holds in its own `Weight` layer: the tensor, a weight."""
    return imp.weight("value", to_numpy(layer.value))
