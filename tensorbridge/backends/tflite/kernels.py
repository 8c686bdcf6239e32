"""TFLite kernels for IR ops: one `Rule` per op, what an integer kernel accepts, and the IR reads they share.

A rule's `write(ctx)` returns the builtin's inputs (tensor indices from the context: `ctx.x(i)` in
int8 or float, `ctx.weight`, `ctx.bias`, `ctx.index_const`) and its options table; `ctx.builtin`
overrides the builtin when it depends on attributes (a depthwise Conv, a Clip that is ReLU6).
A new op is one writer and one line in RULES.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tensorbridge.backends.tflite.flatbuffer import SAME, VALID, Quant
from tensorbridge.ir import dtypes
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.reference.interpreter import run_node

if TYPE_CHECKING:
    from tensorbridge.backends.tflite.integer import Context


class NotInteger(Exception):
    """The op's operands do not fit an integer kernel: it is written in float instead."""


@dataclass
class Rule:
    """How one IR op becomes one TFLite builtin: `write(ctx)` returns its inputs and options."""

    builtin: str
    write: Callable
    data: tuple[int, ...] | None = (0,)  # activation inputs (None: all)
    keeps_quant: bool = False  # the int8 kernel cannot rescale: output at the input's parameters
    uniform: bool = False  # inputs must share the output's parameters (XNNPACK's int8 CONCATENATION)
    fixed_out: tuple[float, int] | None = None  # the int8 kernel's fixed output scale and zero point
    fuses: bool = False  # takes a fused activation
    int_version: int = 2


def rule_accepts(ctx: Context, rule: Rule) -> bool:
    """Integer kernels need int8 per-tensor data, zero-point-0 int8 weights and an int32 bias at x*w scale."""
    if any(p.axis is not None or p.dtype != "int8" for p in ctx.in_params):
        return False
    check = _WEIGHT_CHECKS.get(ctx.node.op)
    return check is None or check(ctx)


def _weighted(ctx: Context, b_index: int | None = 2) -> bool:
    """Input 1 an int8 zero-point-0 constant; input `b_index`, if present, a float constant or an int32 one at
    x_scale*w_scale."""
    node = ctx.node
    dq = const_dq(node.input(1))
    if dq is None or dq.inputs[0].dtype != np.int8 or np.any(np.asarray(params(dq).zero_point) != 0):
        return False
    if b_index is None or node.input(b_index) is None:
        return True
    b = node.input(b_index)
    if b.const is not None and b.dtype.kind == "f":
        return True  # a float bias (PT2E keeps one) is quantized to int32 at x_scale*w_scale, as ctx.bias says
    bq = const_dq(b)
    if bq is None or bq.inputs[0].dtype != np.int32:
        return False
    expect = np.float64(ctx.in_params[0].scale).ravel() * np.asarray(params(dq).scale, np.float64).ravel()
    got = np.asarray(params(bq).scale, np.float64).ravel()
    return got.size in (1, expect.size) and bool(np.allclose(got, expect, rtol=1e-6, atol=0))


def _fc_ok(ctx: Context) -> bool:
    node = ctx.node
    if node.op == "Gemm":
        return _gemm_plain(node) and _weighted(ctx)
    return _weighted(ctx, 2 if node.op == "Dense" else None)


_WEIGHT_CHECKS = {"Conv": _weighted, "Gemm": _fc_ok, "Dense": _fc_ok, "MatMul": _fc_ok}


# --- helpers over the IR -----------------------------------------------------------------------

def params(node: Node | None) -> Quant | None:
    """Scale / zero point / axis of a Q or DQ node with constant parameters."""
    if node is None or node.input(1) is None or node.input(1).const is None or node.attrs.get("block_size", 0):
        return None
    scale = np.asarray(node.inputs[1].const, np.float32)
    zp_v = node.input(2)
    storage = node.inputs[0].dtype if node.op == "DequantizeLinear" else node.outputs[0].dtype
    zp = np.asarray(zp_v.const if zp_v is not None else np.zeros(scale.shape), np.int64)
    if zp_v is not None and zp_v.const is None:
        return None
    axis = None
    if scale.size > 1 or scale.ndim == 1 and node.op == "DequantizeLinear" and node.inputs[0].const is not None:
        rank = len(node.inputs[0].shape)
        axis = node.attrs.get("axis", 1) % rank
    storage = dtypes.name(storage) if storage is not None else None
    if storage == "uint8" and (node.op == "QuantizeLinear" or node.inputs[0].const is None):
        return Quant(scale.ravel(), zp.ravel() - 128, axis, "int8")  # the same reals, held as int8 (integer.py)
    return Quant(scale.ravel(), zp.ravel(), axis, storage)


