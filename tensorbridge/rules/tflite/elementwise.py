"""TFLite <-> IR: arithmetic and activations.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.rules.ir_spellings import atan2, bitcast, floor_divide, not_equal
from tensorbridge.rules.tflite.base import R, builtin, builtin_row, litert_arithmetic, output_dtype
from tensorbridge.rules.tflite.kernel import (
    NotInteger,
    Rule,
    activation,
    const_dq,
    params,
)

_BUILTIN_ARITHMETIC = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div"}


@builtin("ADD", "SUB", "MUL", "DIV", produces=("Add", "Sub", "Mul", "Div"))
def read_binary(imp, ins, opts):
    y = imp.emit(_BUILTIN_ARITHMETIC[imp.op_name], ins, litert_arithmetic(imp) if imp.op_name == "ADD" else None)
    return imp.fused(y, opts.FusedActivationFunction() if opts is not None else 0)


def _int8_operand(ctx, i: int) -> int:
    dq = const_dq(ctx.node.inputs[i]) if ctx.integer else None
    if dq is not None:
        return ctx.lw.constant(dq.inputs[0].name, np.asarray(dq.inputs[0].const), params(dq))
    return ctx.x(i)


def write_binary(table: str):
    def write(ctx):
        return [_int8_operand(ctx, 0), _int8_operand(ctx, 1)], (table, {"FusedActivationFunction": ctx.activation()})
    return write


R.add_export(("Add",), Rule("ADD", write_binary("AddOptions"), data=None, fuses=True))
R.add_export(("Sub",), Rule("SUB", write_binary("SubOptions"), data=None, fuses=True))
R.add_export(("Mul",), Rule("MUL", write_binary("MulOptions"), data=None, fuses=True))


@builtin("RELU6", produces="Clip")
def read_relu6(imp, ins, opts):
    return imp.emit("Clip", [ins[0], imp.const(0.0), imp.const(6.0)])


@builtin("RELU_N1_TO_1", produces="Clip")
def read_relu_n1_to_1(imp, ins, opts):
    return imp.emit("Clip", [ins[0], imp.const(-1.0), imp.const(1.0)])


def write_activation(ctx):
    ctx.builtin = activation(ctx.node)
    if ctx.builtin is None:
        raise NotInteger("Clip is written only as ReLU, ReLU6 or ReLU(-1, 1)")
    return [ctx.x(0)], None


R.add_export(("Relu",), Rule("RELU", write_activation))
R.add_export(("Clip",), Rule("RELU6", write_activation))


def write_unary(ctx):
    return [ctx.x(0)], None


R.add_export(("Sigmoid",), Rule("LOGISTIC", write_unary, fixed_out=(1 / 256, -128)))
R.add_export(("Tanh",), Rule("TANH", write_unary, fixed_out=(1 / 128, 0)))
R.add_export(("HardSwish",), Rule("HARD_SWISH", write_unary))


@builtin("LEAKY_RELU", produces="LeakyRelu")
def read_leaky_relu(imp, ins, opts):
    return imp.emit("LeakyRelu", [ins[0]], {"alpha": float(opts.Alpha())})


def write_leaky_relu(ctx):
    return [ctx.x(0)], ("LeakyReluOptions", {"Alpha": float(ctx.node.attrs.get("alpha", 0.01))})


R.add_export(("LeakyRelu",), Rule("LEAKY_RELU", write_leaky_relu))


@builtin("GELU", produces="Gelu")
def read_gelu(imp, ins, opts):
    return imp.emit("Gelu", [ins[0]], {"approximate": "tanh" if opts is not None and opts.Approximate() else "none"})


@builtin("RSQRT", produces="Reciprocal")
def read_rsqrt(imp, ins, opts):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", ins, suffix="sqrt")])


@builtin("SQUARE", produces="Mul")
def read_square(imp, ins, opts):
    return imp.emit("Mul", [ins[0], ins[0]])


@builtin("SQUARED_DIFFERENCE", produces="Mul")
def read_squared_difference(imp, ins, opts):
    d = imp.emit("Sub", ins, suffix="diff")
    return imp.emit("Mul", [d, d])


@builtin("FLOOR_DIV", produces="Div")
def read_floor_div(imp, ins, opts):
    return floor_divide(imp, *ins)


@builtin("NOT_EQUAL", produces="Not")
def read_not_equal(imp, ins, opts):
    return not_equal(imp, *ins)


@builtin("RELU_0_TO_1", produces="Clip")
def read_relu_0_to_1(imp, ins, opts):
    return imp.emit("Clip", [ins[0], imp.const(0.0), imp.const(1.0)])


@builtin("ATAN2", produces=())
def read_atan2(imp, ins, opts):
    return atan2(imp, *ins)


@builtin("ADD_N", produces="Sum")
def read_add_n(imp, ins, opts):
    return imp.emit("Sum", ins)


@builtin("RIGHT_SHIFT", produces="BitShift")
def read_right_shift(imp, ins, opts):
    return imp.emit("BitShift", ins, {"direction": "RIGHT"})


@builtin("BITCAST", produces="BitCast")
def read_bitcast(imp, ins, opts):
    return bitcast(imp, ins[0], output_dtype(imp), "BITCAST")


@builtin("CAST", produces="Cast")
def read_cast(imp, ins, opts):
    return imp.emit("Cast", [ins[0]], {"to": dtypes.name(output_dtype(imp))})


@builtin("ZEROS_LIKE", produces="Mul")
def read_zeros_like(imp, ins, opts):
    return imp.emit("Mul", [ins[0], imp.const(0, ins[0].dtype or np.float32)])


# -- rows: builtin operators that are one IR op ---------------------------------------------------
builtin_row("LOGISTIC", "Sigmoid")
builtin_row("TANH", "Tanh")
builtin_row("RELU", "Relu")
builtin_row("EXP", "Exp")
builtin_row("LOG", "Log")
builtin_row("SQRT", "Sqrt")
builtin_row("ABS", "Abs")
builtin_row("NEG", "Neg")
builtin_row("SIN", "Sin")
builtin_row("COS", "Cos")
builtin_row("FLOOR", "Floor")
builtin_row("CEIL", "Ceil")
builtin_row("ROUND", "Round")
builtin_row("SIGN", "Sign")
builtin_row("HARD_SWISH", "HardSwish")
builtin_row("MAXIMUM", "Max")
builtin_row("MINIMUM", "Min")
builtin_row("POW", "Pow")
builtin_row("LESS", "Less")
builtin_row("LESS_EQUAL", "LessOrEqual")
builtin_row("GREATER", "Greater")
builtin_row("GREATER_EQUAL", "GreaterOrEqual")
builtin_row("EQUAL", "Equal")
builtin_row("LOGICAL_AND", "And")
builtin_row("LOGICAL_OR", "Or")
builtin_row("LOGICAL_NOT", "Not")
builtin_row("SELECT SELECT_V2", "Where")
builtin_row("PRELU", "PRelu")
builtin_row("FLOOR_MOD", "Mod")
builtin_row("ELU", "Elu")
builtin_row("BITWISE_XOR", "BitwiseXor")

R.add_export(("Identity",), Rule("", None, passes_through=True))
