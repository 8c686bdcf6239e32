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


#: Darknet's activations that the IR states as arithmetic, as Darknet computes them (float64)
FORMULAS = {
    "loggy": lambda x: 2 / (1 + np.exp(-x)) - 1,
    "ramp": lambda x: x * (x > 0) + 0.1 * x,
    "plse": lambda x: np.where(x < -4, 0.01 * (x + 4), np.where(x > 4, 0.01 * (x - 4) + 1, 0.125 * x + 0.5)),
    "lhtan": lambda x: np.where(x < 0, 0.001 * x, np.where(x > 1, 0.001 * (x - 1) + 1, x)),
}
#: the IR ops those are read as
ARITHMETIC = frozenset({"Sigmoid", "Mul", "Add", "Sub", "Relu", "Clip"})


def composite_activation(node):
    """(input, inner nodes, name) when `node` ends a few arithmetic nodes that together compute one of FORMULAS
    on one input (proven on a probe spanning every piece of them); None otherwise."""
    if node.op not in ("Add", "Sub"):
        return None
    for x in _nearby_inputs(node):
        region = _between(x, node)
        if region is not None:
            name = _proven(region, x)
            if name:
                return x, region[:-1], name
    return None


def _nearby_inputs(node, depth: int = 4) -> list:
    """The computed values `node` reads within `depth` producers, nearest first."""
    found, frontier = [], [node]
    for _ in range(depth):
        following = []
        for n in frontier:
            for v in n.inputs:
                if v is not None and v.const is None and v not in found:
                    found.append(v)
                    if v.producer is not None and v.producer.op in ARITHMETIC:
                        following.append(v.producer)
        frontier = following
    return found


def _between(x, node):
    """The nodes on the paths from `x` to `node`, in graph order, when nothing else enters or leaves them."""
    region, stack = {node}, [node]
    while stack:
        for v in stack.pop().inputs:
            if v is None or v.const is not None or v is x:
                continue
            if v.producer is None or v.producer.op not in ARITHMETIC:
                return None
            if v.producer not in region:
                region.add(v.producer)
                stack.append(v.producer)
    graph = node.graph
    for n in region:
        for out in n.outputs:
            if n is not node and (out in graph.outputs or any(user not in region for user, _ in out.uses())):
                return None
    return [n for n in graph.nodes if n in region] if len(region) <= 6 else None


def _proven(region, x) -> str | None:
    from tensorbridge.reference.interpreter import run_node

    shape = x.shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    probe = np.linspace(-6, 6, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    values = {id(x): probe}
    try:
        for n in region:
            args = [None if v is None else v.const if v.const is not None else values[id(v)] for v in n.inputs]
            for v, out in zip(n.outputs, run_node(n, args)):
                values[id(v)] = out
    except (KeyError, ValueError, TypeError):
        return None
    got = values[id(region[-1].outputs[0])]
    for name, formula in FORMULAS.items():
        if got.shape == probe.shape and np.allclose(got, formula(probe.astype(np.float64)), rtol=1e-5, atol=1e-6):
            return name
    return None


def _check(node):
    return None if darknet_name(node) else f"Darknet has no activation computing {node.op} with these parameters"


@R.exports("Sigmoid", "Relu", "Tanh", "Mish", "SiLU", "LeakyRelu", "Elu", "Selu", "Clip", check=_check)
def write_activation(w, node):
    w.activate(node, darknet_name(node))


@R.exports("Sub", check=lambda n: None if composite_activation(n) else "Darknet subtracts only inside an activation")
def write_composite_activation(w, node):
    x, inner, name = composite_activation(node)
    w.activate(node, name, x, inner)
