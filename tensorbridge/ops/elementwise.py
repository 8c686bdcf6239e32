"""Elementwise ops: unary math, activations, binary arithmetic/comparison/logic, casts.

Most ops are one table row: name, NumPy function, equivalents. Low-precision float inputs
(bfloat16, float8, ...) are computed in float32 and rounded back, as runtimes do.
"""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.infer import broadcast_rule, dtype_from_attr, same_as
from tensorbridge.ops.integer_range import INT32, integer_range
from tensorbridge.ops.patterns import only_use, other, producer, scalar
from tensorbridge.ops.schema import Attr, alias, attrs_of, op, set_decomposition, set_fusion, set_recovery

F = "elementwise"


def _in_float32(fn):
    """Run `fn` in float32 for dtypes NumPy cannot compute in, then cast back."""

    @functools.wraps(fn)
    def wrapped(x, *args, **kwargs):
        dt = x.dtype
        if dtypes.name(dt) in dtypes.LOW_PRECISION_NAMES:
            return np.asarray(fn(x.astype(np.float32), *args, **kwargs)).astype(dt)
        return np.asarray(fn(x, *args, **kwargs)).astype(dt, copy=False)

    return wrapped


# -- unary math: (name, fn, equivalents) -----------------------------------------------------
def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x.astype(np.float64)


_UNARY = {
    "Abs": (np.abs, "torch.abs, tf.abs, ABS"),
    "Neg": (np.negative, "torch.neg, tf.negative, NEG"),
    "Exp": (np.exp, "torch.exp, tf.exp, EXP"),
    "Log": (np.log, "torch.log, tf.math.log, LOG"),
    "Sqrt": (np.sqrt, "torch.sqrt, tf.sqrt, SQRT"),
    "Reciprocal": (np.reciprocal, "torch.reciprocal, tf.math.reciprocal"),
    "Floor": (np.floor, "torch.floor, tf.floor, FLOOR"),
    "Ceil": (np.ceil, "torch.ceil, tf.math.ceil, CEIL"),
    "Round": (np.rint, "torch.round, tf.round, ROUND (half to even)"),
    "Sign": (np.sign, "torch.sign, tf.sign, SIGN"),
    "Sin": (np.sin, "torch.sin, tf.sin, SIN"),
    "Cos": (np.cos, "torch.cos, tf.cos, COS"),
    "Tan": (np.tan, "torch.tan, tf.tan"),
    "Asin": (np.arcsin, "torch.asin, tf.asin"),
    "Acos": (np.arccos, "torch.acos, tf.acos"),
    "Atan": (np.arctan, "torch.atan, tf.atan"),
    "Sinh": (np.sinh, "torch.sinh, tf.sinh"),
    "Cosh": (np.cosh, "torch.cosh, tf.cosh"),
    "Asinh": (np.arcsinh, "torch.asinh, tf.asinh"),
    "Acosh": (np.arccosh, "torch.acosh, tf.acosh"),
    "Atanh": (np.arctanh, "torch.atanh, tf.atanh"),
    "Erf": (_erf, "torch.erf, tf.math.erf"),
    "Sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), "torch.sigmoid, keras sigmoid, LOGISTIC"),
    "Tanh": (np.tanh, "torch.tanh, keras tanh, TANH"),
    "Relu": (lambda x: np.maximum(x, 0), "nn.ReLU, keras relu, RELU"),
    "Softplus": (lambda x: np.logaddexp(x, 0), "nn.Softplus, keras softplus"),
    "Softsign": (lambda x: x / (1 + np.abs(x)), "nn.Softsign, keras softsign"),
    "SiLU": (lambda x: x / (1.0 + np.exp(-x)), "nn.SiLU, keras swish/silu; ONNX Swish(alpha=1)"),
    "Mish": (lambda x: x * np.tanh(np.logaddexp(x, 0)), "nn.Mish, keras mish"),
    "HardSwish": (lambda x: x * np.clip(x / 6 + 0.5, 0, 1), "nn.Hardswish, keras hard_swish, HARD_SWISH"),
}

for _name, (_fn, _eq) in _UNARY.items():
    alias(_name, _in_float32(_fn), family=F, doc=f"Elementwise {_name}. Equivalents: {_eq}.",
          infer=same_as(0), examples=({"inputs": [(2, 3, 4)]},) if _name == "SiLU" else ())


@op("Identity", family=F, elements=lambda node, known: known[0], infer=same_as(0), doc="Y = X. Equivalents: nn.Identity, tf.identity.")
def identity(X):
    return X


def passed_on(graph, v, name: str):
    """A new value of `graph`, named `name`, that is `v`: an output of its own where the graph hands on a value
    it does not compute (an input, a constant, an enclosing graph's value) or one that is already an output."""
    return graph.add_node("Identity", [v], name=name, outputs=[name]).outputs[0]


@op("Not", family=F, infer=same_as(0), doc="Logical not. Equivalents: torch.logical_not, LOGICAL_NOT.")
def not_(X):
    return np.logical_not(X)


