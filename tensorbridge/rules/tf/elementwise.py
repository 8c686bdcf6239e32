"""TensorFlow GraphDef ops -> IR: arithmetic, activations, casts, selects.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules.ir_spellings import (
    atan2,
    bitcast,
    divide_no_nan,
    erfc,
    expm1,
    floor_divide,
    log1p,
    not_equal,
)
from tensorbridge.rules.tf.base import (
    attr,
    dtype_attr,
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
    return imp.emit("Cast", [ins[0]], {"to": dtypes.name(dtype_attr(n, "DstT"))})


@tf_op("Bitcast", produces="BitCast")
def read_bitcast(imp, n, ins):
    return bitcast(imp, ins[0], dtype_attr(n, "type"), f"{n.name}: Bitcast")


@tf_op("FloorDiv", produces="Div")
def read_floordiv(imp, n, ins):
    return floor_divide(imp, *ins[:2])


@tf_op("DivNoNan", produces="Where")
def read_div_no_nan(imp, n, ins):
    return divide_no_nan(imp, *ins[:2])


@tf_op("NotEqual", produces="Not")
def read_notequal(imp, n, ins):
    return not_equal(imp, *ins[:2])


@tf_op("Atan2", produces=())
def read_atan2(imp, n, ins):
    return atan2(imp, *ins[:2])


@tf_op("AddN", produces="Sum")
def read_addn(imp, n, ins):
    return imp.emit("Sum", list(ins))


@tf_op("ClipByValue", produces="Clip")
def read_clipbyvalue(imp, n, ins):
    return imp.emit("Clip", ins[:3])


@tf_op("Expm1", produces="Sub")
def read_expm1(imp, n, ins):
    return expm1(imp, ins[0])


@tf_op("Log1p", produces="Log")
def read_log1p(imp, n, ins):
    return log1p(imp, ins[0])


@tf_op("Erfc", produces="Sub")
def read_erfc(imp, n, ins):
    return erfc(imp, ins[0])


@tf_op("OnesLike", produces="ConstantOfShape")
def read_oneslike(imp, n, ins):
    shape = imp.emit("Shape", ins[:1], suffix="shape")
    return imp.emit("ConstantOfShape", [shape], {"value": np.ones(1, ins[0].dtype or np.float32)})


@tf_op("LeftShift", "RightShift", produces="BitShift")
def read_shift(imp, n, ins):
    return imp.emit("BitShift", ins[:2], {"direction": "LEFT" if n.op == "LeftShift" else "RIGHT"})


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
tf_row("Reciprocal Inv", "Reciprocal", arity=1)
tf_row("Softplus", "Softplus", arity=1)
tf_row("Elu", "Elu", arity=1)
tf_row("Selu", "Selu", arity=1)
tf_row("LogicalNot", "Not", arity=1)
tf_row("Sin", "Sin", arity=1)
tf_row("Cos", "Cos", arity=1)
tf_row("Tan", "Tan", arity=1)
tf_row("Asin", "Asin", arity=1)
tf_row("Acos", "Acos", arity=1)
tf_row("Atan", "Atan", arity=1)
tf_row("Sinh", "Sinh", arity=1)
tf_row("Cosh", "Cosh", arity=1)
tf_row("Asinh", "Asinh", arity=1)
tf_row("Acosh", "Acosh", arity=1)
tf_row("Atanh", "Atanh", arity=1)
tf_row("Softsign", "Softsign", arity=1)
tf_row("IsNan", "IsNaN", arity=1)
tf_row("IsInf", "IsInf", arity=1)
tf_row("Invert", "BitwiseNot", arity=1)
tf_row("BitwiseAnd", "BitwiseAnd", arity=2)
tf_row("BitwiseOr", "BitwiseOr", arity=2)
tf_row("BitwiseXor", "BitwiseXor", arity=2)
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


@tf_op("TruncateMod", "Mod", produces="Mod")
def read_truncatemod(imp, n, ins):
    """The remainder taking the dividend's sign (C's fmod)."""
    return imp.emit("Mod", ins[:2], {"fmod": 1})


@tf_op("TruncateDiv", produces="Div")
def read_truncatediv(imp, n, ins):
    if ins[0].dtype is None or ins[0].dtype.kind not in "iu":
        raise ModelError(f"{n.name}: TruncateDiv of {ins[0].dtype} values is not supported")
    return imp.emit("Div", ins[:2])  # the IR's integer division truncates


@tf_op("EnsureShape", "Identity", "IdentityN", "PreventGradient", "Snapshot", "StopGradient", produces=())
def read_passthrough(imp, n, ins):
    """Ops that only forward their inputs at inference time."""
    return list(ins)
