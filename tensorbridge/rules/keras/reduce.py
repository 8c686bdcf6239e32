"""Keras 3 <-> IR: reductions.

Each IR op's import converters (layers and `keras.ops` calls -> IR) and export writer (IR -> Keras
code) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ops.reduce import ACCUMULATING
from tensorbridge.rules.keras.base import (
    R,
    axes_list,
    int_operand,
    keras_op,
    result_dtype,
)

_OP_REDUCTIONS = {"Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin",
                  "Prod": "ReduceProd"}


@keras_op("Mean", "Sum", "Max", "Min", "Prod", produces=("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                                         "ReduceProd"))
def read_op_reduce(imp, op, args, kwargs, node):
    """A sum, product or mean is taken in its result's type (Keras counts a bool mask's trues in int32 and
    averages integers in floats), where the IR's reduction keeps its operand's."""
    if getattr(op, "initial", None) is not None:
        raise ModelError(f"{op.name}: ops.{op.name} with initial= is not supported")
    x = args[0]
    axes = axes_list(op.axis, len(x.shape if x.shape is not None else node.input_tensors[0].shape))
    ir_op, result = _OP_REDUCTIONS[type(op).__name__], result_dtype(node)
    if ir_op in ACCUMULATING and x.dtype is not None and x.dtype != result:
        x = imp.emit("Cast", [x], {"to": dtypes.name(result)}, suffix="operand")
    return imp.emit(ir_op, [x, imp.const(axes, np.int64)], {"keepdims": int(bool(op.keepdims))})


_KERAS_REDUCTIONS = {"ReduceMean": "ops.mean", "ReduceSum": "ops.sum", "ReduceMax": "ops.max", "ReduceMin": "ops.min",
                     "ReduceProd": "ops.prod"}


@R.exports("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")
def write_reduce(em, node):
    axes = int_operand(node.input(1)) if node.input(1) is not None else []
    kw = {"keepdims": bool(node.attrs.get("keepdims", 1))}
    if not axes and node.attrs.get("noop_with_empty_axes"):
        return em.alias(node, em.tensor(node.inputs[0]))
    if axes:  # none or empty: every axis
        kw["axis"] = tuple(axes)
    em.out(node, P.call(_KERAS_REDUCTIONS[node.op], em.tensor(node.inputs[0]), **kw))
