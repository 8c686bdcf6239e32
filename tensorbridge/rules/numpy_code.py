"""Code rows shared by the targets whose tensor functions follow NumPy's API (`keras.ops`, `jax.numpy`): the
IR op written as `<namespace>.<numpy name>(...)`, the same way for each (see rules/code.py); and what their
layers share: channels-last convolution kernels, dense kernels [in, out], the ChannelPReLU helper's call, and
upsampling by integer factors."""

from __future__ import annotations

import ast
from collections.abc import Callable

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.ops.attention_layer import PROJECTIONS
from tensorbridge.rules.code import NOT_LITERAL, CodeTable, OpCall, Refused, Renamed, keywords, known

#: IR op -> NumPy's name for it, written as `<namespace>.<name>(*inputs)`
SAME_NAME = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative", "Sin": "sin", "Cos": "cos",
             "Floor": "floor", "Ceil": "ceil", "Reciprocal": "reciprocal", "Square": "square", "MatMul": "matmul",
             "Where": "where", "Pow": "power"}
REDUCTIONS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}


def numpy_writers(table: CodeTable, ns: str, shape: Callable[[ast.expr], ast.expr], norm: str) -> None:
    """Register on `table` the writers of NumPy-style namespace `ns` ("ops", "jnp"); `shape(x)` is the
    expression of x's shape, `norm` the vector norm's path."""
    def fn(name: str) -> str:
        return f"{ns}.{name}"

    for op, name in SAME_NAME.items():
        table.writes_call(op, fn(name))
    for op, symbol in (("Add", "+"), ("Sub", "-"), ("Mul", "*"), ("Div", "/")):
        table.writes(op, f"(the {symbol} operator)")(lambda c, s=symbol: P.binop(c.inputs[0], s, c.inputs[1]))
    table.writes_call("Max", fn("maximum"))
    table.writes_call("Min", fn("minimum"))
    table.writes("Range", fn("arange"))(lambda c: P.call(fn("arange"), *[c.attrs[k] for k in ("start", "stop", "step")
                                                                         if known(c.attrs[k]) is not None]))

    @table.writes("ConstantOfShape", fn("full"))
    def _constant(c):
        value = known(c.attrs["value"])
        if value in (0.0, 1.0):
            return P.call(fn("ones" if value else "zeros"), c.attrs["shape"])
        return P.call(fn("full"), c.attrs["shape"], c.attrs["value"])

    table.writes_call("Concat", fn("concatenate"), axis="axis")
    table.writes_call("Stack", fn("stack"), axis="axis")
    table.writes_call("SwapAxes", fn("swapaxes"), "axis1", "axis2")
    table.writes_call("Unsqueeze", fn("expand_dims"), "axis")
    table.writes_call("Split", fn("split"), "sections", axis="axis")
    table.writes("Einsum", fn("einsum"))(lambda c: P.call(fn("einsum"), c.attrs["equation"], *c.inputs[0]))
    table.writes("MaskedFill", fn("where"))(lambda c: P.call(fn("where"), c.inputs[1], c.attrs["value"], c.inputs[0]))
    table.writes("Identity", "(the input itself)")(lambda c: c.inputs[0])
    table.writes("Rank", fn("ndim"))(lambda c: P.call(fn("ndim"), c.inputs[0]))
    table.writes("Tril", fn("tril"))(lambda c: P.call(fn("tril"), c.inputs[0], **keywords(k=(c.attrs["k"], 0))))
    table.writes("Expand", fn("broadcast_to"))(
        lambda c: P.call(fn("broadcast_to"), c.inputs[0], expanded_shape(c.inputs[0], c.attrs["sizes"], shape)))
    table.writes("ExpandAs", fn("broadcast_to"))(lambda c: P.call(fn("broadcast_to"), c.inputs[0], shape(c.inputs[1])))
    table.writes("Reshape", fn("reshape"))(
        lambda c: P.call(fn("reshape"), c.inputs[0], shape_argument(c.attrs["shape"])))
    table.writes("Transpose", fn("transpose"))(
        lambda c: P.call(fn("transpose"), c.inputs[0], shape_argument(c.attrs["perm"])))
    table.writes("Shape", "(the shape)")(
        lambda c: shape(c.inputs[0]) if known(c.attrs["index"]) is None else P.subscript(shape(c.inputs[0]),
                                                                                         c.attrs["index"]))

    @table.writes("Clip", fn("clip"))
    def _clip(c):
        lo, hi = (known(c.attrs[k]) for k in ("min", "max"))
        if lo is None and hi is None:
            raise Refused("clamp without bounds")
        if hi is None:
            return P.call(fn("maximum"), c.inputs[0], c.attrs["min"])
        if lo is None:
            return P.call(fn("minimum"), c.inputs[0], c.attrs["max"])
        return P.call(fn("clip"), c.inputs[0], c.attrs["min"], c.attrs["max"])

    @table.writes("Flatten", fn("reshape"))
    def _flatten(c):
        start, end = known(c.attrs.get("start", 1)), known(c.attrs.get("end", -1))
        if end != -1 or not isinstance(start, int) or start < 0:
            raise Refused("flatten other than from a non-negative start_dim to the last dim")
        if start == 0:
            return P.call(fn("reshape"), c.inputs[0], (-1,))
        leading = P.call("tuple", P.subscript(shape(c.inputs[0]), P.slice_(None, start)))
        return P.call(fn("reshape"), c.inputs[0], P.binop(leading, "+", (-1,)))

    @table.writes("Squeeze", fn("squeeze"))
    def _squeeze(c):
        if known(c.attrs["axis"]) is None:
            return P.call(fn("squeeze"), c.inputs[0])
        return P.call(fn("squeeze"), c.inputs[0], c.attrs["axis"])

    def reduction(op, name):
        @table.writes(op, fn(name))
        def write(c):
            kwargs = {}
            if known(c.attrs["axis"]) is not None:
                kwargs["axis"] = c.attrs["axis"]
            if known(c.attrs["keepdims"]) is not False:
                kwargs["keepdims"] = c.attrs["keepdims"]
            return P.call(fn(name), c.inputs[0], **kwargs)

    for op, name in REDUCTIONS.items():
        reduction(op, name)

    @table.writes("LpNormalize", norm)
    def _normalize(c):
        x = c.inputs[0]
        return P.binop(x, "/", P.call(fn("maximum"), P.call(norm, x, axis=c.attrs["axis"], keepdims=True),
                                      c.attrs["epsilon"]))

    table.writes("GlobalAveragePool", fn("mean"))(
        lambda c: P.call(fn("mean"), c.inputs[0], axis=tuple(range(2, 2 + c.attrs["rank"])), keepdims=True))
    table.writes("Pad", fn("pad"))(lambda c: P.call(
        fn("pad"), c.inputs[0], leading_zero_pads(c.inputs[0], c.attrs["trailing_pads"], fn("ndim")),
        **keywords(constant_values=(c.attrs["value"], 0.0))))


