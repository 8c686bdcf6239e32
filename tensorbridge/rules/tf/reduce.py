"""TensorFlow GraphDef ops -> IR: reductions and arg-reductions.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import as_int64
from tensorbridge.rules.tf.base import (
    attr,
    const_data,
    dtype_attr,
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


@tf_op("Max", "Any", produces="ReduceMax")
def read_max(imp, n, ins):
    """Any over booleans is their largest."""
    return _reduce(imp, n, ins, "ReduceMax")


@tf_op("Min", "All", produces="ReduceMin")
def read_min(imp, n, ins):
    """All over booleans is their smallest."""
    return _reduce(imp, n, ins, "ReduceMin")


@tf_op("Prod", produces="ReduceProd")
def read_prod(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceProd")


@tf_op("ArgMax", "ArgMin", produces=("ArgMax", "ArgMin"))
def read_argmax(imp, n, ins):
    axis = int(const_data(ins[1], "the axis"))
    index = imp.emit(n.op, [ins[0]], {"axis": axis, "keepdims": 0}, suffix="i64")
    return tf_semantics.cast_to(imp, index, dtype_attr(n, "output_type", np.int64))


@tf_op("TopKV2", produces="TopK")
def read_topkv2(imp, n, ins):
    return tf_semantics.top_k(imp, ins[0], ins[1], dtype_attr(n, "index_type", np.int32))


@tf_op("Cumsum", "Cumprod", produces=("CumSum", "CumProd"))
def read_cumulative(imp, n, ins):
    attrs = {"exclusive": int(bool(attr(n, "exclusive", False))), "reverse": int(bool(attr(n, "reverse", False)))}
    return imp.emit("CumSum" if n.op == "Cumsum" else "CumProd", [ins[0], as_int64(imp, ins[1], "axis")], attrs)


@tf_op("Einsum", produces="Einsum")
def read_einsum(imp, n, ins):
    return imp.emit("Einsum", list(ins), {"equation": attr(n, "equation")})


@tf_op("MatrixDeterminant", produces="Det")
def read_matrixdeterminant(imp, n, ins):
    return imp.emit("Det", ins[:1])


@tf_op("SegmentSum", "SegmentProd", "SegmentMax", "SegmentMin", "UnsortedSegmentSum", "UnsortedSegmentProd",
       "UnsortedSegmentMax", "UnsortedSegmentMin", produces="ScatterND")
def read_segment_reduction(imp, n, ins):
    kind = n.op.removeprefix("Unsorted").removeprefix("Segment").lower()
    return tf_semantics.segment_reduce(imp, ins[0], ins[1], ins[2] if len(ins) > 2 else None, kind)
