"""PyTorch <-> IR: Activations, arithmetic, comparisons, logic, casts.

Each IR op's import converters (ATen -> IR) and export writer (IR -> torch code) sit together.
"""
from __future__ import annotations

import math

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, hard_sigmoid_writer
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules import shape_values
from tensorbridge.rules.core import shift_in_range
from tensorbridge.rules.ir_spellings import atan2, expm1, floor_divide, log1p, log_base, not_equal, truncate
from tensorbridge.rules.torch.base import (
    TORCH_DTYPES,
    R,
    as_dtype,
    aten,
    binary,
    dtype_name,
    non_default,
    operand,
    python_op,
    unary,
)


def _clip(imp, x, lo, hi):
    xv = imp.value(x)
    lov = None if lo is None else imp.value(lo, like=x)
    hiv = None if hi is None else imp.value(hi, like=x)
    return imp.emit("Clip", [xv, lov, hiv])


@aten("relu6", produces="Clip")
def read_relu6(imp, node, x):
    return _clip(imp, x, 0.0, 6.0)


@aten("hardtanh", produces="Clip")
def read_hardtanh(imp, node, x, min_val=-1.0, max_val=1.0):
    return _clip(imp, x, min_val, max_val)


@aten("clamp", "clip", produces="Clip")
def read_clamp(imp, node, x, min=None, max=None):
    return _clip(imp, x, min, max)


@R.exports("Clip")
def write_clip(em, node):
    x, lo, hi = (list(node.inputs) + [None, None])[:3]
    lo_s, hi_s = em.scalar(lo), em.scalar(hi)
    if lo is None and hi is None:
        return em.alias(node, em.tensor(x))
    if lo_s == 0 and hi_s == 6:
        return em.out(node, P.call("F.relu6", em.tensor(x), **_in_place(em, x)))
    bounds = {k: (v, s) for k, v, s in (("min", lo, lo_s), ("max", hi, hi_s))
              if v is not None and not (s is not None and math.isinf(s) and (s > 0) == (k == "max"))}  # no-op bounds
    mixed = len({s is None for _, s in bounds.values()}) > 1  # torch.clamp takes two tensors or two numbers
    kw = {k: (em.tensor(v) if s is None or mixed else P.lit(s)) for k, (v, s) in bounds.items()}
    if not kw:
        return em.alias(node, em.tensor(x))
    em.out(node, P.call("torch.clamp", em.tensor(x), **kw))


def _in_place(em, x) -> dict:
    return {"inplace": True} if em.overwritable(x) else {}


@aten("gelu", produces="Gelu")
def read_gelu(imp, node, x, approximate="none"):
    return imp.emit("Gelu", [imp.value(x)], {"approximate": approximate})


@R.exports("Gelu")
def write_gelu(em, node):
    em.out(node, P.call("F.gelu", em.tensor(node.inputs[0]),
                        **non_default(approximate=(node.attrs.get("approximate", "none"), "none"))))


@aten("hardsigmoid", produces="HardSigmoid")
def read_hardsigmoid(imp, node, x):
    return imp.emit("HardSigmoid", [imp.value(x)], {"alpha": 1.0 / 6, "beta": 0.5})


R.add_export(("HardSigmoid",), hard_sigmoid_writer("F.hardsigmoid", "torch.clamp"))


@aten("leaky_relu", produces="LeakyRelu")
def read_leaky_relu(imp, node, x, negative_slope=0.01):
    return imp.emit("LeakyRelu", [imp.value(x)], {"alpha": float(negative_slope)})


@R.exports("LeakyRelu")
def write_leaky_relu(em, node):
    em.out(node, P.call("F.leaky_relu", em.tensor(node.inputs[0]), node.attrs.get("alpha", 0.01)))


