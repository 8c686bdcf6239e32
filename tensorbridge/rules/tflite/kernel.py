"""What the TFLite integer kernels share: the `Rule` each IR op registers, and reads of quantized IR.

A rule's `write(ctx)` returns the builtin's inputs (tensor indices from the integer writer's
context: `ctx.x(i)` in int8 or float, `ctx.weight`, `ctx.bias`, `ctx.index_const`) and its options
table; `ctx.builtin` overrides the builtin when it depends on attributes (a depthwise Conv, a Clip
that is ReLU6). Rules are registered beside each op's import converter (`R.add_export(("Conv",),
Rule(...))`); the integer writer is `backends/tflite/integer.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tensorbridge.formats.tflite_flatbuffer import SAME, VALID, Quant
from tensorbridge.ir import dtypes
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.reference.interpreter import run_node


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
    accepts: Callable | None = None  # accepts(ctx): the op's operands fit the integer kernel
    passes_through: bool = False  # no kernel: the output is the input (Identity, Dropout at inference)

    def __call__(self, ctx):
        return self.write(ctx)


def rule_accepts(ctx, rule: Rule) -> bool:
    """Integer kernels need int8 per-tensor data (and, by the rule's own check, zero-point-0 int8 weights and an
    int32 bias at x*w scale)."""
    if any(p.axis is not None or p.dtype != "int8" for p in ctx.in_params):
        return False
    return rule.accepts is None or rule.accepts(ctx)


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
        lo, hi = (scalar(node.input(i)) for i in (1, 2))
        return {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, None): "RELU"}.get((lo, hi))
    return None


def scalar(v: Value | None):
    return None if v is None or v.const is None else float(np.asarray(v.const).ravel()[0])


def float_name(v: Value) -> str:
    return dtypes.name(v.dtype) if v.dtype is not None else "float32"


def gemm_plain(node: Node) -> bool:
    a = node.attrs
    return a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and not a.get("transA", 0)


def window_padding(ctx, in_shape, kernel, strides, dilations, out_shape) -> tuple[int, list[int] | None]:
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
    if pads == [same[0][0], same[1][0], same[0][1], same[1][1]] and\
            all(-(-size // s) == o for size, s, o in zip(in_shape[1:3], strides, out_shape[1:3])):
        return SAME, None
    return VALID, pads


def explicit_pad(ctx, x: int, pads: list[int], lowest: bool) -> int:
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


def window(ctx, kernel, pad: str = "zero"):
    """The window's input, padding, strides, dilations; explicit pads are written as PAD ("zero"), PADV2
    ("lowest"), or refused ("refuse": an average that must leave the padding out)."""
    node = ctx.node
    if node.attrs.get("layout") != "NHWC" or len(node.inputs[0].shape) != 4:
        raise NotInteger("only 2-D windows in NHWC are written")
    a = node.attrs
    strides = list(a.get("strides") or [1, 1])
    dilations = list(a.get("dilations") or [1, 1])
    x = ctx.x(0)
    padding, pads = window_padding(ctx, node.inputs[0].shape, kernel, strides, dilations, node.outputs[0].shape)
    if pads is not None:
        if pad == "refuse":
            raise NotInteger(f"pads {pads} exclude padding from the average only when they equal SAME")
        x = explicit_pad(ctx, x, pads, lowest=pad == "lowest")
    return x, padding, strides, dilations
