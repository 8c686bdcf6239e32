"""Keras 3 <-> IR: activations, arithmetic and merge layers, casts, identities.

Each IR op's import converters (layers and `keras.ops` calls -> IR) and export writer (IR -> Keras
code) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import const_operand, hard_sigmoid_writer
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules.keras.base import (
    R,
    activate,
    activation,
    keras_op,
    layer,
    op_row,
    operand_value,
    to_numpy,
)


@layer("Activation", produces=())
def read_activation(imp, layer, inputs, node):
    return activate(imp, layer, inputs[0], suffix="")


@layer("ReLU", produces=("Relu", "Clip", "LeakyRelu"))
def read_relu(imp, layer, inputs, node):
    if layer.threshold:
        raise ModelError(f"{layer.name}: ReLU with a threshold is not supported")
    x = inputs[0]
    if layer.negative_slope:
        if layer.max_value is not None:
            raise ModelError(f"{layer.name}: ReLU with both negative_slope and max_value is not supported")
        return imp.emit("LeakyRelu", [x], {"alpha": float(layer.negative_slope)})
    if layer.max_value is not None:
        return imp.emit("Clip", [x, imp.const(0.0), imp.const(float(layer.max_value))])
    return imp.emit("Relu", [x])


@R.exports("Relu")
def write_relu(em, node):
    em.out(node, em.layer(node, "layers.ReLU", [], {}, [], em.tensor(node.inputs[0])))


@keras_op("Clip", produces="Clip")
def read_op_clip(imp, op, args, kwargs, node):
    x = args[0]
    return imp.emit("Clip", [x, imp.const(op.x_min, x.dtype), imp.const(op.x_max, x.dtype)])


@keras_op("Relu6", produces="Clip")
def read_op_relu6(imp, op, args, kwargs, node):
    x = args[0]
    return imp.emit("Clip", [x, imp.const(0.0, x.dtype), imp.const(6.0, x.dtype)])


@R.exports("Clip")
def write_clip(em, node):
    x, lo, hi = (list(node.inputs) + [None, None])[:3]
    lo_s, hi_s = em.scalar(lo), em.scalar(hi)
    if lo is None and hi is None:
        return em.alias(node, em.tensor(x))
    floating = x.dtype is None or x.dtype.kind == "f"
    if lo_s == 0 and hi_s is not None and floating:
        return em.out(node, em.layer(node, "layers.ReLU", [], {"max_value": float(hi_s)}, [], em.tensor(x)))
    limits = (float("-inf"), float("inf")) if floating else (int(np.iinfo(x.dtype).min), int(np.iinfo(x.dtype).max))

    def bound(v, s, default):
        return P.lit(s if not floating else float(s)) if s is not None else em.tensor(v) if v is not None else \
            P.lit(default)
    low, high = bound(lo, lo_s, limits[0]), bound(hi, hi_s, limits[1])
    if (lo is None or lo_s is not None) and (hi is None or hi_s is not None) and \
            (lo_s is None or hi_s is None or lo_s <= hi_s):
        return em.out(node, P.call("ops.clip", em.tensor(x), low, high))
    # a minimum above the maximum gives the maximum everywhere (TensorFlow's clip leaves that case undefined)
    em.out(node, P.call("ops.minimum", P.call("ops.maximum", em.tensor(x), low), high))


@keras_op("Gelu", produces="Gelu")
def read_op_gelu(imp, op, args, kwargs, node):
    return imp.emit("Gelu", [args[0]], {"approximate": "tanh" if op.approximate else "none"})


@R.exports("Gelu")
def write_gelu(em, node):
    approximate = node.attrs.get("approximate", "none") == "tanh"
    em.out(node, P.call("ops.gelu", em.tensor(node.inputs[0]), approximate=approximate))


@keras_op("HardSigmoid", produces="HardSigmoid")
def read_op_hard_sigmoid(imp, op, args, kwargs, node):
    return imp.emit("HardSigmoid", [args[0]], {"alpha": 1.0 / 6, "beta": 0.5})


R.add_export(("HardSigmoid",), hard_sigmoid_writer("ops.hard_sigmoid", "ops.clip"))


@layer("LeakyReLU", produces="LeakyRelu")
def read_leaky_relu(imp, layer, inputs, node):
    return imp.emit("LeakyRelu", [inputs[0]], {"alpha": float(layer.negative_slope)})


@keras_op("LeakyRelu", produces="LeakyRelu")
def read_op_leaky_relu(imp, op, args, kwargs, node):
    return imp.emit("LeakyRelu", [args[0]], {"alpha": float(op.negative_slope)})


@R.exports("LeakyRelu")
def write_leaky_relu(em, node):
    em.out(node, em.layer(node, "layers.LeakyReLU", [], {"negative_slope": node.attrs.get("alpha", 0.01)}, [],
                          em.tensor(node.inputs[0])))


@layer("ELU", produces="Elu")
def read_elu(imp, layer, inputs, node):
    return imp.emit("Elu", [inputs[0]], {"alpha": float(layer.alpha)})


@keras_op("Elu", produces="Elu")
def read_op_elu(imp, op, args, kwargs, node):
    return imp.emit("Elu", [args[0]], {"alpha": float(op.alpha)})


@R.exports("Elu")
def write_elu(em, node):
    em.out(node, P.call("ops.elu", em.tensor(node.inputs[0]), alpha=node.attrs.get("alpha", 1.0)))


@layer("PReLU", produces="PRelu")
def read_prelu(imp, layer, inputs, node):
    return imp.emit("PRelu", [inputs[0], imp.weight("alpha", to_numpy(layer.alpha))])


@R.exports("PRelu")
def write_prelu(em, node):
    """layers.PReLU: its alpha has the input's shape without the batch axis, 1 on the axes it shares."""
    x, slope = node.inputs
    s = const_operand(slope)
    if x.shape is None or s.ndim > len(x.shape) or (s.ndim == len(x.shape) and s.shape[0] != 1):
        xe = em.tensor(x)  # alpha excludes the batch axis: the formula
        return em.out(node, P.call("ops.where", P.call("ops.less", xe, 0.0),
                                   P.call("ops.multiply", xe, em.tensor(slope)), xe))
    alpha = s.reshape((1,) * (len(x.shape) - 1 - s.ndim) + s.shape[-(len(x.shape) - 1):]) if s.ndim else \
        s.reshape((1,) * (len(x.shape) - 1))
    shared = [i + 1 for i, d in enumerate(alpha.shape) if d == 1 and x.shape[i + 1] != 1]
    em.out(node, em.layer(node, "layers.PReLU", [], {"shared_axes": shared} if shared else {},
                          [alpha.astype(np.float32)], em.tensor(x)))


