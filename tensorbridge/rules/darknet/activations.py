"""Darknet's activations, both ways: the rows, the piecewise ones read as IR arithmetic, and the writer that puts
an activation in the layer before it (or an `[activation]` section).

Constants are Darknet's own (its selu uses 1.6732 and 1.0507, rounded). `mish` and `swish` come from the
YOLOv4 line of Darknet; `stair` (a training curiosity) has no rule, so it is refused.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.rules.darknet.base import R, activation, activation_row

activation_row("logistic", "Sigmoid")
activation_row("relu", "Relu")
activation_row("leaky", "LeakyRelu", alpha=0.1)
activation_row("relie", "LeakyRelu", alpha=0.01)
activation_row("elu", "Elu", alpha=1.0)
activation_row("selu", "Selu", alpha=1.6732, gamma=1.0507)
activation_row("tanh", "Tanh")
activation_row("mish", "Mish")
activation_row("swish", "SiLU")


@activation("linear", produces=())
def linear(imp, x):
    return x


@activation("hardtan", produces="Clip")
def hardtan(imp, x):
    return imp.b.op("Clip", x, imp.b.const(np.float32(-1)), imp.b.const(np.float32(1)), suffix="act")


@activation("loggy", produces=("Sigmoid", "Mul", "Sub"))
def loggy(imp, x):
    """2 / (1 + exp(-x)) - 1."""
    b = imp.b
    doubled = b.op("Mul", b.op("Sigmoid", x, suffix="sigmoid"), b.const(np.float32(2)), suffix="double")
    return b.op("Sub", doubled, b.const(np.float32(1)), suffix="act")


@activation("ramp", produces=("Relu", "Mul", "Add"))
def ramp(imp, x):
    """x * (x > 0) + 0.1 x."""
    b = imp.b
    return b.op("Add", b.op("Relu", x, suffix="relu"), b.op("Mul", x, b.const(np.float32(0.1)), suffix="tenth"),
                suffix="act")


def _clamped_line(imp, x, low: float, high: float, inner_slope: float, inner_shift: float, outer_slope: float):
    """inner_slope * clip(x, low, high) + inner_shift + outer_slope * (x - clip(x, low, high)): a line inside
    [low, high] continued with another slope outside it (plse, lhtan)."""
    b = imp.b
    clipped = b.op("Clip", x, b.const(np.float32(low)), b.const(np.float32(high)), suffix="clip")
    inner = clipped
    if inner_slope != 1:
        inner = b.op("Mul", clipped, b.const(np.float32(inner_slope)), suffix="inner")
    if inner_shift:
        inner = b.op("Add", inner, b.const(np.float32(inner_shift)), suffix="shift")
    outside = b.op("Mul", b.op("Sub", x, clipped, suffix="outside"), b.const(np.float32(outer_slope)), suffix="tail")
    return b.op("Add", inner, outside, suffix="act")


@activation("plse", produces=("Clip", "Mul", "Add", "Sub"))
def plse(imp, x):
    return _clamped_line(imp, x, -4, 4, 0.125, 0.5, 0.01)


@activation("lhtan", produces=("Clip", "Mul", "Add", "Sub"))
def lhtan(imp, x):
    return _clamped_line(imp, x, 0, 1, 1, 0, 0.001)


#: IR op (+ the attributes that must match) -> Darknet activation name, for the writer
WRITTEN = {"Sigmoid": "logistic", "Relu": "relu", "Tanh": "tanh", "Mish": "mish", "SiLU": "swish"}
LEAKY = {0.1: "leaky", 0.01: "relie"}


def darknet_name(node) -> str | None:
    """The Darknet activation that computes `node` exactly, or None."""
    if node.op in WRITTEN:
        return WRITTEN[node.op]
    if node.op == "LeakyRelu":
        return LEAKY.get(round(float(node.attrs.get("alpha", 0.01)), 7))
    if node.op == "Elu" and float(node.attrs.get("alpha", 1.0)) == 1.0:
        return "elu"
    if node.op == "Selu" and np.float32(node.attrs.get("alpha")) == np.float32(1.6732) \
            and np.float32(node.attrs.get("gamma")) == np.float32(1.0507):
        return "selu"
    if node.op == "Clip":
        bounds = [node.input(i).const if node.input(i) is not None else None for i in (1, 2)]
        if all(b is not None and b.size == 1 for b in bounds) and [float(b) for b in bounds] == [-1.0, 1.0]:
            return "hardtan"
    return None


def _check(node):
    return None if darknet_name(node) else f"Darknet has no activation computing {node.op} with these parameters"


@R.exports("Sigmoid", "Relu", "Tanh", "Mish", "SiLU", "LeakyRelu", "Elu", "Selu", "Clip", check=_check)
def write_activation(w, node):
    w.activate(node, darknet_name(node))
