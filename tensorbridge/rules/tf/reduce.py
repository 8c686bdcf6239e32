"""TensorFlow GraphDef ops -> IR: reductions and arg-reductions.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.rules.tf.base import (
    attr,
    const_data,
    tf_op,
)


def _reduce(imp, n, ins, op):
    axes = const_data(ins[1], "reduction axes").astype(np.int64).reshape(-1)
    return imp.emit(op, [ins[0], imp.const(axes)], {"keepdims": int(bool(attr(n, "keep_dims", False)))})


@tf_op("Mean", produces="ReduceMean")
def read_mean(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceMean")


@tf_op("Sum", produces="ReduceSum")
def read_sum(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceSum")


@tf_op("Max", produces="ReduceMax")
def read_max(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceMax")


@tf_op("Min", produces="ReduceMin")
def read_min(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceMin")


@tf_op("Prod", produces="ReduceProd")
def read_prod(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceProd")


@tf_op("ArgMax", produces="ArgMax")
def read_argmax(imp, n, ins):
    axis = int(const_data(ins[1], "the axis"))
    return imp.emit("ArgMax", [ins[0]], {"axis": axis, "keepdims": 0})