_MERGE_OPS = {"Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Maximum": "Max", "Minimum": "Min", "Average": "Mean"}


@layer("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum",
       produces=("Add", "Sub", "Mul", "Mean", "Max", "Min"))
def read_merge(imp, layer, inputs, node):
    op = _MERGE_OPS[type(layer).__name__]
    if op in ("Max", "Min", "Mean"):
        return imp.emit(op, inputs)
    y = inputs[0]
    for i, v in enumerate(inputs[1:]):
        last = i == len(inputs) - 2
        y = imp.emit(op, [y, v], suffix="" if last else f"{op.lower()}{i}")
    return y


def _bias_add_safe(a, b) -> bool:
    """Whether Keras's TF `ops.add(a, b)` computes a + b: it takes a `b` that squeezes to a vector of a's dim 1
    or last dim as a bias on that axis (tf.nn.bias_add), which is a + b only when b's one long axis is its last
    and lines up with a's last; its channels-first form also breaks TensorFlow's TFLite converter."""
    if a.shape is None or b.shape is None or len(a.shape) < 2:
        return True
    long = [i for i, d in enumerate(b.shape) if not isinstance(d, int) or d > 1]
    if len(long) != 1 or not isinstance(b.shape[long[0]], int) or b.shape[long[0]] not in (a.shape[1], a.shape[-1]):
        return True
    return long[0] == len(b.shape) - 1 and a.shape[-1] == b.shape[-1]