@op("BitwiseNot", family=F, infer=same_as(0), doc="Bitwise not. Equivalents: torch.bitwise_not.")
def bitwise_not(X):
    return np.invert(X)


def _bool_like(inputs, attrs):
    return [(np.dtype(bool), inputs[0].shape)]


@op("IsNaN", family=F, infer=_bool_like,
    doc="Is-NaN test. Equivalents: torch.isnan, tf.math.is_nan.")
def is_nan(X):
    return np.isnan(X.astype(np.float32) if dtypes.name(X.dtype) in dtypes.LOW_PRECISION_NAMES else X)


@op("IsInf", family=F, infer=_bool_like,
    attrs={"detect_negative": Attr("int", 1), "detect_positive": Attr("int", 1)},
    doc="Is-infinite test. Equivalents: torch.isinf, tf.math.is_inf.")
def is_inf(X, detect_negative, detect_positive):
    X = X.astype(np.float32) if dtypes.name(X.dtype) in dtypes.LOW_PRECISION_NAMES else X
    return (np.isposinf(X) & bool(detect_positive)) | (np.isneginf(X) & bool(detect_negative))


# -- parametrised activations ----------------------------------------------------------------
@op("LeakyRelu", family=F, attrs={"alpha": Attr("float", 0.01)}, infer=same_as(0),
    doc="max(x, alpha*x). Equivalents: nn.LeakyReLU, keras LeakyReLU, LEAKY_RELU.")
@_in_float32
def leaky_relu(X, alpha):
    return np.where(X >= 0, X, X * alpha)


@op("Elu", family=F, attrs={"alpha": Attr("float", 1.0)}, infer=same_as(0),
    doc="Exponential linear unit. Equivalents: nn.ELU, keras elu, ELU.")
@_in_float32
def elu(X, alpha):
    return np.where(X > 0, X, alpha * np.expm1(np.minimum(X, 0)))


@op("Selu", family=F, attrs={"alpha": Attr("float", 1.67326319217681884765625),
                             "gamma": Attr("float", 1.05070102214813232421875)},
    infer=same_as(0), doc="Scaled ELU. Equivalents: nn.SELU, keras selu.")
@_in_float32
def selu(X, alpha, gamma):
    return gamma * np.where(X > 0, X, alpha * np.expm1(np.minimum(X, 0)))


@op("Celu", family=F, attrs={"alpha": Attr("float", 1.0)}, infer=same_as(0),
    doc="Continuously differentiable ELU. Equivalents: nn.CELU.")
@_in_float32
def celu(X, alpha):
    return np.maximum(X, 0) + np.minimum(0, alpha * np.expm1(X / alpha))


@op("ThresholdedRelu", family=F, attrs={"alpha": Attr("float", 1.0)}, infer=same_as(0),
    doc="x if x > alpha else 0. Equivalents: keras ThresholdedReLU.")
@_in_float32
def thresholded_relu(X, alpha):
    return np.where(X > alpha, X, 0)


@op("HardSigmoid", family=F, attrs={"alpha": Attr("float", 0.2), "beta": Attr("float", 0.5)},
    infer=same_as(0), doc="clip(alpha*x+beta, 0, 1). Equivalents: nn.Hardsigmoid (alpha=1/6), keras hard_sigmoid.")
@_in_float32
def hard_sigmoid(X, alpha, beta):
    return np.clip(alpha * X + beta, 0, 1)


@op("Shrink", family=F, attrs={"bias": Attr("float", 0.0), "lambd": Attr("float", 0.5)},
    infer=same_as(0), doc="Soft/hard shrink. Equivalents: nn.Softshrink, nn.Hardshrink.")
def shrink(X, bias, lambd):
    return np.where(X < -lambd, X + bias, np.where(X > lambd, X - bias, 0)).astype(X.dtype)


@op("Swish", family=F, attrs={"alpha": Attr("float", 1.0)}, infer=same_as(0),
    doc="x*sigmoid(alpha*x). Equivalents: keras swish; alpha=1 is SiLU.")
@_in_float32
def swish(X, alpha):
    return X / (1.0 + np.exp(-alpha * X))


@op("Gelu", family=F, attrs={"approximate": Attr("str", "none")}, infer=same_as(0),
    doc="GELU, erf form ('none') or tanh form. Equivalents: nn.GELU, keras gelu, GELU.")
@_in_float32
def gelu(X, approximate):
    if approximate == "tanh":
        return 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3)))
    return 0.5 * X * (1 + _erf(X / np.sqrt(2)))


@op("PRelu", inputs="X slope", family=F, infer=broadcast_rule(), weights=("slope",),
    doc="Parametric ReLU: x where x >= 0, slope * x elsewhere (slope broadcast to x). Equivalents: nn.PReLU, keras "
        "PReLU, PRELU.")
def prelu(X, slope):
    return np.where(X < 0, X * slope, X).astype(X.dtype)