def unshifted(q: Quant) -> Quant:
    return Quant(q.scale, q.zero_point + 128, q.axis, "uint8")


def activation_params(v: Value | None) -> Quant | None:
    """Per-tensor int8 parameters when `v` is DequantizeLinear of a computed int8 tensor."""
    dq = v.producer if v is not None else None
    if dq is None or dq.op != "DequantizeLinear" or dq.inputs[0].const is not None:
        return None
    q = params(dq)
    return q if q is not None and q.axis is None else None


def const_params(v: Value | None) -> Quant | None:
    """Per-tensor parameters of a quantized constant operand (the other side of an int8 ADD or MUL)."""
    dq = const_dq(v)
    q = params(dq) if dq is not None else None
    return q if q is not None and q.axis is None else None


def const_dq(v: Value | None) -> Node | None:
    dq = v.producer if v is not None else None
    if dq is not None and dq.op == "DequantizeLinear" and dq.inputs[0].const is not None and params(dq) is not None:
        return dq
    return None


def dequantized(dq: Node) -> np.ndarray:
    return np.asarray(run_node(dq, [None if v is None else v.const for v in dq.inputs])[0], np.float32)



def activation(node: Node) -> str | None:
    if node.op == "Relu":
        return "RELU"
    if node.op == "Clip":
        lo, hi = (_scalar(node.input(i)) for i in (1, 2))
        return {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, None): "RELU"}.get((lo, hi))
    return None


def _scalar(v: Value | None):
    return None if v is None or v.const is None else float(np.asarray(v.const).ravel()[0])


def float_name(v: Value) -> str:
    return dtypes.name(v.dtype) if v.dtype is not None else "float32"


def _gemm_plain(node: Node) -> bool:
    a = node.attrs
    return a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and not a.get("transA", 0)


# --- op writers ---------------------------------------------------------------------------------

