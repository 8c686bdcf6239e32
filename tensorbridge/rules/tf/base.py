"""The TensorFlow (SavedModel / frozen GraphDef) registry object and what its converters share.

Import only: a SavedModel's frozen GraphDef is read op by op (`frontends/tf/`); TensorFlow models
are written as Keras code or TFLite instead. Ops that are one IR op are rows (`tf_row`); the rest
are converters taking (importer, node_def, input values). Data stays channels-last
(`layout="NHWC"`); filters are permuted once at import.
"""

from __future__ import annotations

import functools

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.passes.fold_constants import fold_value
from tensorbridge.rules.core import ImportRule, Registry

R = Registry("tf")
tf_op = functools.partial(R.imports, kind="op")


def tf_row(names: str, ir_op: str, arity: int) -> None:
    """TensorFlow op(s) `names` are the IR op `ir_op` over their first `arity` inputs."""
    def convert(imp, n, ins):
        return imp.emit(ir_op, ins[:arity])
    R.add_import(ImportRule("op", tuple(names.split()), (ir_op,), convert=convert, ir_op=ir_op))


NHWC = "NHWC"


def attr(n, key, default=None):
    if key not in n.attr:
        return default
    a = n.attr[key]
    kind = a.WhichOneof("value")
    if kind == "list":
        return list(a.list.i) or [s.decode() for s in a.list.s] or list(a.list.f)
    if kind == "s":
        return a.s.decode()
    return getattr(a, kind)


def const_data(v, what):
    """A operand that must be known when the graph is read (computed now from constants and static shapes)."""
    data = fold_value(v)
    if data is None:
        raise ModelError(f"{what} must be a constant")
    return np.asarray(data)


def require_nhwc(n):
    fmt = attr(n, "data_format", "NHWC")
    if fmt not in ("NHWC", "NWC"):
        raise ModelError(f"{n.name}: data_format {fmt} is not supported")


def padding_attrs(n, attrs):
    pad = attr(n, "padding", "VALID")
    if pad == "SAME":
        attrs["auto_pad"] = "SAME_UPPER"
    elif pad == "EXPLICIT":
        p = attr(n, "explicit_paddings")
        attrs["pads"] = [p[2], p[4], p[3], p[5]]
    return attrs


def filter_weight(imp, v, perm, tag):
    arr = const_data(v, "the filter")
    return imp.graph.add_constant(f"{v.name}.{tag}", np.ascontiguousarray(np.transpose(arr, perm)))


def as_int64(imp, v, tag):
    if v.const is not None:
        return imp.const(np.asarray(v.const).astype(np.int64))
    return imp.emit("Cast", [v], {"to": "int64"}, suffix=tag)