def _recover_prelu(graph, node) -> bool:
    """relu(x) + c * relu(-x), c constant (Keras's PReLU as TensorFlow runs it) -> PRelu(x, -c)."""
    for pos, neg in (node.inputs, reversed(node.inputs)):
        relu, mul = producer(pos, "Relu"), producer(neg, "Mul")
        if relu is None or mul is None:
            continue
        for c, inner in (mul.inputs, reversed(mul.inputs)):
            negated = producer(producer(inner, "Relu").inputs[0] if producer(inner, "Relu") else None, "Neg")
            if c.const is not None and negated is not None and negated.inputs[0] is relu.inputs[0]:
                b = Builder.replacing(node)
                slope = b.weight(b.name("slope"), np.negative(c.const))
                graph.replace_node(node, [b.op("PRelu", relu.inputs[0], slope, suffix="prelu")])
                return True
    return False


def _recover_prelu_select(graph, node) -> bool:
    """where(x < 0, x * s, x) -> PRelu(x, s): the formula code targets write where they have no PReLU layer."""
    cond, neg, pos = node.inputs
    less, mul = cond.producer if cond is not None else None, neg.producer if neg is not None else None
    if less is None or mul is None or less.op != "Less" or mul.op != "Mul" or less.inputs[0] is not pos:
        return False
    zero = less.inputs[1].const
    slope = next((v for v in mul.inputs if v is not pos), None) if pos in mul.inputs else None
    if zero is None or np.any(np.asarray(zero) != 0) or slope is None or pos.dtype is None or pos.dtype.kind != "f":
        return False
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("PRelu", pos, slope, suffix="prelu")])
    return True


def _decompose_prelu(graph, node) -> bool:
    """relu(x) + (-slope) * relu(-x): exact (each term is x, or 0, or slope * x), from ops every target has, and
    the form `_recover_prelu` reads back."""
    x, slope = node.inputs
    if slope.const is None:
        return False
    b = Builder.replacing(node)
    positive = b.op("Relu", x, suffix="positive")
    negative = b.op("Relu", b.op("Neg", x, suffix="negated"), suffix="negative")
    factor = b.weight(b.name("negated_slope"), np.negative(np.asarray(slope.const)))
    graph.replace_node(node, [b.op("Add", positive, b.op("Mul", factor, negative, suffix="scaled"))])
    return True


set_recovery("PRelu", "Add", _recover_prelu)
set_recovery("PRelu", "Where", _recover_prelu_select)
set_decomposition("PRelu", _decompose_prelu)


@op("Clip", inputs="input min? max?", outputs="output", family=F, infer=same_as(0),
    doc="Clamp to [min, max]. Equivalents: torch.clamp, nn.ReLU6, tf.clip_by_value, RELU6.")
def clip(input, min=None, max=None):
    out = input
    if min is not None:
        out = np.maximum(out, min)
    if max is not None:
        out = np.minimum(out, max)
    return out.astype(input.dtype)


# -- binary ----------------------------------------------------------------------------------
def _low(x):
    return x.astype(np.float32) if dtypes.name(x.dtype) in dtypes.LOW_PRECISION_NAMES else x


def _arith(fn):
    def ref(A, B):
        return np.asarray(fn(_low(A), _low(B))).astype(A.dtype)
    return ref


