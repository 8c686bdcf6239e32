"""Type inference from the catalogue: rule combinators for the op tables, and `infer_node`.

A shape rule takes the node's input values and its attributes (defaults filled in) and
returns one `(dtype, shape)` pair per output; `None` in either place means unknown. An op
without a rule (or whose rule cannot decide) is probed: run by the reference interpreter when
all its inputs are small constants, which is exact.

An *elements* rule tracks the entries (ints or symbolic dim names) of the small integer
vectors computed from shapes (`Shape` -> `Gather` -> `Concat` -> `Reshape`), so a Reshape
whose target is computed from a dynamic shape still gets a known output shape. It takes the
node and the known entries of each input (None where unknown) and returns the output's.
"""

from __future__ import annotations

import logging

import numpy as np

from tensorbridge.ir import dtypes, shapes

log = logging.getLogger(__name__)
_PROBE_LIMIT = 1 << 20  # total input elements; larger inputs are not probed


def same_as(i: int = 0):
    def rule(inputs, attrs):
        v = inputs[i]
        return [(v.dtype, v.shape)]
    return rule


def broadcast_rule(out_dtype=None, dtype_of: int = 0):
    """Output shape broadcasts all inputs; dtype is input `dtype_of`'s unless fixed."""
    def rule(inputs, attrs):
        present = [v for v in inputs if v is not None]
        dt = dtypes.dtype(out_dtype) if out_dtype else inputs[dtype_of].dtype
        return [(dt, shapes.broadcast(*[v.shape for v in present]))]
    return rule


def dtype_from_attr(attr: str, shape_of: int = 0):
    def rule(inputs, attrs):
        return [(dtypes.dtype(attrs[attr]), inputs[shape_of].shape)]
    return rule


def const_ints(value) -> list[int] | None:
    """The constant integer data of a value, if known at conversion time."""
    if value is None or value.const is None:
        return None
    return [int(x) for x in np.asarray(value.const).ravel()]


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def elements(v) -> list | None:
    """Known entries (int, symbolic name or None) of a small integer vector, e.g. a shape."""
    if v is None:
        return None
    if v.const is not None:
        arr = np.asarray(v.const)
        return [int(x) for x in arr.ravel()] if arr.dtype.kind in "iu" and arr.size <= 16 else None
    return v.meta.get("elements")


def infer_node(node) -> None:
    """Fill the unknown output types (or unknown dims) of one node from its inputs' types."""
    from tensorbridge.ops.schema import get

    schema = get(node.op)
    if schema is not None and schema.elements is not None and node.outputs:
        try:
            result = schema.elements(node, [elements(v) for v in node.inputs])
        except Exception as e:  # noqa: BLE001 - best effort, as shapes are; the checker reports a malformed node
            log.debug("element rule of %s failed on %s: %s", node.op, node.name, e)
            result = None
        if result is not None and len(result) <= 16:
            node.outputs[0].meta["elements"] = result
    if all(v.dtype is not None and v.shape is not None and None not in v.shape for v in node.outputs):
        return
    for v, (dt, shape) in zip(node.outputs, _infer(node, schema)):
        if v.dtype is None and dt is not None:
            v.dtype = np.dtype(dt)
        if shape is not None:
            v.shape = _merge(v.shape, shapes.normalize(shape))


def _merge(known, inferred):
    """Keep what is known; take the inferred dims where the known ones are missing."""
    if known is None or len(known) != len(inferred):
        return inferred if known is None else known
    return tuple(k if k is not None else i for k, i in zip(known, inferred))


def _infer(node, schema):
    if schema is None:
        return []
    try:
        attrs = schema.attr_values(node.attrs, node.name)
    except Exception:  # noqa: BLE001 - inference is best effort; the checker reports bad attrs
        return []
    if schema.infer is not None:
        try:
            result = schema.infer(list(node.inputs), attrs)
            if result and all(r[0] is not None and r[1] is not None for r in result[:len(node.outputs)]):
                return result
            return _probe(node) or result
        except Exception as e:  # noqa: BLE001
            log.debug("shape rule of %s failed on %s: %s", node.op, node.name, e)
    return _probe(node)


def _probe(node):
    """Types from running the node on its constant inputs; never for ops the catalogue marks not foldable
    (control flow, randomness), whose run may not end or may differ."""
    from tensorbridge.ops.schema import get
    from tensorbridge.reference.interpreter import run_node

    schema = get(node.op)
    if schema is None or not schema.foldable:
        return []
    args = []
    for v in node.inputs:
        if v is None:
            args.append(None)
        elif v.const is not None:
            args.append(v.const)
        else:
            return []  # data-dependent shapes cannot be probed with made-up data
    if sum(a.size for a in args if a is not None) > _PROBE_LIMIT:
        return []
    try:
        outs = run_node(node, args)
    except Exception:  # noqa: BLE001
        return []
    return [(o.dtype, o.shape) if o is not None else (None, None) for o in outs]
