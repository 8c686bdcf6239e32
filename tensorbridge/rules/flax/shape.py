"""Flax code for shape, indexing and reduction ops.

JAX traces with static shapes, so sizes are Python values in the generated code: a Reshape takes its
target as a tuple (one open dimension as -1), a Shape is `list(x.shape)` and the shape arithmetic on it Python
arithmetic (rules/shape_values.py), whose ints JAX traces as constants.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import (
    Unsupported,
    int_operand,
    python_slices,
    split_sized_at_run_time,
    top_k_writer,
)
from tensorbridge.ops.shape import negative_pads
from tensorbridge.rules import shape_values
from tensorbridge.rules.flax.base import R, axes_of, input_rank


def _own_size(d, x, xe: ast.expr) -> ast.expr | None:
    """`x.shape[k]` for an open size `d` that `x` has under the same name (JAX traces fixed sizes: an int), else
    None."""
    if d is None or x.shape is None or d not in x.shape:
        return None
    return P.subscript(ast.Attribute(xe, "shape", ast.Load()), list(x.shape).index(d))


def _target(em, node, xe: ast.expr) -> ast.expr:
    """A Reshape's target as the generated code writes it: ints; a run-time size the input has under the same
    name, read from `x.shape` (JAX traces fixed sizes: an int); another computed from shapes, that computation's
    entry; one other open size as -1. The sizes are the target's entries where shape inference knows them (a
    batch read by Shape), else the output's dims."""
    x, out = node.inputs[0], node.outputs[0]
    computed = em.pylist(node.inputs[1]) if node.op == "Reshape" and id(node.inputs[1]) in em.shape_values \
        else None
    entries = node.inputs[1].meta.get("elements") if node.op == "Reshape" else None
    if entries is None or (out.shape is not None and len(entries) != len(out.shape)):
        entries = out.shape
    if entries is None:
        raise Unsupported(f"{out.name!r} has no known rank")
    sizes = []
    for i, d in enumerate(entries):
        if isinstance(d, int) and d == 0 and not node.attrs.get("allowzero"):
            sizes.append(P.subscript(ast.Attribute(xe, "shape", ast.Load()), i))  # ONNX's "copy this dim"
        elif isinstance(d, int):
            sizes.append(P.lit(d))
        elif out.shape is not None and isinstance(out.shape[i], int):
            sizes.append(P.lit(out.shape[i]))
        else:
            sizes.append(_own_size(d, x, xe) or (P.subscript(computed, i) if computed is not None else P.lit(-1)))
    if sum(isinstance(e, ast.Constant) and e.value == -1 for e in sizes) > 1:
        raise Unsupported(f"{out.name!r} has more than one dynamic dimension its input does not have")
    return ast.Tuple(sizes, ast.Load())


@R.exports("Reshape", "Flatten", shape_write=shape_values.reshape)
def write_reshape(em, node):
    xe = em.tensor(node.inputs[0])
    em.out(node, P.call("jnp.reshape", xe, _target(em, node, xe)))


@R.exports("Squeeze", "Unsqueeze", shape_write=shape_values.reshape)
def write_squeeze(em, node):
    x = em.tensor(node.inputs[0])
    out = node.outputs[0]
    if node.op == "Squeeze" and node.input(1) is None:
        return em.out(node, P.call("jnp.squeeze", x))
    rank = len(out.shape if node.op == "Unsqueeze" else node.inputs[0].shape)
    axes = tuple(axes_of(node, 1, rank))
    em.out(node, P.call("jnp.squeeze" if node.op == "Squeeze" else "jnp.expand_dims", x, axes))


@R.exports("Transpose")
def write_transpose(em, node):
    perm = node.attrs.get("perm")
    em.out(node, P.call("jnp.transpose", em.tensor(node.inputs[0]), tuple(perm) if perm is not None else None))


@R.exports("Concat", shape_write=shape_values.concat)
def write_concat(em, node):
    em.out(node, P.call("jnp.concatenate", [em.tensor(v) for v in node.inputs], axis=node.attrs["axis"]))


