"""Flax code for activations, arithmetic, comparisons, logic, casts: one `jax.numpy`/`jax.nn` call each."""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, hard_sigmoid_writer
from tensorbridge.ir import dtypes
from tensorbridge.rules import shape_values
from tensorbridge.rules.flax.base import JAX_DTYPES, R, binary, unary

for _op, _fn in {
    "Relu": "jax.nn.relu", "Sigmoid": "jax.nn.sigmoid", "Tanh": "jnp.tanh", "Exp": "jnp.exp", "Log": "jnp.log",
    "Sqrt": "jnp.sqrt", "Abs": "jnp.abs", "Neg": "jnp.negative", "Erf": "jax.lax.erf", "Floor": "jnp.floor",
    "Ceil": "jnp.ceil", "Round": "jnp.round", "Sign": "jnp.sign", "Sin": "jnp.sin", "Cos": "jnp.cos",
    "Tan": "jnp.tan", "Asin": "jnp.arcsin", "Acos": "jnp.arccos", "Atan": "jnp.arctan", "Sinh": "jnp.sinh",
    "Cosh": "jnp.cosh", "Asinh": "jnp.arcsinh", "Acosh": "jnp.arccosh", "Atanh": "jnp.arctanh",
    "Reciprocal": "jnp.reciprocal", "Softplus": "jax.nn.softplus", "Softsign": "jax.nn.soft_sign",
    "SiLU": "jax.nn.silu", "HardSwish": "jax.nn.hard_swish", "IsNaN": "jnp.isnan", "Not": "jnp.logical_not",
    "BitwiseNot": "jnp.invert",
}.items():
    unary(_op, _fn)

for _op, _write in {
    "Add": "+", "Sub": "-", "Mul": "*", "Pow": "jnp.power", "Equal": "jnp.equal", "Greater": "jnp.greater",
    "Less": "jnp.less", "GreaterOrEqual": "jnp.greater_equal", "LessOrEqual": "jnp.less_equal",
    "And": "jnp.logical_and", "Or": "jnp.logical_or", "Xor": "jnp.logical_xor", "BitwiseAnd": "jnp.bitwise_and",
    "BitwiseOr": "jnp.bitwise_or", "BitwiseXor": "jnp.bitwise_xor",
}.items():
    binary(_op, _write, {"+": shape_values.arithmetic("+"), "-": shape_values.arithmetic("-"),
                         "*": shape_values.arithmetic("*"), "jnp.equal": shape_values.equal}.get(_write))


@R.exports("Div", shape_write=shape_values.arithmetic("//"))
def write_div(em, node):
    """`/` on floats; integer division truncates toward zero, as `jax.lax.div` does (`//` floors)."""
    a, b = node.inputs
    if a.dtype is not None and a.dtype.kind in "iu":
        return em.out(node, P.call("jax.lax.div", em.tensor(a), em.tensor(b)))
    em.out(node, P.binop(em.arg(a), "/", em.arg(b)))


@R.exports("Mod")
def write_mod(em, node):
    a, b = node.inputs
    em.out(node, P.call("jnp.fmod" if node.attrs.get("fmod", 0) else "jnp.mod", em.tensor(a), em.tensor(b)))


def _fold(fn: str):
    def write(em, node):
        expr = em.tensor(node.inputs[0])
        for v in node.inputs[1:]:
            expr = P.call(fn, expr, em.tensor(v))
        em.out(node, expr)
    return write


R.add_export(("Max",), _fold("jnp.maximum"))
R.add_export(("Min",), _fold("jnp.minimum"))


@R.exports("Sum", "Mean")
def write_sum(em, node):
    expr = em.tensor(node.inputs[0])
    for v in node.inputs[1:]:
        expr = P.binop(expr, "+", em.tensor(v))
    em.out(node, expr if node.op == "Sum" else P.binop(expr, "/", len(node.inputs)))


@R.exports("Identity", "Dropout", shape_write=shape_values.same)
def write_identity(em, node):
    em.alias(node, em.tensor(node.inputs[0]))


@R.exports("IsInf")
def write_isinf(em, node):
    x = em.tensor(node.inputs[0])
    positive, negative = node.attrs.get("detect_positive", 1), node.attrs.get("detect_negative", 1)
    if positive and negative:
        return em.out(node, P.call("jnp.isinf", x))
    if positive:
        return em.out(node, P.call("jnp.isposinf", x))
    if negative:
        return em.out(node, P.call("jnp.isneginf", x))
    em.out(node, P.call("jnp.zeros_like", x, dtype=P.name("jnp.bool_")))