@R.exports("Add", "Sum")
def write_add(em, node):
    """Pairwise ops.add with constants first, in an order Keras adds as written (see _bias_add_safe); where
    neither order is, a - (-b), which is exactly a + b."""
    values = sorted(node.inputs, key=lambda v: v.const is None)
    total, acc = em.tensor(values[0]), values[0]
    for v in values[1:]:
        if _bias_add_safe(acc, v):
            total = P.call("ops.add", total, em.tensor(v))
        elif _bias_add_safe(v, acc):
            total = P.call("ops.add", em.tensor(v), total)
        else:
            total = P.call("ops.subtract", total, P.call("ops.negative", em.tensor(v)))
        acc = _Shaped(_broadcast(acc.shape, v.shape))
    em.out(node, total)


class _Shaped:
    """A partial sum's shape, for _bias_add_safe."""

    def __init__(self, shape):
        self.shape = shape


def _broadcast(a, b):
    if a is None or b is None or not all(isinstance(d, int) for d in (*a, *b)):
        return None
    return tuple(np.broadcast_shapes(tuple(a), tuple(b)))


@R.exports("Where")
def write_where(em, node):
    em.out(node, P.call("ops.where", *[em.tensor(v) for v in node.inputs]))


@keras_op("Cast", produces="Cast")
def read_op_cast(imp, op, args, kwargs, node):
    return imp.emit("Cast", [args[0]], {"to": dtypes.name(dtypes.dtype(str(op.dtype)))})


@keras_op("ConvertToTensor", produces=("Cast",))
def read_op_convert_to_tensor(imp, op, args, kwargs, node):
    """ops.convert_to_tensor: the tensor itself, cast where it names another dtype."""
    x = operand_value(imp, args[0], None)
    if op.dtype is None or x.dtype is None or dtypes.dtype(str(op.dtype)) == x.dtype:
        return x
    return imp.emit("Cast", [x], {"to": dtypes.name(dtypes.dtype(str(op.dtype)))})


@R.exports("Cast")
def write_cast(em, node):
    em.out(node, P.call("ops.cast", em.tensor(node.inputs[0]), dtypes.name(dtypes.dtype(node.attrs["to"]))))


@R.exports("BitCast", check=lambda node: "BitCast to bool (TensorFlow's bitcast takes no bool)"
           if dtypes.name(dtypes.dtype(node.attrs["to"])) == "bool" else None)
def write_bit_cast(em, node):
    """ops.view: the same bits read as a type of the same width; a bool's byte (0 or 1) is its value, cast."""
    x, to = node.inputs[0], dtypes.name(dtypes.dtype(node.attrs["to"]))
    view = "ops.cast" if x.dtype is not None and x.dtype.kind == "b" else "ops.view"
    em.out(node, P.call(view, em.tensor(x), to))


@keras_op("Round", produces="Round")
def read_op_round(imp, op, args, kwargs, node):
    if op.decimals:
        raise ModelError(f"{op.name}: ops.round with decimals={op.decimals} is not supported")
    return imp.emit("Round", [args[0]])


@keras_op("StopGradient", produces=())
def read_op_stop_gradient(imp, op, args, kwargs, node):
    """ops.stop_gradient (GPT-OSS's router): the value itself at inference."""
    return args[0]


@layer("Dropout", "SpatialDropout1D", "SpatialDropout2D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
       "Identity", "ActivityRegularization", produces=())
def read_identity(imp, layer, inputs, node):
    return inputs[0]


@R.exports("Identity", "Dropout")
def write_identity(em, node):
    em.var[id(node.outputs[0])] = em.tensor(node.inputs[0])


@layer("Rescaling", produces="Mul")
def read_rescaling(imp, layer, inputs, node):
    y = imp.emit("Mul", [inputs[0], imp.weight("scale", np.asarray(layer.scale, np.float32))],
                 suffix="scale" if layer.offset else "")
    if layer.offset:
        y = imp.emit("Add", [y, imp.weight("offset", np.asarray(layer.offset, np.float32))])
    return y


@layer("Normalization", produces="Sub")
def read_normalization(imp, layer, inputs, node):
    if layer.invert:
        raise ModelError(f"{layer.name}: inverted Normalization is not supported")
    mean, var = to_numpy(layer.mean), to_numpy(layer.variance)
    std = np.maximum(np.sqrt(var), np.float32(1e-7)).astype(np.float32)  # keras.backend.epsilon()
    y = imp.emit("Sub", [inputs[0], imp.weight("mean", mean.astype(np.float32))], suffix="center")
    return imp.emit("Div", [y, imp.weight("std", std)])