@R.exports("Split", check=split_sized_at_run_time)
def write_split(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 0) % input_rank(node)
    sizes = []
    for v in node.outputs:
        if v.shape is None or not isinstance(v.shape[axis], int):
            raise Unsupported("Split into parts of dynamic size")
        sizes.append(v.shape[axis])
    cuts = list(np.cumsum(sizes[:-1]).tolist())
    em.outs(node, P.call("jnp.split", em.tensor(x), cuts, axis=axis), len(node.outputs))


@R.exports("Slice", shape_write=shape_values.slice_)
def write_slice(em, node):
    items = python_slices(node, input_rank(node))
    while items and isinstance(items[-1], ast.Slice) and items[-1].lower is items[-1].upper is items[-1].step is None:
        items.pop()
    em.out(node, P.subscript(em.tensor(node.inputs[0]), ast.Tuple(items, ast.Load()) if len(items) != 1 else
                             items[0]))


@R.exports("Gather", shape_write=shape_values.gather)
def write_gather(em, node):
    data, idx = node.inputs
    axis = node.attrs.get("axis", 0)
    if data.const is not None and axis == 0 and np.asarray(data.const).ndim == 2 and \
            np.asarray(data.const).dtype.kind == "f" and idx.const is None:
        table = np.asarray(data.const)
        layer = em.layer(node, "nnx.Embed", [table.shape[0], table.shape[1]], {}, {"embedding": table})
        return em.out(node, P.call(layer, em.tensor(idx)))
    s = em.scalar(idx)
    item = P.lit(s) if s is not None and idx.const.ndim == 0 else em.tensor(idx)
    em.out(node, P.call("jnp.take", em.tensor(data), item, axis=axis % input_rank(node)))


@R.exports("GatherElements")
def write_gather_elements(em, node):
    em.out(node, P.call("jnp.take_along_axis", em.tensor(node.inputs[0]), em.tensor(node.inputs[1]),
                        axis=node.attrs.get("axis", 0)))


@R.exports("Expand")
def write_expand(em, node):
    """jnp.broadcast_to the output's sizes: a run-time one is the input's own dim of the same name, read from
    its shape, or the target's entry computed from shapes (the larger of it and the input's dim: Expand
    broadcasts both ways); JAX traces fixed sizes, so all are ints."""
    x, out = node.inputs[0], node.outputs[0]
    if out.shape is None or x.shape is None:
        raise Unsupported(f"{out.name!r} has no known rank")
    xe = em.tensor(x)
    target = node.inputs[1]
    computed = em.pylist(target) if id(target) in em.shape_values and target.shape is not None and \
        isinstance(target.shape[0], int) else None
    sizes = []
    for i, d in enumerate(out.shape):
        own = P.lit(d) if isinstance(d, int) else _own_size(d, x, xe)
        k, j = i - (len(out.shape) - len(x.shape)), i - (len(out.shape) - (target.shape[0] if computed else 0))
        if own is None and computed is not None and j >= 0:
            entry = P.subscript(computed, j)  # broadcast both ways: the larger size (an input's dim of 1 stretches)
            own = entry if k < 0 or x.shape[k] == 1 else P.call("max", P.subscript(
                ast.Attribute(xe, "shape", ast.Load()), k), entry)
        sizes.append(own)
    if None in sizes:
        raise Unsupported("a broadcast to a run-time size its input does not have (--input-shape fixes it)")
    em.out(node, P.call("jnp.broadcast_to", xe, ast.Tuple(sizes, ast.Load())))


@R.exports("Tile")
def write_tile(em, node):
    em.out(node, P.call("jnp.tile", em.tensor(node.inputs[0]), _sizes(em, node.inputs[1])))


#: ONNX pad modes jnp.pad has under the same name
PAD_MODES = {"constant", "reflect", "edge", "wrap"}


@R.exports("Pad", check=negative_pads)
def write_pad(em, node):
    x = node.inputs[0]
    rank = input_rank(node)
    pads = int_operand(node.inputs[1])
    axes = axes_of(node, 3, rank) or list(range(rank))
    widths = [(0, 0)] * rank
    for j, axis in enumerate(axes):
        widths[axis] = (pads[j], pads[j + len(axes)])
    mode = node.attrs.get("mode", "constant")
    if mode not in PAD_MODES:
        raise Unsupported(f"pad mode {mode!r}")
    kwargs = {"mode": mode} if mode != "constant" else {}
    value = node.input(2)
    if mode == "constant" and value is not None:
        fill = em.scalar(value)
        if fill is None:
            raise Unsupported("Pad with a computed fill value")
        if fill != 0:
            kwargs["constant_values"] = fill
    em.out(node, P.call("jnp.pad", em.tensor(x), widths, **kwargs))


