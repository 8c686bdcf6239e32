"""Keras code for values computed when the model runs: a tensor's shape, ranges and filled tensors of a computed
size, the indices of non-zero elements and what they select, unique elements.

A functional Keras graph is built on symbolic tensors whose unknown dims have no value, so Shape, Range,
ConstantOfShape and Unique run in a layer class of their own (backends/keras/own_layers.py), where `call` sees
the values; NonZero and Compress have a symbolic form (`ops.nonzero`) and need none.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.ir import dtypes
from tensorbridge.ops.shape import vector_condition_blocker
from tensorbridge.rules.keras.base import R


def _scalar(em, v):
    """A Python number for a constant `v`, else a rank-0 tensor of it (ONNX lets a scalar operand be a
    one-element vector)."""
    number = em.scalar(v)
    return P.lit(number) if number is not None else P.call("ops.reshape", em.tensor(v), ())


@R.exports("Shape")
def write_shape(em, node):
    em.in_own_layer(node, _write_shape)


def _write_shape(em, node):
    """`ops.shape` gives a static dim as an int and an unknown one as a scalar tensor: stacked, cast to int64."""
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    dims = P.call("ops.shape", em.tensor(node.inputs[0]))
    if start or end is not None:
        dims = P.subscript(dims, P.slice_(start or None, end))
    em.out(node, P.call("ops.cast", P.call("ops.convert_to_tensor", dims, dtype="int32"), "int64"))


@R.exports("Range")
def write_range(em, node):
    em.in_own_layer(node, lambda em, node: em.out(node, P.call(
        "ops.arange", *(_scalar(em, v) for v in node.inputs), dtype=dtypes.name(node.outputs[0].dtype))))


@R.exports("ConstantOfShape")
def write_constant_of_shape(em, node):
    value = np.zeros(1, np.float32) if node.attrs.get("value") is None else np.asarray(node.attrs["value"])
    em.in_own_layer(node, lambda em, node: em.out(node, P.call(
        "ops.full", em.tensor(node.inputs[0]), value.ravel()[0].item(), dtype=dtypes.name(value.dtype))))


@R.exports("NonZero")
def write_non_zero(em, node):
    """[rank, count] int64 indices, as ONNX orders them (ops.nonzero gives one index vector per axis)."""
    em.out(node, P.call("ops.cast", P.call("ops.stack", P.call("ops.nonzero", em.tensor(node.inputs[0]))), "int64"))


@R.exports("Compress", check=vector_condition_blocker)
def write_compress(em, node):
    """The slices along `axis` (of the flattened input without one) where the condition holds."""
    x, axis = em.tensor(node.inputs[0]), node.attrs.get("axis")
    chosen = P.subscript(P.call("ops.nonzero", em.tensor(node.inputs[1])), 0)
    if axis is None:
        em.out(node, P.call("ops.take", P.call("ops.reshape", x, (-1,)), chosen))
    else:
        em.out(node, P.call("ops.take", x, chosen, axis=axis))


@R.exports("Unique")
def write_unique(em, node):
    em.in_own_layer(node, _write_unique)


def _write_unique(em, node):
    """`ops.unique` with every output ONNX has (first-occurrence order where unsorted), the indices as int64."""
    found = P.call("ops.unique", em.tensor(node.inputs[0]), sorted=bool(node.attrs.get("sorted", 1)),
                   return_index=True, return_inverse=True, return_counts=True, axis=node.attrs.get("axis"))
    parts = [em.namer.name(f"{node.name}_{tag}", tag) for tag in ("values", "first", "inverse", "counts")]
    em.body.append(P.assign(parts, found))
    em.alias(node, P.name(parts[0]))
    for index, part in enumerate(parts[1:], start=1):
        if index < len(node.outputs):
            flat = P.call("ops.reshape", P.name(part), (-1,))
            em.out(node, P.call("ops.cast", flat, "int64"), index)
