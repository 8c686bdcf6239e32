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
from tensorbridge.rules.core import ImportRule, Registry
from tensorbridge.rules.tensorflow_semantics import constant as const_data

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


def dtype_attr(n, key: str, default=np.float32) -> np.dtype:
    """A node's dtype attribute (`T`, `out_type`, `output_type`) as a NumPy dtype."""
    import tensorflow as tf

    return np.dtype(tf.as_dtype(n.attr[key].type).as_numpy_dtype) if key in n.attr else np.dtype(default)


def require_nhwc(n):
    fmt = attr(n, "data_format", "NHWC")
    if fmt not in ("NHWC", "NWC", "NDHWC"):
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