@aten("elu", produces="Elu")
def read_elu(imp, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale != 1 or input_scale != 1:
        raise ModelError(f"{node.name}: elu with scale/input_scale is not supported")
    return imp.emit("Elu", [imp.value(x)], {"alpha": float(alpha)})


@R.exports("Elu")
def write_elu(em, node):
    em.out(node, P.call("F.elu", em.tensor(node.inputs[0]), alpha=node.attrs.get("alpha", 1.0)))


@R.exports("PRelu")
def write_prelu(em, node):
    """nn.PReLU when the slope is one value or one per channel (axis 1), else its formula."""
    x, slope = node.inputs
    xe = em.tensor(x)
    channels = _per_channel(slope, x)
    if channels is not None:
        layer = em.layer(node, "nn.PReLU", [], non_default(num_parameters=(channels.size, 1)),
                         {"weight": channels.astype(np.float32)})
        return em.out(node, P.call(layer, xe))
    em.out(node, P.call("torch.where", P.call("torch.lt", xe, 0), P.binop(xe, "*", em.tensor(slope)), xe))


def _per_channel(slope, x):
    """The slope as nn.PReLU's weight (one value, or one per axis-1 channel), or None."""
    if slope.const is None or x.shape is None or slope.const.dtype.kind != "f":
        return None
    s = np.asarray(slope.const)
    if s.size == 1:
        return s.reshape(1)
    rank = len(x.shape)
    aligned = s.reshape((1,) * (rank - s.ndim) + s.shape) if s.ndim <= rank else None
    if aligned is None or rank < 2 or aligned.shape[1] != x.shape[1] or \
            any(d != 1 for i, d in enumerate(aligned.shape) if i != 1):
        return None
    return aligned.reshape(-1)


@aten("prelu", "_prelu_kernel", produces="PRelu")
def read_prelu(imp, node, x, weight):
    """torch's weight holds one slope per channel (axis 1), or one for all."""
    xv, w = imp.value(x), imp.value(weight)
    rank = imp.rank(x)
    if w.shape is not None and len(w.shape) == 1 and w.shape[0] != 1 and rank > 2:
        if w.const is not None:
            w = imp.build.weight(w.name + ".channels", np.asarray(w.const).reshape((-1,) + (1,) * (rank - 2)))
        else:
            w = imp.emit("Reshape", [w, imp.const([-1] + [1] * (rank - 2), dtype=np.int64)], suffix="channels")
    return imp.emit("PRelu", [xv, w])


@aten("rsqrt", produces="Reciprocal")
def read_rsqrt(imp, node, x):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", [imp.value(x)], suffix="sqrt")])


@aten("ne", produces="Not")
def read_not_equal(imp, node, a, b):
    return not_equal(imp, imp.value(a, like=b), imp.value(b, like=a))


@aten("expm1", produces="Sub")
def read_expm1(imp, node, x):
    return expm1(imp, imp.value(x))


@aten("log1p", produces="Log")
def read_log1p(imp, node, x):
    return log1p(imp, imp.value(x))


@aten("log2", "log10", produces="Div")
def read_log_base(imp, node, x):
    return log_base(imp, imp.value(x), 2.0 if node.target.__name__.startswith("log2") else 10.0)


@aten("trunc", "fix", produces="Floor")
def read_trunc(imp, node, x):
    return truncate(imp, imp.value(x))


@aten("atan2", "arctan2", produces=())
def read_atan2(imp, node, y, x):
    return atan2(imp, imp.value(y, like=x), imp.value(x, like=y))


@aten("bitwise_left_shift", "bitwise_right_shift", "__lshift__", "__rshift__", produces="BitShift")
def read_shift(imp, node, a, b):
    left = "left" in node.target.__name__ or "lshift" in node.target.__name__
    direction = "LEFT" if left else "RIGHT"
    return imp.emit("BitShift", [imp.value(a, like=b), imp.value(b, like=a)], {"direction": direction})


@aten("floor_divide", produces="Div")
def read_floor_divide(imp, node, a, b):
    return floor_divide(imp, imp.value(a, like=b), imp.value(b, like=a))


@R.exports("Div", shape_write=shape_values.arithmetic("//"))
def write_div(em, node):
    a, b = node.inputs
    kw = {"rounding_mode": "trunc"} if a.dtype is not None and a.dtype.kind in "iu" else {}
    em.out(node, P.call("torch.div", em.tensor(a), operand(em, b, a), **kw))


@R.exports("Mod")
def write_mod(em, node):
    fn = "torch.fmod" if node.attrs.get("fmod") else "torch.remainder"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), operand(em, node.inputs[1], node.inputs[0])))


@aten("rsub", produces="Sub")
def read_rsub(imp, node, a, b, alpha=1):
    bv = imp.value(b, like=a)
    av = imp.value(a)
    if alpha != 1:
        av = imp.emit("Mul", [av, imp.const(alpha, like=av)], suffix="alpha")
    return imp.emit("Sub", [bv, av])


