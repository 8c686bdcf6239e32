"""TFLite <-> IR: reductions and arg-reductions.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.rules.tflite.base import R, as_int64, builtin, litert_arithmetic
from tensorbridge.rules.tflite.kernel import (
    Rule,
)

_BUILTIN_REDUCTIONS = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin",
                       "REDUCE_PROD": "ReduceProd"}


@builtin("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", produces=("ReduceMean", "ReduceSum", "ReduceMax",
                                                                             "ReduceMin", "ReduceProd"))
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
    out_t = imp.subgraph.Tensors(int(imp.op.OutputsAsNumpy()[0]))
    return imp.emit("Cast", [y], {"to": dtypes.name(imp.tensor_dtype(out_t))})