def shape_argument(items):
    """A varargs shape (`view(b, -1)`, `view(shape)`, `view(*shape)`) as one expression."""
    if not isinstance(items, list):
        return items
    if len(items) == 1:
        only = items[0]
        if isinstance(only, ast.Starred):
            return only.value
        return P.lit((known(only),)) if isinstance(known(only), int) else only
    return ast.Tuple(list(items), ast.Load())


def expanded_shape(x: ast.expr, sizes: list, shape: Callable) -> ast.expr:
    """The target shape of `x.expand(*sizes)`: each -1 replaced by x's size of that dim (`shape(x)[i]`, counted
    from the end, as expand aligns trailing dims); a shape given as one expression is taken as it is."""
    if not isinstance(sizes, list):
        return sizes  # one shape expression (NumPy's broadcast_to): sizes as they are
    n = len(sizes)
    return ast.Tuple([P.subscript(shape(x), i - n) if known(s) == -1 else s for i, s in enumerate(sizes)], ast.Load())


def leading_zero_pads(x: ast.expr, trailing: list, ndim: str) -> ast.expr:
    """`[[0, 0]] * (ndim(x) - k) + trailing`: pad widths for every dim of `x` from those of its last k dims."""
    leading = P.binop(P.lit([[0, 0]]), "*", P.binop(P.call(ndim, x), "-", len(trailing)))
    return P.binop(leading, "+", ast.List(list(trailing), ast.Load()))


# -- what the two targets' layers share ----------------------------------------------------------------
def conv_weights(w, attrs) -> dict:
    """An IR convolution's weights as Keras' and Flax's: the kernel, OIHW (Conv) or (in, out/group, k...)
    (ConvTranspose), with its two leading axes moved last and swapped ((k..., in/group, out) / (k..., out, in))."""
    out = {"kernel": np.ascontiguousarray(np.moveaxis(w["W"], (0, 1), (-1, -2)))}
    if "B" in w:
        out["bias"] = w["B"]
    return out


def conv_weights_to_ir(w, attrs) -> dict:
    """The inverse of `conv_weights`: a channels-last kernel (k..., in/group, out) or (k..., out, in) -> the IR's."""
    out = {"W": np.ascontiguousarray(np.moveaxis(w["kernel"], (-1, -2), (0, 1)))}
    if "bias" in w:
        out["B"] = w["bias"]
    return out


#: an IR Dense's weights as Keras' and Flax's: the kernel [in, out] as it is
DENSE_WEIGHTS = Renamed(kernel="W", bias="B")
dense_weights = DENSE_WEIGHTS.from_ir


def write_channel_prelu(call: OpCall) -> ast.expr:
    """`ChannelPReLU(...)`: the helper class each target writes with the translation, holding its `slope`."""
    return P.call("ChannelPReLU", **keywords(num_parameters=(call.attrs["num_parameters"], 1),
                                             init=(call.attrs["init"], 0.25)))


def prelu_weights(w, attrs) -> dict:
    return {"slope": w["slope"]}


def integer_scale(attrs, who: str):
    """An upsampling's scale_factor as an int, or the variable holding it; Refused unless it is one."""
    scale = known(attrs["scale"])
    if scale is None:
        raise Refused("upsampling without scale_factor")
    if isinstance(scale, float) and scale.is_integer():
        return int(scale)
    if scale is NOT_LITERAL:
        return attrs["scale"]
    if not isinstance(scale, int):
        raise Refused(f"scale_factor={scale!r} ({who} upsamples by integer factors)")
    return scale


#: the layer of the TorchMultiheadAttention helpers (Keras, Flax) per IR projection
ATTENTION_LAYERS = ("q_proj", "k_proj", "v_proj", "out_proj")


def attention_weights(w: dict, attrs) -> dict:
    """The IR's query/key/value/output weights and biases ([in, out]) -> the attention helper's projection kernels
    and biases."""
    roles = zip(PROJECTIONS, ATTENTION_LAYERS)
    out = {f"{layer}.kernel": w[f"{role}_weight"] for role, layer in roles}
    out.update({f"{layer}.bias": w[f"{role}_bias"] for role, layer in zip(PROJECTIONS, ATTENTION_LAYERS)
                if f"{role}_bias" in w})
    return out