@aten("__and__", "__or__", "__xor__", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
      produces=("And", "Or", "Xor", "Not", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"))
def read_logic(imp, node, a, b=None):
    """`&`, `|`, `^`, `~` and torch.bitwise_*: logical on booleans, bitwise on integers."""
    kind = node.target.__name__.split(".")[0].strip("_").removeprefix("bitwise_")
    av = imp.value(a, like=b) if b is not None else imp.value(a)
    operands = [av] if b is None else [av, imp.value(b, like=a)]
    boolean = av.dtype == np.bool_
    op = {"and": "And", "or": "Or", "xor": "Xor", "not": "Not"}[kind] if boolean else \
        {"and": "BitwiseAnd", "or": "BitwiseOr", "xor": "BitwiseXor", "not": "BitwiseNot"}[kind]
    return imp.emit(op, operands)


@aten("where", produces="Where")
def read_where(imp, node, cond, a=None, b=None):
    if a is None:
        raise ModelError(f"{node.name}: torch.where(cond) (nonzero form) is not supported")
    return imp.emit("Where", [imp.value(cond), imp.value(a, like=b), imp.value(b, like=a)])


@aten("masked_fill", produces="Where")
def read_masked_fill(imp, node, x, mask, value):
    xv = imp.value(x)
    return imp.emit("Where", [imp.value(mask), imp.value(value, like=x) if hasattr(value, "name")
                              else imp.const(value, like=xv), xv])


@R.exports("Where", shape_write=shape_values.where)
def write_where(em, node):
    c, a, b = node.inputs
    em.out(node, P.call("torch.where", em.tensor(c), em.arg(a), em.arg(b)))


@aten("_to_copy", "to", produces="Cast")
def read_to(imp, node, x, *args, **kw):
    target = dtype_name(imp.meta().dtype)
    src = imp.value(x)
    if src.dtype is not None and src.dtype == np.dtype(target if target != "bfloat16" else np.float32)\
            and target != "bfloat16":
        return src
    return imp.emit("Cast", [src], {"to": target})


@aten("type_as", produces="Cast")
def read_type_as(imp, node, x, other):
    return read_to(imp, node, x)


@R.exports("Cast", shape_write=shape_values.same)
def write_cast(em, node):
    to = dtypes.name(dtypes.dtype(node.attrs["to"]))
    if to not in TORCH_DTYPES:  # in the writer, not a check: a Cast of shape values is written as Python ints
        raise Unsupported(f"Cast to {to}")
    em.out(node, P.method(em.tensor(node.inputs[0]), "to", P.name(TORCH_DTYPES[to])))


def _torch_type_blocker(node) -> str | None:
    to = dtypes.name(dtypes.dtype(node.attrs["to"]))
    return None if to in TORCH_DTYPES else f"BitCast to {to}"


@R.exports("BitCast", check=_torch_type_blocker)
def write_bit_cast(em, node):
    """Tensor.view(dtype): the same bits read as a type of the same width."""
    em.out(node, P.method(em.tensor(node.inputs[0]), "view",
                          P.name(TORCH_DTYPES[dtypes.name(dtypes.dtype(node.attrs["to"]))])))


@R.exports("Identity", shape_write=shape_values.same)
def write_identity(em, node):
    em.var[id(node.outputs[0])] = em.tensor(node.inputs[0])


def write_variadic(fn):
    def rule(em, node):
        acc = em.tensor(node.inputs[0])
        for v in node.inputs[1:]:
            acc = P.call(fn, acc, em.tensor(v))
        if node.op == "Mean":
            acc = P.binop(acc, "/", len(node.inputs))
        em.out(node, acc)
    return rule


R.add_export(("Max",), write_variadic("torch.maximum"))
R.add_export(("Min",), write_variadic("torch.minimum"))
R.add_export(("Sum",), write_variadic("torch.add"))
R.add_export(("Mean",), write_variadic("torch.add"))


@aten("contiguous", "clone", "alias", "detach", "lift_fresh_copy", "_assert_tensor_metadata", produces=())
def read_passthrough(imp, node, x, *rest, **kw):
    """Ops that only move or alias data: the IR value is the input."""
    return imp.value(x)


@aten("dropout", "feature_dropout", "alpha_dropout", produces=())
def read_dropout(imp, node, x, p=0.5, train=False):
    """Dropout: the input where it does not train."""
    if train and p:
        raise ModelError(f"{node.name}: dropout in training mode (export the model in eval mode)")
    return imp.value(x)


@aten("copy", produces="Expand")
def read_copy(imp, node, dst, src, non_blocking=False):
    """copy(dst, src), as functionalization writes `x[1:] = y`: src's values in dst's shape and dtype (what dst held
    is gone)."""
    out = imp.meta()
    value = as_dtype(imp, src, np.dtype(dtypes.dtype(dtype_name(out.dtype))))
    if tuple(value.shape or ()) == tuple(imp.dim(d) for d in out.shape):
        return value
    return imp.emit("Expand", [value, imp.out_shape()])


@aten("native_dropout", produces=())
def read_native_dropout(imp, node, x, p, train=None):
    """The core ATen dropout (output, mask): the input where it does not train."""
    if train:
        raise ModelError(f"{node.name}: dropout in training mode (export the model in eval mode)")
    return (imp.value(x), None)


@R.exports("Relu")
def write_relu(em, node):
    x = node.inputs[0]
    em.out(node, P.call("F.relu", em.tensor(x), **_in_place(em, x)))


@R.exports("Add", shape_write=shape_values.arithmetic("+"))
def write_add(em, node):
    """`a + b`, or `a.add_(b)` when `a`'s tensor may hold the sum (a residual connection's `out += identity`)."""
    a, b = node.inputs
    if b.const is None and em.overwritable(a, like=node.outputs[0]):
        return em.out(node, P.method(em.tensor(a), "add_", em.tensor(b)))
    em.out(node, P.binop(operand(em, a, b), "+", operand(em, b, a)))


# -- rows: ATen op <-> IR op <-> torch call ---------------------------------------------------------
unary("relu", "Relu")
unary("sigmoid", "Sigmoid", "torch.sigmoid")
unary("tanh", "Tanh", "torch.tanh")
unary("exp", "Exp", "torch.exp")
unary("log", "Log", "torch.log")
unary("sqrt", "Sqrt", "torch.sqrt")
unary("abs", "Abs", "torch.abs")
unary("neg", "Neg", "torch.neg")
unary("erf", "Erf", "torch.erf")
unary("sin", "Sin", "torch.sin")
unary("cos", "Cos", "torch.cos")
unary("reciprocal", "Reciprocal", "torch.reciprocal")
unary("floor", "Floor", "torch.floor")
unary("ceil", "Ceil", "torch.ceil")
unary("round", "Round", "torch.round")
unary("sign", "Sign", "torch.sign")
unary("silu", "SiLU", "F.silu")
unary("hardswish", "HardSwish", "F.hardswish")
unary("mish", "Mish", "F.mish")
unary("softplus", "Softplus", "F.softplus")
unary("logical_not", "Not", "torch.logical_not")
unary("isnan", "IsNaN", "torch.isnan")
unary(None, "BitwiseNot", "torch.bitwise_not")
unary("asin", "Asin", "torch.asin")
unary("acos", "Acos", "torch.acos")
unary("atan", "Atan", "torch.atan")
unary("sinh", "Sinh", "torch.sinh")
unary("cosh", "Cosh", "torch.cosh")
unary("tan", "Tan", "torch.tan")
unary(None, "Softsign", "F.softsign")
unary("asinh", "Asinh", "torch.asinh")
unary("acosh", "Acosh", "torch.acosh")
unary("atanh", "Atanh", "torch.atanh")
unary("isinf", "IsInf")
binary("add", "Add")
binary("sub", "Sub", "-", shape_write=shape_values.arithmetic("-"))
binary("mul", "Mul", "*", shape_write=shape_values.arithmetic("*"))
binary("div", "Div")
binary("pow", "Pow", "**")
binary("maximum", "Max")
binary("minimum", "Min")
binary("eq", "Equal", "torch.eq", shape_write=shape_values.equal)
binary("lt", "Less", "torch.lt")
binary("le", "LessOrEqual", "torch.le")
binary("gt", "Greater", "torch.gt")
binary("ge", "GreaterOrEqual", "torch.ge")
binary("logical_and", "And", "torch.logical_and")
binary("logical_or", "Or", "torch.logical_or")
binary("logical_xor", "Xor", "torch.logical_xor")
binary(None, "BitwiseAnd", "torch.bitwise_and")
binary(None, "BitwiseOr", "torch.bitwise_or")
binary(None, "BitwiseXor", "torch.bitwise_xor")
binary("remainder", "Mod")
binary("fmod", "Mod", attrs={"fmod": 1})


_SIZE_ARITHMETIC = {"add": "Add", "sub": "Sub", "mul": "Mul", "floordiv": "Div", "mod": "Mod"}


@python_op("ge", "le", "gt", "lt", "eq", "ne", produces=())
def read_size_comparison(imp, node, a, b):
    """A comparison of sizes torch.export checks with _assert_scalar (a data-dependent size's bounds): the
    program holds once it ran, so nothing is computed."""
    return None


@aten("_assert_scalar", "sym_constrain_range_for_size", "_assert_async", produces=())
def read_assertion(imp, node, *args, **kw):
    return None


@python_op(*_SIZE_ARITHMETIC, produces=tuple(_SIZE_ARITHMETIC.values()))
def read_size_arithmetic(imp, node, a, b):
    """Python arithmetic on symbolic sizes, which torch.export leaves in the graph."""
    def operand(x):
        v = imp.sym_or_value(x)
        return v[1] if isinstance(v, tuple) else imp.const([v], dtype=np.int64)
    return ("sym", imp.emit(_SIZE_ARITHMETIC[node.target.__name__], [operand(a), operand(b)], suffix="dim"))


@R.exports("BitShift", check=shift_in_range)
def write_bit_shift(em, node):
    fn = "torch.bitwise_left_shift" if node.attrs["direction"] == "LEFT" else "torch.bitwise_right_shift"
    em.out(node, P.call(fn, *(em.tensor(v) for v in node.inputs)))