# -- rows: activation names and keras.ops classes <-> IR ops <-> Keras code -------------------------------
activation("linear", None)
activation("relu", "Relu")
activation("relu6", "Clip", min=0.0, max=6.0)
activation("sigmoid", "Sigmoid", layer_name="sigmoid")
activation("tanh", "Tanh", layer_name="tanh")
activation("softmax", "Softmax", axis=-1)
activation("log_softmax", "LogSoftmax", axis=-1)
activation("swish", "SiLU")
activation("silu", "SiLU", layer_name="silu")
activation("gelu", "Gelu", approximate="none")
activation("elu", "Elu")
activation("selu", "Selu", layer_name="selu")
activation("softplus", "Softplus", layer_name="softplus")
activation("softsign", "Softsign", layer_name="softsign")
activation("exponential", "Exp")
activation("hard_sigmoid", "HardSigmoid", alpha=0.16666666666666666, beta=0.5)
activation("hard_silu", "HardSwish", layer_name="hard_silu")
activation("hard_swish", "HardSwish")
activation("mish", "Mish", layer_name="mish")
activation("leaky_relu", "LeakyRelu", alpha=0.2)
op_row("Add", "Add")
op_row("Subtract", "Sub", "ops.subtract")
op_row("Multiply", "Mul", "ops.multiply")
op_row("Divide TrueDivide", "Div")


@R.exports("Div")
def write_div(em, node):
    """ops.divide; integers divide rounding towards zero (ops.floor_divide of the magnitudes, signed)."""
    a, b = (em.tensor(v) for v in node.inputs)
    kind = node.inputs[0].dtype.kind if node.inputs[0].dtype is not None else "f"
    if kind == "u":
        return em.out(node, P.call("ops.floor_divide", a, b))
    if kind != "i":
        return em.out(node, P.call("ops.divide", a, b))
    magnitude = P.call("ops.floor_divide", P.call("ops.abs", a), P.call("ops.abs", b))
    opposite = P.call("ops.not_equal", P.call("ops.less", a, 0), P.call("ops.less", b, 0))
    em.out(node, P.call("ops.where", opposite, P.call("ops.negative", magnitude), magnitude))
op_row("Power", "Pow", "ops.power")
op_row("Maximum", "Max", "ops.maximum")
op_row("Minimum", "Min", "ops.minimum")
op_row("Equal", "Equal", "ops.equal")
op_row("Greater", "Greater", "ops.greater")
op_row("GreaterEqual", "GreaterOrEqual", "ops.greater_equal")
op_row("Less", "Less", "ops.less")
op_row("LessEqual", "LessOrEqual", "ops.less_equal")
op_row("LogicalAnd", "And", "ops.logical_and")
op_row("LogicalOr", "Or", "ops.logical_or")
op_row("LogicalNot", "Not", "ops.logical_not")
op_row("Absolute Abs", "Abs", "ops.abs")
op_row("Negative", "Neg", "ops.negative")
op_row("Exp", "Exp", "ops.exp")
op_row("Log", "Log", "ops.log")
op_row("Sqrt", "Sqrt", "ops.sqrt")
op_row("Sin", "Sin", "ops.sin")
op_row("Cos", "Cos", "ops.cos")
op_row("Tanh", "Tanh")
op_row("Floor", "Floor", "ops.floor")
op_row("Ceil", "Ceil", "ops.ceil")
op_row("Sign", "Sign", "ops.sign")
op_row("Reciprocal", "Reciprocal", "ops.reciprocal")
op_row("Isnan", "IsNaN", "ops.isnan")
op_row("Erf", "Erf", "ops.erf")
op_row("Relu", "Relu")
op_row("Sigmoid", "Sigmoid")
op_row("Silu", "SiLU")
op_row("Softplus", "Softplus")
op_row("HardSilu", "HardSwish")
op_row("Matmul", "MatMul")
op_row("Where", "Where")
op_row(None, "Round", "ops.round")