R.add_export(("Shape",), shape_values.shape, shape_values.shape)


@R.exports("ConstantOfShape", shape_write=shape_values.fill)
def write_constant_of_shape(em, node):
    value = node.attrs.get("value")
    fill = np.asarray(value).ravel()[0].item() if value is not None else 0.0
    em.out(node, P.call("jnp.full", _sizes(em, node.inputs[0]), fill))


def _sizes(em, v) -> ast.expr:
    """A shape operand as a tuple of Python ints: a constant's, or the shape arithmetic computing it."""
    if v.const is not None:
        return P.lit(tuple(int_operand(v)))
    return P.call("tuple", em.pylist(v))


def _number(em, v) -> ast.expr:
    """A scalar operand as a Python number: a constant's, or the shape arithmetic computing it (also a size cast
    to a float: YOLOv8's anchor grid counts the feature map's columns in float32)."""
    s = em.scalar(v)
    if s is not None:
        return P.lit(s)
    if id(v) in em.shape_values:
        return em.pylist(v) if v.shape == () else P.subscript(em.pylist(v), 0)
    raise Unsupported(f"{v.name!r} is computed from data (a Range's bounds must be known when JAX traces)")


@R.exports("Range")
def write_range(em, node):
    em.out(node, P.call("jnp.arange", *(_number(em, v) for v in node.inputs)))


@R.exports("CumSum")
def write_cumsum(em, node):
    x = em.tensor(node.inputs[0])
    axis = int_operand(node.inputs[1])[0]
    if node.attrs.get("reverse"):
        x = P.call("jnp.flip", x, axis)
    total = P.call("jnp.cumsum", x, axis=axis)
    if node.attrs.get("exclusive"):
        total = P.binop(total, "-", x)
    em.out(node, P.call("jnp.flip", total, axis) if node.attrs.get("reverse") else total)


@R.exports("Trilu")
def write_trilu(em, node):
    k = em.scalar(node.input(1)) if node.input(1) is not None else 0
    if k is None:
        raise Unsupported("Trilu with a computed k")
    em.out(node, P.call("jnp.triu" if node.attrs.get("upper", 1) else "jnp.tril", em.tensor(node.inputs[0]), k=k))


@R.exports("Einsum")
def write_einsum(em, node):
    em.out(node, P.call("jnp.einsum", node.attrs["equation"].replace(" ", ""), *[em.tensor(v) for v in node.inputs]))


@R.exports("Det")
def write_det(em, node):
    em.out(node, P.call("jnp.linalg.det", em.tensor(node.inputs[0])))


R.exports("TopK")(top_k_writer("jnp", "jax.lax.top_k"))


_REDUCTIONS = {"ReduceSum": "jnp.sum", "ReduceMean": "jnp.mean", "ReduceMax": "jnp.max", "ReduceMin": "jnp.min",
               "ReduceProd": "jnp.prod"}


@R.exports(*_REDUCTIONS)
def write_reduce(em, node):
    x = node.inputs[0]
    axes = axes_of(node, 1, input_rank(node)) or None  # no axes, or an empty list: every axis
    if axes is None and node.attrs.get("noop_with_empty_axes"):
        return em.alias(node, em.tensor(x))
    em.out(node, P.call(_REDUCTIONS[node.op], em.tensor(x), axis=tuple(axes) if axes is not None else None,
                        keepdims=bool(node.attrs.get("keepdims", 1))))


@R.exports("ArgMax", "ArgMin", check=lambda node: "select_last_index" if node.attrs.get("select_last_index") else None)
def write_arg(em, node):
    em.out(node, P.call("jnp.argmax" if node.op == "ArgMax" else "jnp.argmin", em.tensor(node.inputs[0]),
                        axis=node.attrs.get("axis", 0), keepdims=bool(node.attrs.get("keepdims", 1))))


