"""TensorFlow GraphDef ops -> IR: arithmetic, activations, casts, selects.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.rules.tf.base import (
    attr,
    tf_op,
    tf_row,
)


@tf_op("Relu6", produces="Clip")
def read_relu6(imp, n, ins):
    return imp.emit("Clip", [ins[0], imp.const(0.0, np.float32), imp.const(6.0, np.float32)])


@tf_op("LeakyRelu", produces="LeakyRelu")
def read_leakyrelu(imp, n, ins):
    return imp.emit("LeakyRelu", [ins[0]], {"alpha": float(attr(n, "alpha", 0.2))})


@tf_op("Rsqrt", produces="Reciprocal")
def read_rsqrt(imp, n, ins):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", ins[:1], suffix="sqrt")])


@tf_op("Square", produces="Mul")
def read_square(imp, n, ins):
    return imp.emit("Mul", [ins[0], ins[0]])


@tf_op("SquaredDifference", produces="Mul")
def read_squareddifference(imp, n, ins):
    d = imp.emit("Sub", ins[:2], suffix="diff")
    return imp.emit("Mul", [d, d])


@tf_op("Cast", produces="Cast")
def read_cast(imp, n, ins):
    import tensorflow as tf


    dt = tf.as_dtype(n.attr["DstT"].type).as_numpy_dtype
    return imp.emit("Cast", [ins[0]], {"to": dtypes.name(np.dtype(dt))})


@tf_op("Select", "SelectV2", produces="Where")
def read_select(imp, n, ins):
    return imp.emit("Where", ins[:3])


@tf_op("ZerosLike", produces="Mul")
def read_zeroslike(imp, n, ins):
    return imp.emit("Mul", [ins[0], imp.const(0, ins[0].dtype or np.float32)])

# -- rows: TensorFlow ops that are one IR op ---------------------------------------------------------
tf_row("Relu", "Relu", arity=1)
tf_row("Sigmoid", "Sigmoid", arity=1)
tf_row("Tanh", "Tanh", arity=1)
tf_row("Exp", "Exp", arity=1)
tf_row("Log", "Log", arity=1)
tf_row("Sqrt", "Sqrt", arity=1)
tf_row("Abs", "Abs", arity=1)
tf_row("Neg", "Neg", arity=1)
tf_row("Erf", "Erf", arity=1)
tf_row("Floor", "Floor", arity=1)
tf_row("Ceil", "Ceil", arity=1)
tf_row("Round", "Round", arity=1)
tf_row("Sign", "Sign", arity=1)
tf_row("Reciprocal", "Reciprocal", arity=1)
tf_row("Softplus", "Softplus", arity=1)
tf_row("Elu", "Elu", arity=1)
tf_row("Selu", "Selu", arity=1)
tf_row("LogicalNot", "Not", arity=1)
tf_row("Sin", "Sin", arity=1)
tf_row("Cos", "Cos", arity=1)
tf_row("Add AddV2 BiasAdd", "Add", arity=2)
tf_row("Sub", "Sub", arity=2)
tf_row("Mul", "Mul", arity=2)
tf_row("RealDiv Div", "Div", arity=2)
tf_row("Maximum", "Max", arity=2)
tf_row("Minimum", "Min", arity=2)
tf_row("Pow", "Pow", arity=2)
tf_row("Less", "Less", arity=2)
tf_row("Greater", "Greater", arity=2)
tf_row("LessEqual", "LessOrEqual", arity=2)
tf_row("GreaterEqual", "GreaterOrEqual", arity=2)
tf_row("Equal", "Equal", arity=2)
tf_row("LogicalAnd", "And", arity=2)
tf_row("LogicalOr", "Or", arity=2)
tf_row("FloorMod", "Mod", arity=2)


@tf_op("EnsureShape", "Identity", "IdentityN", "PreventGradient", "Snapshot", "StopGradient", produces=())
def read_passthrough(imp, n, ins):
    """Ops that only forward their inputs at inference time."""
    return list(ins)