def _padding(ctx: Context, in_shape, kernel, strides, dilations, out_shape) -> tuple[int, list[int] | None]:
    """TFLite padding of the NHWC spatial dims: SAME, VALID, or VALID after explicit pads [top, left, bottom, right]."""
    a = ctx.node.attrs
    auto = a.get("auto_pad", "NOTSET")
    if auto == "SAME_UPPER":
        return SAME, None
    if auto == "VALID":
        return VALID, None
    if auto not in ("NOTSET", None):
        raise NotInteger(f"auto_pad {auto} has no TFLite padding")
    pads = list(a.get("pads") or [0] * 4)
    if not any(pads):
        return VALID, None
    same = []
    for size, k, s, d, o in zip(in_shape[1:3], kernel, strides, dilations, out_shape[1:3]):
        total = max((o - 1) * s + (k - 1) * d + 1 - size, 0)
        same.append((total // 2, total - total // 2))
    if pads == [same[0][0], same[1][0], same[0][1], same[1][1]] and \
            all(-(-size // s) == o for size, s, o in zip(in_shape[1:3], strides, out_shape[1:3])):
        return SAME, None
    return VALID, pads


def _explicit_pad(ctx: Context, x: int, pads: list[int], lowest: bool) -> int:
    """PAD (zero; an int8 tensor pads with its zero point) or, `lowest`, PADV2 with the type's lowest value,
    before a VALID window op."""
    lw = ctx.lw
    src = lw.w.tensors[x]
    shape = list(src.shape)
    shape[1] += pads[0] + pads[2]
    shape[2] += pads[1] + pads[3]
    out = lw.w.tensor(f"{ctx.node.name}.padded", shape, src.dtype, quant=src.quant)
    paddings = ctx.index_const("paddings", [[0, 0], [pads[0], pads[2]], [pads[1], pads[3]], [0, 0]])
    version = 2 if ctx.integer else 1
    if not lowest:
        lw.w.op("PAD", [x, paddings], [out], version=version)
        return out
    value = np.asarray(np.iinfo(np.dtype(src.dtype)).min if ctx.integer else np.finfo(np.float32).min,
                       np.dtype(src.dtype))
    lw.w.op("PADV2", [x, paddings, lw.constant(f"{ctx.node.name}.fill", value, src.quant)], [out], version=version)
    return out


def _window(ctx: Context, kernel, pad: str = "zero"):
    """The window's input, padding, strides, dilations; explicit pads are written as PAD ("zero"), PADV2
    ("lowest"), or refused ("refuse": an average that must leave the padding out)."""
    node = ctx.node
    if node.attrs.get("layout") != "NHWC" or len(node.inputs[0].shape) != 4:
        raise NotInteger("only 2-D windows in NHWC are written")
    a = node.attrs
    strides = list(a.get("strides") or [1, 1])
    dilations = list(a.get("dilations") or [1, 1])
    x = ctx.x(0)
    padding, pads = _padding(ctx, node.inputs[0].shape, kernel, strides, dilations, node.outputs[0].shape)
    if pads is not None:
        if pad == "refuse":
            raise NotInteger(f"pads {pads} exclude padding from the average only when they equal SAME")
        x = _explicit_pad(ctx, x, pads, lowest=pad == "lowest")
    return x, padding, strides, dilations


def _conv(ctx: Context):
    node = ctx.node
    w_shape = node.inputs[1].shape
    x, padding, strides, dil = _window(ctx, w_shape[2:])
    opts = {"Padding": padding, "StrideW": strides[1], "StrideH": strides[0], "DilationWFactor": dil[1],
            "DilationHFactor": dil[0], "FusedActivationFunction": ctx.activation()}
    group = node.attrs.get("group", 1)
    if group == 1:
        return [x, ctx.weight(1, (0, 2, 3, 1)), ctx.bias(2)], ("Conv2DOptions", opts)
    if group == node.inputs[0].shape[-1] and w_shape[1] == 1:
        opts["DepthMultiplier"] = w_shape[0] // group
        ctx.builtin = "DEPTHWISE_CONV_2D"
        return [x, ctx.weight(1, (1, 2, 3, 0)), ctx.bias(2)], ("DepthwiseConv2DOptions", opts)
    raise NotInteger(f"grouped convolution (group={group}) is not written")


def _fc(ctx: Context):
    node = ctx.node
    if node.op == "Gemm":
        if not _gemm_plain(node):
            raise NotInteger("Gemm with alpha/beta/transA is not written")
        perm, bias = ((0, 1) if node.attrs.get("transB", 0) else (1, 0)), 2
    elif node.op == "Dense":
        perm, bias = (1, 0), 2
    else:
        if node.inputs[1].shape is None or len(node.inputs[1].shape) != 2:
            raise NotInteger("MatMul is written as FULLY_CONNECTED only with a 2-D constant right operand")
        perm, bias = (1, 0), None
    weight = ctx.weight(1, perm)
    opts = {"FusedActivationFunction": ctx.activation(), "KeepNumDims": len(node.inputs[0].shape) > 2}
    return [ctx.x(0), weight, ctx.bias(bias) if bias is not None else -1], ("FullyConnectedOptions", opts)


def _binary(table: str):
    def write(ctx: Context):
        return [_operand(ctx, 0), _operand(ctx, 1)], (table, {"FusedActivationFunction": ctx.activation()})
    return write


def _operand(ctx: Context, i: int) -> int:
    dq = const_dq(ctx.node.inputs[i]) if ctx.integer else None
    if dq is not None:
        return ctx.lw.constant(dq.inputs[0].name, np.asarray(dq.inputs[0].const), params(dq))
    return ctx.x(i)


def _pool(average: bool):
    def write(ctx: Context):
        k = ctx.node.attrs["kernel_shape"]
        if ctx.node.attrs.get("ceil_mode", 0) or list(ctx.node.attrs.get("dilations") or [1, 1]) != [1, 1]:
            raise NotInteger("ceil_mode and dilated pooling are not written")
        pad = ("zero" if ctx.node.attrs.get("count_include_pad") else "refuse") if average else "lowest"
        x, padding, strides, _ = _window(ctx, k, pad)
        return [x], ("Pool2DOptions", {"Padding": padding, "StrideW": strides[1], "StrideH": strides[0],
                                       "FilterWidth": k[1], "FilterHeight": k[0],
                                       "FusedActivationFunction": ctx.activation()})
    return write


def _global(ctx: Context):
    if ctx.node.attrs.get("layout") != "NHWC":
        raise NotInteger("global pooling is written in NHWC only")
    rank = len(ctx.node.inputs[0].shape)
    return [ctx.x(0), ctx.index_const("axes", list(range(1, rank - 1)))], ("ReducerOptions", {"KeepDims": True})


def _reduce(ctx: Context):
    node = ctx.node
    rank = len(node.inputs[0].shape)
    axes = ctx.const(1) if node.input(1) is not None else node.attrs.get("axes")
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in np.asarray(axes).ravel()]
    keep = bool(node.attrs.get("keepdims", 1))
    return [ctx.x(0), ctx.index_const("axes", axes)], ("ReducerOptions", {"KeepDims": keep})


def _reshape(ctx: Context):
    return [ctx.x(0), ctx.index_const("shape", ctx.lw._shape(ctx.node.outputs[0]))], None


def _transpose(ctx: Context):
    perm = ctx.node.attrs.get("perm") or list(reversed(range(len(ctx.node.inputs[0].shape))))
    return [ctx.x(0), ctx.index_const("perm", perm)], None


def _concat(ctx: Context):
    rank = len(ctx.node.outputs[0].shape)
    inputs = [ctx.x(i) for i in range(len(ctx.node.inputs))]
    return inputs, ("ConcatenationOptions", {"Axis": ctx.node.attrs["axis"] % rank,
                                             "FusedActivationFunction": ctx.activation()})


def _pad(ctx: Context):
    node = ctx.node
    if node.attrs.get("mode", "constant") != "constant" or node.input(3) is not None:
        raise NotInteger("only constant Pad over all axes is written")
    pads = ctx.const(1)
    value = ctx.const(2)
    if pads is None or value is not None and float(np.asarray(value).ravel()[0]) != 0.0:
        raise NotInteger("Pad is written with constant pads and a zero fill")
    rank = len(node.inputs[0].shape)
    pads = np.asarray(pads, np.int64).ravel()
    return [ctx.x(0), ctx.index_const("paddings", np.stack([pads[:rank], pads[rank:]], 1))], None


def _unary(ctx: Context):
    return [ctx.x(0)], None


def _activation_op(ctx: Context):
    ctx.builtin = activation(ctx.node)
    if ctx.builtin is None:
        raise NotInteger("Clip is written only as ReLU, ReLU6 or ReLU(-1, 1)")
    return [ctx.x(0)], None


def _softmax(ctx: Context):
    rank = len(ctx.node.inputs[0].shape)
    if ctx.node.attrs.get("axis", -1) % rank != rank - 1:
        raise NotInteger("SOFTMAX works on the last axis only")
    return [ctx.x(0)], ("SoftmaxOptions", {"Beta": 1.0})


def _leaky(ctx: Context):
    return [ctx.x(0)], ("LeakyReluOptions", {"Alpha": float(ctx.node.attrs.get("alpha", 0.01))})


RULES: dict[str, Rule] = {
    "Conv": Rule("CONV_2D", _conv, fuses=True, int_version=3),
    "Gemm": Rule("FULLY_CONNECTED", _fc, fuses=True, int_version=4),
    "Dense": Rule("FULLY_CONNECTED", _fc, fuses=True, int_version=4),
    "MatMul": Rule("FULLY_CONNECTED", _fc, fuses=True, int_version=4),
    "Add": Rule("ADD", _binary("AddOptions"), data=None, fuses=True),
    "Sub": Rule("SUB", _binary("SubOptions"), data=None, fuses=True),
    "Mul": Rule("MUL", _binary("MulOptions"), data=None, fuses=True),
    "MaxPool": Rule("MAX_POOL_2D", _pool(average=False), keeps_quant=True, fuses=True),
    "AveragePool": Rule("AVERAGE_POOL_2D", _pool(average=True), keeps_quant=True, fuses=True),
    "GlobalAveragePool": Rule("MEAN", _global),
    "GlobalMaxPool": Rule("REDUCE_MAX", _global, keeps_quant=True),
    "ReduceMean": Rule("MEAN", _reduce),
    "ReduceMax": Rule("REDUCE_MAX", _reduce, keeps_quant=True),
    "Reshape": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Flatten": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Squeeze": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Unsqueeze": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Transpose": Rule("TRANSPOSE", _transpose, keeps_quant=True),
    "Concat": Rule("CONCATENATION", _concat, data=None, uniform=True),
    "Pad": Rule("PAD", _pad, keeps_quant=True),
    "Relu": Rule("RELU", _activation_op),
    "Clip": Rule("RELU6", _activation_op),
    "Sigmoid": Rule("LOGISTIC", _unary, fixed_out=(1 / 256, -128)),
    "Tanh": Rule("TANH", _unary, fixed_out=(1 / 128, 0)),
    "Softmax": Rule("SOFTMAX", _softmax, fixed_out=(1 / 256, -128)),
    "HardSwish": Rule("HARD_SWISH", _unary),
    "LeakyRelu": Rule("LEAKY_RELU", _leaky),
}