def _int_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.floor_divide(a, b)
        return np.where((np.mod(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q)
    return np.divide(a, b)


_BINARY = {
    "Add": (np.add, "torch.add, keras Add, ADD"),
    "Sub": (np.subtract, "torch.sub, keras Subtract, SUB"),
    "Mul": (np.multiply, "torch.mul, keras Multiply, MUL"),
    "Div": (_int_div, "torch.div, tf.divide, DIV"),
    "BitwiseAnd": (np.bitwise_and, "torch.bitwise_and"),
    "BitwiseOr": (np.bitwise_or, "torch.bitwise_or"),
    "BitwiseXor": (np.bitwise_xor, "torch.bitwise_xor"),
}
def _pairs(*entries):
    """Entry lists of small shape vectors, broadcast to one length (a one-entry list repeats), else None."""
    if any(e is None for e in entries):
        return None
    n = max(len(e) for e in entries)
    if any(len(e) not in (1, n) for e in entries):
        return None
    return list(zip(*(e * n if len(e) == 1 else e for e in entries)))


def _arithmetic_elements(node, known):
    """Arithmetic on shape vectors, entry by entry where both entries are ints (a symbolic dim times 1 stays)."""
    fn = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
          "Div": lambda a, b: a // b if b else None}.get(node.op)
    pairs = _pairs(*known) if fn is not None else None
    if pairs is None:
        return None
    return [fn(a, b) if isinstance(a, int) and isinstance(b, int) else a if node.op in ("Mul", "Div") and b == 1
            else b if node.op == "Mul" and a == 1 else None for a, b in pairs]


for _name, (_fn, _eq) in _BINARY.items():
    alias(_name, _arith(_fn), inputs="A B", outputs="C", family=F, infer=broadcast_rule(),
          elements=_arithmetic_elements if _name in ("Add", "Sub", "Mul", "Div") else None,
          doc=f"Elementwise {_name} with broadcasting. Equivalents: {_eq}.")

_COMPARE = {
    "Equal": (np.equal, "torch.eq, tf.equal, EQUAL"),
    "Greater": (np.greater, "torch.gt, tf.greater"),
    "GreaterOrEqual": (np.greater_equal, "torch.ge, tf.greater_equal"),
    "Less": (np.less, "torch.lt, tf.less"),
    "LessOrEqual": (np.less_equal, "torch.le, tf.less_equal"),
    "And": (np.logical_and, "torch.logical_and, LOGICAL_AND"),
    "Or": (np.logical_or, "torch.logical_or, LOGICAL_OR"),
    "Xor": (np.logical_xor, "torch.logical_xor"),
}
def _equal_elements(node, known):
    """Equal on shape vectors (an exported `expand` asks which entries are -1): a symbolic dim is never
    negative, so it differs from a negative int."""
    def same(a, b):
        if isinstance(a, int) and isinstance(b, int):
            return int(a == b)
        if isinstance(a, str) and isinstance(b, int) and b < 0 or isinstance(b, str) and isinstance(a, int) and a < 0:
            return 0
        return None
    pairs = _pairs(*known)
    return None if pairs is None else [same(a, b) for a, b in pairs]


def _where_elements(node, known):
    """Where on shape vectors: each entry from X or Y as the condition's entry is known."""
    rows = _pairs(*known)
    return None if rows is None else [None if c is None else x if c else y for c, x, y in rows]


for _name, (_fn, _eq) in _COMPARE.items():
    alias(_name, (lambda f: lambda A, B: f(_low(A), _low(B)))(_fn), inputs="A B", outputs="C",
          family=F, infer=broadcast_rule("bool"), elements=_equal_elements if _name == "Equal" else None,
          doc=f"Elementwise {_name} (boolean result). Equivalents: {_eq}.")


@op("Pow", inputs="X Y", outputs="Z", family=F, infer=broadcast_rule(),
    doc="X ** Y (result has X's dtype). Equivalents: torch.pow, tf.pow, POW.")
def pow_(X, Y):
    if np.issubdtype(X.dtype, np.integer) and np.issubdtype(Y.dtype, np.integer):
        return np.power(X.astype(np.int64), Y.astype(np.int64)).astype(X.dtype)
    return np.power(_low(X).astype(np.float64), _low(Y).astype(np.float64)).astype(X.dtype)


@op("Mod", inputs="A B", outputs="C", family=F, attrs={"fmod": Attr("int", 0)},
    infer=broadcast_rule(), doc="Remainder (fmod=1: sign of dividend). Equivalents: torch.remainder/fmod, FLOOR_MOD.")
def mod(A, B, fmod):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.fmod(A, B) if fmod else np.mod(A, B)).astype(A.dtype)


@op("BitShift", inputs="X Y", outputs="Z", family=F, attrs={"direction": Attr("str")},
    infer=broadcast_rule(), doc="Bit shift of unsigned ints. Equivalents: torch.bitwise_left_shift.")
def bit_shift(X, Y, direction):
    return (np.left_shift(X, Y) if direction == "LEFT" else np.right_shift(X, Y)).astype(X.dtype)


def _variadic(fn, mean=False):
    def ref(*data_0):
        out = _low(data_0[0])
        for x in data_0[1:]:
            out = fn(out, _low(x))
        if mean:
            out = out / len(data_0)
        return np.asarray(out).astype(data_0[0].dtype)
    return ref


for _name, _fn, _mean, _eq in (("Max", np.maximum, False, "torch.maximum, keras Maximum, MAXIMUM"),
                               ("Min", np.minimum, False, "torch.minimum, keras Minimum, MINIMUM"),
                               ("Sum", np.add, False, "keras Add, ADD_N"),
                               ("Mean", np.add, True, "keras Average")):
    alias(_name, _variadic(_fn, _mean), inputs="data_0*", outputs="out", family=F,
          infer=broadcast_rule(), doc=f"Elementwise {_name} over any number of inputs. Equivalents: {_eq}.")


def _decompose_variadic(graph, node):
    """Max/Min/Sum/Mean of any number of inputs as a chain of two-input Max/Min/Add (Mean then divides)."""
    if node.op in ("Max", "Min") and len(node.inputs) == 2:
        return False
    b = Builder.replacing(node)
    out = node.inputs[0] if len(node.inputs) > 1 else b.op("Identity", node.inputs[0])
    for i, x in enumerate(node.inputs[1:], 1):
        out = b.op("Add" if node.op in ("Sum", "Mean") else node.op, out, x, suffix=f"{i}")
    if node.op == "Mean":
        out = b.op("Div", out, b.const(np.array(len(node.inputs), dtype=out.dtype), b.name("count")))
    graph.replace_node(node, [out])
    return True


for _name in ("Max", "Min", "Sum", "Mean"):
    set_decomposition(_name, _decompose_variadic)


@op("Where", inputs="condition X Y", outputs="output", family=F, infer=broadcast_rule(dtype_of=1), elements=_where_elements,
    doc="Select X where condition else Y. Equivalents: torch.where, tf.where, SELECT_V2.")
def where(condition, X, Y):
    return np.where(condition, X, Y).astype(X.dtype)


# -- casts ---------------------------------------------------------------------------------------
def cast_array(x: np.ndarray, to: np.dtype, saturate: bool = True) -> np.ndarray:
    """Cast with ONNX semantics (float8 saturation, string formatting, bool rules)."""
    to = dtypes.dtype(to)
    to_name = dtypes.name(to)
    if x.dtype == to:
        return x.copy()
    if to_name == "string":
        flat = [_to_str(v) for v in x.ravel()]
        return np.array(flat, dtype=object).reshape(x.shape)
    if x.dtype == object:
        return np.array([float(v) if to.kind == "f" or dtypes.is_float(to) else int(v)
                         for v in x.ravel()]).astype(to).reshape(x.shape)
    src = x
    if dtypes.name(x.dtype) in dtypes.LOW_PRECISION_NAMES or dtypes.name(x.dtype) in dtypes.SUB_BYTE_NAMES:
        src = x.astype(np.float32)
    if to_name.startswith("float8") or to_name == "float4e2m1":
        info = ml_dtypes.finfo(to) if to_name != "float4e2m1" else None
        top = float(info.max) if info is not None else 6.0
        src = src.astype(np.float32)
        if saturate:
            src = np.where(np.isnan(src), src, np.clip(src, -top, top))
            if to_name == "float8e8m0":
                src = np.where(src <= 0, np.float32(2.0 ** -127), src)
        return src.astype(to)
    if to_name in dtypes.SUB_BYTE_NAMES:  # wraps around like the other integer casts
        info = ml_dtypes.iinfo(to)
        lo, span = int(info.min), int(info.max) - int(info.min) + 1
        v = np.trunc(src.astype(np.float64)).astype(np.int64) if src.dtype.kind == "f" else src.astype(np.int64)
        return ((v - lo) % span + lo).astype(to)
    if to.kind in "iu" and np.issubdtype(src.dtype, np.floating):
        with np.errstate(invalid="ignore"):
            return np.trunc(src).astype(to)
    return src.astype(to)


def _to_str(v) -> str:
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "INF" if f > 0 else "-INF"
        return repr(np.float32(f)) if isinstance(v, np.float32) else str(v)
    return str(v)


@op("Cast", inputs="input", outputs="output", elements=lambda node, known: known[0], family=F, infer=dtype_from_attr("to"),
    attrs={"to": Attr("dtype"), "saturate": Attr("int", 1), "round_mode": Attr("str", "up")},
    doc="Convert element type. Equivalents: tensor.to(dtype), tf.cast, CAST.")
def cast(input, to, saturate, round_mode):
    return cast_array(input, to, bool(saturate))


@op("CastLike", inputs="input target_type", outputs="output", family=F,
    attrs={"saturate": Attr("int", 1), "round_mode": Attr("str", "up")},
    infer=lambda i, a: [(i[1].dtype, i[0].shape)],
    doc="Cast to the dtype of a second input. Equivalents: tensor.type_as.")
def cast_like(input, target_type, saturate, round_mode):
    return cast_array(input, target_type.dtype, bool(saturate))


# -- decompositions (used when a target lacks the op) ----------------------------------------
def _decompose_gate(gate_op: str, **gate_attrs):
    def decompose(graph, node):
        b = Builder.replacing(node)
        x = node.inputs[0]
        graph.replace_node(node, [b.op("Mul", x, b.op(gate_op, x, suffix="gate", **gate_attrs), suffix="mul")])
        return True
    return decompose


set_decomposition("SiLU", _decompose_gate("Sigmoid"))
set_decomposition("HardSwish", _decompose_gate("HardSigmoid", alpha=1.0 / 6, beta=0.5))


def _decompose_gelu(graph, node):
    """erf form: 0.5 x (1 + erf(x / sqrt 2)); tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    b = Builder.replacing(node)
    x = node.inputs[0]
    dt = x.dtype or np.dtype(np.float32)

    def const(name, v):
        return b.const(np.array(v, dtype=dt), b.name(name))

    if node.attrs.get("approximate", "none") == "tanh":
        cube = b.op("Mul", const("c", 0.044715), b.op("Pow", x, const("three", 3.0)))
        gate = b.op("Tanh", b.op("Mul", b.op("Add", x, cube), const("k", np.sqrt(2 / np.pi))))
    else:
        gate = b.op("Erf", b.op("Div", x, const("sqrt2", np.sqrt(2.0))))
    graph.replace_node(node, [b.op("Mul", b.op("Mul", x, const("half", 0.5)), b.op("Add", gate, const("one", 1.0)))])
    return True


set_decomposition("Gelu", _decompose_gelu)


def _gelu_of(graph, node):
    """x where Mul `node` computes x * 0.5 * (1 + erf(x / sqrt 2)), its three factors in any grouping
    (PyTorch's ONNX export, TensorFlow's gelu, the decomposition above); else None."""
    factors = _factors(graph, node)
    gates = [f for f in factors if _erf_gate(graph, f) is not None]
    halves = [f for f in factors if scalar(f) is not None and np.isclose(scalar(f), 0.5, rtol=1e-6)]
    if len(factors) != 3 or len(gates) != 1 or len(halves) != 1:
        return None
    x = _erf_gate(graph, gates[0])
    return x if [f for f in factors if f is not gates[0] and f is not halves[0]] == [x] else None


def _recover_gelu(graph, node) -> bool:
    """The erf GELU formula -> Gelu(x), the same formula: targets without an erf kernel (LiteRT) take it."""
    x = _gelu_of(graph, node)
    if x is not None:
        graph.replace_node(node, [Builder.replacing(node).op("Gelu", x, suffix="gelu")])
    return x is not None


def _fuse_gelu(graph, node):
    """The same, for a writer with a GELU layer (Keras, and LiteRT through it) reading a graph as its source
    spelled it (ONNX files)."""
    x = _gelu_of(graph, node)
    return None if x is None else Builder(graph, node.name, node.meta, before=node).node("Gelu", [x], {},
                                                                                          suffix="gelu")


def _factors(graph, node) -> list:
    """The operands of a product of Mul nodes (each inner one read only by the product)."""
    out = []
    for v in node.inputs:
        inner = only_use(v, ("Mul",), graph)
        out += _factors(graph, inner) if inner is not None else [v]
    return out


def _erf_gate(graph, v):
    """x where `v` is 1 + erf(x / sqrt 2), or erfc(-x / sqrt 2) = 1 - erf(-x / sqrt 2) (TensorFlow's gelu), the
    division also written as a product by 1 / sqrt 2; every inner value read only there. Else None."""
    gate = only_use(v, ("Add", "Sub"), graph)
    ones = [a for a in (gate.inputs if gate is not None else ()) if scalar(a) == 1.0]
    if not ones or gate.op == "Sub" and ones[0] is not gate.inputs[0]:  # 1 + erf(.), erf(.) + 1 or 1 - erf(.)
        return None
    erf = only_use(other(gate, ones[0]), ("Erf",), graph)
    scaled = only_use(erf.inputs[0], ("Div", "Mul"), graph) if erf is not None else None
    if scaled is None:
        return None
    by = scaled.inputs[1] if scaled.op == "Div" or scalar(scaled.inputs[1]) is not None else scaled.inputs[0]
    wanted = np.sqrt(2.0) if scaled.op == "Div" else 1 / np.sqrt(2.0)
    if scalar(by) is None or not np.isclose(scalar(by), wanted, rtol=1e-6):
        return None
    x = other(scaled, by)
    if gate.op == "Add":
        return x
    negated = only_use(x, ("Neg",), graph)
    return negated.inputs[0] if negated is not None else None


set_recovery("Gelu", "Mul", _recover_gelu)
set_fusion("Gelu", "Mul", _fuse_gelu)


def _decompose_selu(graph, node):
    """gamma * Elu(x, alpha): SELU with its own constants (Darknet rounds them) where a target's SELU is fixed."""
    b = Builder.replacing(node)
    x = node.inputs[0]
    schema_attrs = attrs_of(node)
    elu = b.op("Elu", x, suffix="elu", alpha=float(schema_attrs["alpha"]))
    gamma = b.const(np.array(schema_attrs["gamma"], dtype=x.dtype or np.float32), b.name("gamma"))
    graph.replace_node(node, [b.op("Mul", elu, gamma, suffix="scale")])
    return True


set_decomposition("Selu", _decompose_selu)


def _decompose_formula(formula):
    """A decomposition computing `formula(b, x, const, attrs)` from ops every target has (`attrs`: the node's,
    defaults included)."""
    def decompose(graph, node):
        x = node.inputs[0]
        if x.dtype is None or not dtypes.is_float(x.dtype):
            return False
        b = Builder.replacing(node)

        def const(name, v):
            return b.const(np.array(v, dtype=x.dtype), b.name(name))

        graph.replace_node(node, [formula(b, x, const, attrs_of(node))])
        return True
    return decompose


def _exp_pair(b, x, const, sign: str):
    """(e^x + e^-x) / 2 or (e^x - e^-x) / 2."""
    return b.op("Mul", b.op(sign, b.op("Exp", x), b.op("Exp", b.op("Neg", x))), const("half", 0.5))


def _asinh(b, x, const):
    """sign(x) log(|x| + sqrt(x^2 + 1)): the odd form keeps precision for negative x."""
    ax = b.op("Abs", x)
    root = b.op("Sqrt", b.op("Add", b.op("Mul", ax, ax), const("one", 1.0)))
    return b.op("Mul", b.op("Sign", x), b.op("Log", b.op("Add", ax, root)))


def _celu(b, x, const, a):
    """relu(x) + min(0, alpha * elu(x / alpha)): the reference's form, exact for positive x whatever alpha."""
    alpha = a["alpha"]
    if alpha == 1.0:
        return b.op("Elu", x)
    scaled = b.op("Mul", b.op("Elu", b.op("Div", x, const("alpha", alpha))), const("alpha_", alpha))
    return b.op("Add", b.op("Relu", x), b.op("Min", scaled, const("zero", 0.0)))


def _shrink(b, x, const, a):
    """x + bias below -lambd, x - bias above lambd, 0 between."""
    zero = const("zero", 0.0)
    above = b.op("Where", b.op("Greater", x, const("lambd", a["lambd"])), b.op("Sub", x, const("bias", a["bias"])),
                 zero)
    return b.op("Where", b.op("Less", x, const("neg_lambd", -a["lambd"])), b.op("Add", x, const("bias_", a["bias"])),
                above)


def _swish(b, x, const, a):
    if a["alpha"] == 1.0:
        return b.op("SiLU", x)
    return b.op("Mul", x, b.op("Sigmoid", b.op("Mul", x, const("alpha", a["alpha"]))))


#: Cephes' arctangent on [0, tan(pi/8)]: x + x z (c0 + c1 z + c2 z^2 + c3 z^3), z = x^2 (float32 error ~2e-7)
_ATAN_POLYNOMIAL = (-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2)


def _atan(b, x, const):
    """sign(x) (offset + atan(t)) for |x| reduced to t in [0, tan(pi/8)]: beyond tan(3pi/8), pi/2 + atan(-1/|x|);
    beyond tan(pi/8), pi/4 + atan((|x| - 1) / (|x| + 1)); the arctangent of t a polynomial (for targets whose
    runtime has no arctangent; the one such, LiteRT, has ATAN2 only)."""
    a = b.op("Abs", x)
    one = const("one", 1.0)
    big, mid = b.op("Greater", a, const("tan_3pi_8", 2.414213562373095)), \
        b.op("Greater", a, const("tan_pi_8", 0.4142135623730950))
    t = b.op("Where", big, b.op("Neg", b.op("Reciprocal", a)),
             b.op("Where", mid, b.op("Div", b.op("Sub", a, one), b.op("Add", a, one)), a))
    offset = b.op("Where", big, const("half_pi", np.pi / 2), b.op("Where", mid, const("quarter_pi", np.pi / 4),
                                                                   const("zero", 0.0)))
    z = b.op("Mul", t, t)
    poly = const("c3", _ATAN_POLYNOMIAL[3])
    for k in (2, 1, 0):
        poly = b.op("Add", b.op("Mul", poly, z), const(f"c{k}", _ATAN_POLYNOMIAL[k]))
    angle = b.op("Add", offset, b.op("Add", t, b.op("Mul", b.op("Mul", t, z), poly)))
    return b.op("Mul", b.op("Sign", x), angle)


set_decomposition("Cosh", _decompose_formula(lambda b, x, c, _: _exp_pair(b, x, c, "Add")))
set_decomposition("Sinh", _decompose_formula(lambda b, x, c, _: _exp_pair(b, x, c, "Sub")))
set_decomposition("Tan", _decompose_formula(lambda b, x, c, _: b.op("Div", b.op("Sin", x), b.op("Cos", x))))
set_decomposition("Asinh", _decompose_formula(lambda b, x, c, _: _asinh(b, x, c)))
set_decomposition("Acosh", _decompose_formula(lambda b, x, c, _: b.op("Log", b.op(
    "Add", x, b.op("Sqrt", b.op("Sub", b.op("Mul", x, x), c("one", 1.0)))))))
set_decomposition("Atanh", _decompose_formula(lambda b, x, c, _: b.op("Mul", c("half", 0.5), b.op(
    "Log", b.op("Div", b.op("Add", c("one", 1.0), x), b.op("Sub", c("one_", 1.0), x))))))
set_decomposition("Celu", _decompose_formula(_celu))
set_decomposition("Atan", _decompose_formula(lambda b, x, c, _: _atan(b, x, c)))
set_decomposition("Asin", _decompose_formula(lambda b, x, c, _: b.op("Atan", b.op("Div", x, b.op("Sqrt", b.op(
    "Mul", b.op("Sub", c("one", 1.0), x), b.op("Add", c("one_", 1.0), x)))))))
set_decomposition("Acos", _decompose_formula(lambda b, x, c, _: b.op("Mul", c("two", 2.0), b.op("Atan", b.op(
    "Sqrt", b.op("Div", b.op("Sub", c("one", 1.0), x), b.op("Add", c("one_", 1.0), x)))))))
set_decomposition("Mish", _decompose_formula(lambda b, x, c, _: b.op("Mul", x, b.op("Tanh", b.op("Softplus", x)))))
set_decomposition("IsNaN", _decompose_formula(lambda b, x, c, _: b.op("Not", b.op("Equal", x, x))))
set_decomposition("Shrink", _decompose_formula(_shrink))
set_decomposition("Swish", _decompose_formula(_swish))
set_decomposition("ThresholdedRelu", _decompose_formula(lambda b, x, c, a: b.op(
    "Where", b.op("Greater", x, c("alpha", a["alpha"])), x, c("zero", 0.0))))


def _decompose_cast_like(graph, node):
    """A Cast to the second input's dtype."""
    x, target = node.inputs
    if target.dtype is None:
        return False
    a = attrs_of(node)
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("Cast", x, to=dtypes.name(target.dtype), saturate=a["saturate"],
                                   round_mode=a["round_mode"])])
    return True


