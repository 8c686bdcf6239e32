"""TFLite <-> IR: reductions and arg-reductions.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import as_int64
from tensorbridge.rules.tflite.base import R, builtin, litert_arithmetic, output_dtype
from tensorbridge.rules.tflite.kernel import (
    Rule,
)

#: REDUCE_ANY / REDUCE_ALL over booleans are the largest / smallest
_BUILTIN_REDUCTIONS = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin",
                       "REDUCE_PROD": "ReduceProd", "REDUCE_ANY": "ReduceMax", "REDUCE_ALL": "ReduceMin"}


@builtin(*_BUILTIN_REDUCTIONS, produces=("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"))
def read_reduce(imp, ins, opts):
    x, axes = ins
    axes = as_int64(imp, axes, "axes")
    if axes.shape == ():
        axes = imp.emit("Reshape", [axes, imp.const([1], np.int64)], suffix="axes1")
    attrs = {"keepdims": int(bool(opts.KeepDims()))}
    return imp.emit(_BUILTIN_REDUCTIONS[imp.op_name], [x, axes],
                    {**attrs, **litert_arithmetic(imp)} if imp.op_name == "MEAN" else attrs)


def write_reduce(ctx):
    node = ctx.node
    rank = len(node.inputs[0].shape)
    axes = ctx.const(1) if node.input(1) is not None else node.attrs.get("axes")
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in np.asarray(axes).ravel()]
    keep = bool(node.attrs.get("keepdims", 1))
    return [ctx.x(0), ctx.index_const("axes", axes)], ("ReducerOptions", {"KeepDims": keep})


R.add_export(("ReduceMean",), Rule("MEAN", write_reduce))
R.add_export(("ReduceMax",), Rule("REDUCE_MAX", write_reduce, keeps_quant=True))


@builtin("ARG_MAX", "ARG_MIN", produces=("ArgMax", "ArgMin"))
def read_arg(imp, ins, opts):
    x, axis = ins
    a = int(np.asarray(axis.const).ravel()[0])
    y = imp.emit("ArgMax" if imp.op_name == "ARG_MAX" else "ArgMin", [x], {"axis": a, "keepdims": 0}, suffix="i64")
    return imp.emit("Cast", [y], {"to": dtypes.name(output_dtype(imp))})


@builtin("TOPK_V2", produces="TopK")
def read_top_k(imp, ins, opts):
    return tf_semantics.top_k(imp, ins[0], ins[1], output_dtype(imp, 1))


@builtin("CUMSUM", produces="CumSum")
def read_cumsum(imp, ins, opts):
    x, axis = ins
    attrs = {"exclusive": int(bool(opts.Exclusive())), "reverse": int(bool(opts.Reverse()))} if opts else {}
    return imp.emit("CumSum", [x, as_int64(imp, axis, "axis")], attrs)


@builtin("SEGMENT_SUM", "UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX",
         "UNSORTED_SEGMENT_MIN", produces="ScatterND")
def read_segment_reduction(imp, ins, opts):
    kind = imp.op_name.rsplit("_", 1)[1].lower()
    return tf_semantics.segment_reduce(imp, ins[0], ins[1], ins[2] if len(ins) > 2 else None, kind)