@R.exports("Clip")
def write_clip(em, node):
    x, lo, hi = (list(node.inputs) + [None, None])[:3]
    lo_s, hi_s = em.scalar(lo), em.scalar(hi)
    if lo is None and hi is None:
        return em.alias(node, em.tensor(x))
    if lo_s == 0 and hi_s == 6:
        return em.out(node, P.call("jax.nn.relu6", em.tensor(x)))
    em.out(node, P.call("jnp.clip", em.tensor(x), em.arg(lo) if lo is not None else None,
                        em.arg(hi) if hi is not None else None))


@R.exports("Where", shape_write=shape_values.where)
def write_where(em, node):
    c, a, b = node.inputs
    em.out(node, P.call("jnp.where", em.tensor(c), em.arg(a), em.arg(b)))


@R.exports("Cast", shape_write=shape_values.same)
def write_cast(em, node):
    to = dtypes.name(node.attrs["to"])
    if to not in JAX_DTYPES:
        raise Unsupported(f"cast to {to}")
    em.out(node, P.method(em.tensor(node.inputs[0]), "astype", P.name(JAX_DTYPES[to])))


def _bit_cast_blocker(node) -> str | None:
    types = {dtypes.name(node.inputs[0].dtype) if node.inputs[0].dtype is not None else None,
             dtypes.name(dtypes.dtype(node.attrs["to"]))}
    if "bool" in types or None in types:
        return "BitCast of a bool (jax.lax.bitcast_convert_type takes numbers)"
    if types & {"int64", "uint64", "float64"}:
        return "BitCast of a 64-bit type (JAX holds it in 32 bits unless jax_enable_x64 is set)"
    return None


@R.exports("BitCast", check=_bit_cast_blocker)
def write_bit_cast(em, node):
    """jax.lax.bitcast_convert_type: the same bits read as a type of the same width."""
    em.out(node, P.call("jax.lax.bitcast_convert_type", em.tensor(node.inputs[0]),
                        P.name(JAX_DTYPES[dtypes.name(dtypes.dtype(node.attrs["to"]))])))


@R.exports("BitShift")
def write_bit_shift(em, node):
    """jnp.left_shift / right_shift (logical for the unsigned types ONNX shifts); like ONNX, XLA gives 0 for an
    amount of the width or more."""
    fn = "jnp.left_shift" if node.attrs["direction"] == "LEFT" else "jnp.right_shift"
    em.out(node, P.call(fn, *(em.tensor(v) for v in node.inputs)))


@R.exports("Gelu")
def write_gelu(em, node):
    em.out(node, P.call("jax.nn.gelu", em.tensor(node.inputs[0]),
                        approximate=node.attrs.get("approximate", "none") == "tanh"))


@R.exports("LeakyRelu")
def write_leaky_relu(em, node):
    em.out(node, P.call("jax.nn.leaky_relu", em.tensor(node.inputs[0]), node.attrs.get("alpha", 0.01)))


@R.exports("Elu")
def write_elu(em, node):
    em.out(node, P.call("jax.nn.elu", em.tensor(node.inputs[0]), node.attrs.get("alpha", 1.0)))


@R.exports("Selu")
def write_selu(em, node):
    alpha, gamma = node.attrs.get("alpha", 1.6732632423543772), node.attrs.get("gamma", 1.0507009873554805)
    x = em.tensor(node.inputs[0])
    if abs(alpha - 1.6732632423543772) < 1e-6 and abs(gamma - 1.0507009873554805) < 1e-6:
        return em.out(node, P.call("jax.nn.selu", x))
    em.out(node, P.binop(gamma, "*", P.call("jax.nn.elu", x, alpha)))


R.add_export(("HardSigmoid",), hard_sigmoid_writer("jax.nn.hard_sigmoid", "jnp.clip"))


@R.exports("Mish")
def write_mish(em, node):
    x = em.tensor(node.inputs[0])
    em.out(node, P.binop(x, "*", P.call("jnp.tanh", P.call("jax.nn.softplus", x))))


@R.exports("PRelu")
def write_prelu(em, node):
    x, slope = node.inputs
    xe = em.tensor(x)
    em.out(node, P.call("jnp.where", ast.Compare(xe, [ast.GtE()], [P.lit(0)]), xe,
                        P.binop(em.tensor(slope), "*", xe)))