set_decomposition("CastLike", _decompose_cast_like)


def _decompose_is_inf(graph, node):
    """Comparisons with the largest finite value (a constant infinity would not survive every converter)."""
    x = node.inputs[0]
    if x.dtype is None or x.dtype.kind != "f":
        return False
    b = Builder.replacing(node)
    positive, negative = node.attrs.get("detect_positive", 1), node.attrs.get("detect_negative", 1)
    largest = b.const(np.array(np.finfo(x.dtype).max, dtype=x.dtype), b.name("largest"))
    if positive and negative:
        y = b.op("Greater", b.op("Abs", x), largest)
    elif positive:
        y = b.op("Greater", x, largest)
    elif negative:
        y = b.op("Less", x, b.op("Neg", largest))
    else:  # detects nothing: false everywhere, NaN included
        y = b.op("Greater", b.op("Abs", x), b.op("Abs", x))
    graph.replace_node(node, [y])
    return True


set_decomposition("IsInf", _decompose_is_inf)


#: integer types some runtimes (LiteRT outside quantized models) have no comparison or Max/Min/Clip kernels for
#: the logical ops, which take bool operands (frameworks read any other operand as true where it is not zero: a reader
#: casts it to bool first)
LOGICAL = frozenset({"And", "Or", "Xor", "Not"})
NARROW_INTEGERS = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))
COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")