def _resize_factors(node) -> list | None:
    """Each axis's whole factor of a nearest upsampling: from constant scales, else from static sizes; a dim left
    open keeps its size only where its scale says so (two unknown sizes are not known to be equal). None where
    an axis's factor is not known."""
    x, out, scales = node.inputs[0], node.outputs[0], node.input(2)
    if x.shape is None or out.shape is None:
        return None
    rank = len(x.shape)
    if scales is not None and scales.const is not None and np.size(scales.const):
        axes = [a % rank for a in node.attrs.get("axes") or range(rank)]
        given = dict(zip(axes, np.asarray(scales.const, np.float64).ravel()))
        return [float(given.get(axis, 1.0)) for axis in range(rank)]
    if scales is not None and scales.const is None:
        return None
    factors = [o / i if isinstance(i, int) and isinstance(o, int) and i else 1.0 if i == o and i is not None
               else None for i, o in zip(x.shape, out.shape)]
    return None if None in factors else factors


def _resize_check(node) -> str | None:
    factors = _resize_factors(node)
    if factors is None:
        return "a Resize of run-time dims (JAX resizes to a shape fixed when traced: fix the input dims with " \
               "--input-shape)"
    if node.attrs.get("mode", "nearest") != "nearest" or node.attrs.get("layout", "NCHW") != "NHWC":
        return "Resize other than nearest (channels-last)"
    if any(f != int(f) or f < 1 for f in factors):
        return "nearest Resize by a factor that is not a whole number"
    rounding = (node.attrs.get("coordinate_transformation_mode", "half_pixel"),
                node.attrs.get("nearest_mode", "round_prefer_floor"))
    if rounding not in (("half_pixel", "round_prefer_floor"), ("asymmetric", "floor")):
        return "nearest Resize with coordinates that do not repeat each element"
    return None


@R.exports("Resize", check=_resize_check)
def write_resize(em, node):
    """Nearest upsampling by whole factors: each element repeated along its axes."""
    expr = em.tensor(node.inputs[0])
    for axis, factor in enumerate(_resize_factors(node)):
        if factor != 1:
            expr = P.call("jnp.repeat", expr, int(factor), axis=axis)
    em.out(node, expr)


@R.exports("GatherND", check=lambda node: "batch_dims" if node.attrs.get("batch_dims", 0) else None)
def write_gather_nd(em, node):
    """data[idx[..., 0], idx[..., 1], ...]: the last axis of the indices addresses the leading axes of data."""
    data, idx = node.inputs
    if idx.shape is None or not isinstance(idx.shape[-1], int):
        raise Unsupported("GatherND needs the index depth")
    ie = em.tensor(idx)
    parts = [P.subscript(ie, ast.Tuple([ast.Constant(Ellipsis), P.lit(i)], ast.Load())) for i in range(idx.shape[-1])]
    em.out(node, P.subscript(em.tensor(data), ast.Tuple(parts, ast.Load())))


#: ScatterND's reduction -> the method of jax's `.at[...]` update that applies it
_SCATTER_METHODS = {"none": "set", "add": "add", "mul": "multiply", "max": "max", "min": "min"}


@R.exports("ScatterND", check=lambda node: None if node.attrs.get("reduction", "none") in _SCATTER_METHODS
           else f"reduction {node.attrs.get('reduction')!r}")
def write_scatter_nd(em, node):
    """data.at[idx[..., 0], idx[..., 1], ...].set(updates): the indices' last axis addresses data's leading axes."""
    data, idx, updates = node.inputs
    if idx.shape is None or not isinstance(idx.shape[-1], int):
        raise Unsupported("ScatterND needs the index depth")
    ie = em.tensor(idx)
    parts = [P.subscript(ie, ast.Tuple([ast.Constant(Ellipsis), P.lit(i)], ast.Load())) for i in range(idx.shape[-1])]
    at = P.subscript(ast.Attribute(em.tensor(data), "at", ast.Load()), ast.Tuple(parts, ast.Load()))
    em.out(node, P.method(at, _SCATTER_METHODS[node.attrs.get("reduction", "none")], em.tensor(updates)))