def _decompose_widened(graph, node):
    """The op on its 8/16-bit integer inputs widened to int32, the result cast back when it is a number: exact,
    since comparisons do not depend on the width and Max/Min/Clip return one of their inputs' values. Max and
    Min of other types (or of more than two inputs) chain instead."""
    dtype = node.inputs[0].dtype
    if dtype is None or np.dtype(dtype) not in NARROW_INTEGERS or node.op in ("Max", "Min") and len(node.inputs) > 2:
        return _decompose_variadic(graph, node) if node.op in ("Max", "Min") else False
    b = Builder.replacing(node)
    wide = [None if v is None else b.op("Cast", v, to="int32") for v in node.inputs]
    out = b.op(node.op, *wide, **{k: v for k, v in node.attrs.items()})
    graph.replace_node(node, [out if node.op in COMPARISONS else b.op("Cast", out, to=str(np.dtype(dtype)))])
    return True


for _op in (*COMPARISONS, "Max", "Min"):
    set_decomposition(_op, _decompose_widened)


def _decompose_clip(graph, node):
    """Bounds that are tensors (torch.clamp's, PhiMoE's router) as Max then Min, which broadcast them; scalar
    bounds of narrow integers widened (`_decompose_widened`)."""
    if all(v is None or v.shape == () for v in node.inputs[1:]):
        return _decompose_widened(graph, node)
    b = Builder.replacing(node)
    out, low, high = node.inputs[0], node.input(1), node.input(2)
    if low is not None:
        out = b.op("Max", out, low)
    if high is not None:
        out = b.op("Min", out, high)
    graph.replace_node(node, [out])
    return True


set_decomposition("Clip", _decompose_clip)


def _decompose_narrowed(graph, node):
    """An int64 Div or Abs computed in int32 when its operands are proven to lie in int32's range (shape dims,
    indices into an axis, small constants and their arithmetic: ops/integer_range.py), its result cast back:
    exact, for runtimes without 64-bit integer kernels of the op (LiteRT)."""
    if node.inputs[0].dtype is None or np.dtype(node.inputs[0].dtype) != np.int64:
        return False
    known: dict = {}
    bounds = [integer_range(v, known) for v in node.inputs]
    if any(b is None or b[0] <= INT32[0] or b[1] > INT32[1] for b in bounds):  # int32's -2^31 has no magnitude
        return "its operands are not proven to lie in int32's range"
    b = Builder.replacing(node)
    narrow = [b.op("Cast", v, to="int32") for v in node.inputs]
    graph.replace_node(node, [b.op("Cast", b.op(node.op, *narrow), to="int64")])
    return True


for _op in ("Div", "Abs"):
    set_decomposition(_op, _decompose_narrowed)
