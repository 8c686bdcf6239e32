"""The quantization ops as plain arithmetic, for targets without quantized kernels (code targets).

DequantizeLinear: Cast to float32, minus the zero point, times the scale. QuantizeLinear: divide (or
multiply by the reciprocal, as the op's `rounding` says), Round (half to even), add the zero point,
Clip to the storage range, Cast. DynamicQuantizeLinear computes its scale and zero point from the
data range the same way. The integer ops accumulate exactly: float32 MatMuls/Convs over spans of the
contracted axis short enough that the operands' bounds (the weight's own values when constant) keep
every partial sum below 2**24, where float32 rounds nothing, each cast to int32 and summed. (Integer
matmuls are no way out: keras.ops multiplies integers in floating point, and no target convolves them.)
QLinearMatMul is MatMulInteger plus requantization; QLinearConv already decomposes into the QDQ form
(ops/quant.py).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.infer import norm_axis
from tensorbridge.ops.quant import dequantize_linear, expand_param
from tensorbridge.ops.schema import attrs_of, set_decomposition
from tensorbridge.ops.shape import slice_spans

#: float32 holds every integer up to this exactly
EXACT_FLOAT32 = 2 ** 24


def _integer_storage(dt) -> bool:
    name = dtypes.name(dt)
    return name in ("int8", "uint8", "int16", "uint16", "int32", "uint32")


def _param(b: Builder, v, x, axis: int, block_size: int, tag: str):
    """A scale or zero point as float32, shaped to broadcast against x (None: a form it cannot take)."""
    single = v.shape is not None and int(np.prod(v.shape)) == 1
    if v.const is not None:
        if x.shape is None and not single:
            return None
        arr = expand_param(np.asarray(v.const), x.shape or (), axis, block_size)
        return b.const(arr.astype(np.float32), b.name(tag), literal=False)
    if v.shape is None or x.shape is None or (not single and block_size):
        return None
    f = b.op("Cast", v, to="float32", suffix=tag)
    if single and len(v.shape) <= len(x.shape):
        return f  # broadcasts as it is
    shape = [] if single else [-1 if i == norm_axis(axis, len(x.shape)) else 1 for i in range(len(x.shape))]
    return b.op("Reshape", f, b.named(shape, f"{tag}_shape", np.int64), suffix=f"{tag}_shaped")


def _scale_and_zero_point(b: Builder, node):
    """A Q/DQ node's scale and zero point (None when absent) as `_param` shapes them, or None if either cannot be."""
    x, scale, zp = node.inputs[0], node.inputs[1], node.input(2)
    axis, block = node.attrs.get("axis", 1), node.attrs.get("block_size", 0)
    s = _param(b, scale, x, axis, block, "scale")
    z = _param(b, zp, x, axis, block, "zero_point") if zp is not None else None
    return None if s is None or (zp is not None and z is None) else (s, z)


def _decompose_dequantize(graph, node) -> bool:
    x, scale, zp = node.inputs[0], node.inputs[1], node.input(2)
    out_dt = node.outputs[0].dtype
    if not _integer_storage(x.dtype) or not dtypes.is_float(out_dt):
        return False
    b = Builder.replacing(node)
    if all(v is None or v.const is not None for v in (x, scale, zp)):  # a quantized weight: its float values
        graph.replace_node(node, [b.weight(b.name("dequantized"), dequantize_linear(
            x.const, scale.const, None if zp is None else zp.const, **attrs_of(node)))])
        return True
    params = _scale_and_zero_point(b, node)
    if params is None:
        return False
    s, z = params
    v = b.op("Cast", x, to="float32", suffix="float")
    if z is not None and not (z.const is not None and not z.const.any()):
        v = b.op("Sub", v, z, suffix="centered")
    y = b.op("Mul", v, s, suffix="scaled")
    if dtypes.name(out_dt) != "float32":
        y = b.op("Cast", y, to=dtypes.name(out_dt), suffix="to_output")
    graph.replace_node(node, [y])
    return True


def _to_storage(b: Builder, v, zp, storage):
    """round(v) + zero point, saturated to the storage type's range, as that type (v: float32)."""
    v = b.op("Round", v, suffix="rounded")
    if zp is not None:
        v = b.op("Add", v, zp, suffix="shifted")
    info = np.iinfo(storage)
    lo, hi = b.named(info.min, "qmin", np.float32), b.named(info.max, "qmax", np.float32)
    return b.op("Cast", b.op("Clip", v, lo, hi, suffix="saturated"), to=dtypes.name(storage), suffix="stored")


def _decompose_quantize(graph, node) -> bool:
    x = node.inputs[0]
    storage = node.outputs[0].dtype
    if not _integer_storage(storage) or dtypes.name(storage) in ("int32", "uint32") or not dtypes.is_float(x.dtype):
        return False
    b = Builder.replacing(node)
    params = _scale_and_zero_point(b, node)
    if params is None:
        return False
    s, z = params
    xf = x if dtypes.name(x.dtype) == "float32" else b.op("Cast", x, to="float32", suffix="float")
    if node.attrs.get("rounding") == "reciprocal":
        v = b.op("Mul", xf, b.op("Reciprocal", s, suffix="reciprocal"), suffix="scaled")
    else:
        v = b.op("Div", xf, s, suffix="scaled")
    graph.replace_node(node, [_to_storage(b, v, z, storage)])
    return True


def _decompose_dynamic_quantize(graph, node) -> bool:
    """scale = (max(0, max x) - min(0, min x)) / 255; zero point = saturate(round(-min / scale)); a zero
    scale (x all zeros) divides by one instead, which gives the zeros the op defines."""
    x = node.inputs[0]
    if dtypes.name(x.dtype) != "float32":
        return False
    b = Builder.replacing(node)
    zero = b.named(0.0, "zero", np.float32)
    lo = b.op("Min", b.op("ReduceMin", x, keepdims=0, suffix="data_min"), zero, suffix="range_min")
    hi = b.op("Max", b.op("ReduceMax", x, keepdims=0, suffix="data_max"), zero, suffix="range_max")
    scale = b.op("Div", b.op("Sub", hi, lo, suffix="range"), b.named(255.0, "levels", np.float32),
                 suffix="scale")
    divisor = b.op("Where", b.op("Equal", scale, zero, suffix="all_zero"),
                   b.named(1.0, "one", np.float32), scale, suffix="divisor")
    storage = np.dtype(np.uint8)
    zp_stored = _to_storage(b, b.op("Neg", b.op("Div", lo, divisor, suffix="min_steps"), suffix="offset"), None,
                            storage)
    zp = b.op("Cast", zp_stored, to="float32", suffix="zero_point_float")
    y = _to_storage(b, b.op("Div", x, divisor, suffix="steps"), zp, storage)
    graph.replace_node(node, [y, scale, zp_stored])
    return True


def _operand_range(v, zp) -> float | None:
    """The largest |v - zero point| an integer operand can take, from its storage type."""
    if not _integer_storage(v.dtype):
        return None
    info = np.iinfo(v.dtype)
    if zp is None:
        return float(max(-int(info.min), int(info.max)))
    if zp.const is None:
        return float(info.max) - float(info.min)
    z = np.asarray(zp.const, np.float64)
    return float(max(np.max(np.abs(info.min - z)), np.max(np.abs(info.max - z))))


def _spans(data, data_zp, weight, weight_zp, zp_shape, contribution) -> list[tuple[int, int]] | None:
    """Split the contracted axis into spans whose integer partial sums float32 adds exactly (every one below
    2**24 in magnitude). `contribution(|centered weight|)` gives, per contracted index and output, the sum of
    |weight| it brings: from the weight's values when it is constant (its zero point shaped `zp_shape`), else
    from its storage range. None: one index alone can reach 2**24."""
    data_range = _operand_range(data, data_zp)
    weight_range = _operand_range(weight, weight_zp)
    if data_range is None or weight_range is None:
        return None
    if weight.const is not None and (weight_zp is None or weight_zp.const is not None):
        centered = np.asarray(weight.const, np.float64)
        if weight_zp is not None:
            z = np.asarray(weight_zp.const, np.float64)
            centered = centered - (z.reshape(zp_shape) if z.size > 1 else z.reshape(()))
        bound = data_range * contribution(np.abs(centered))
    else:
        bound = data_range * contribution(np.full(weight.shape, weight_range))
    spans, start, running = [], 0, np.zeros(bound.shape[1:])
    for k, row in enumerate(bound):
        if np.any(row >= EXACT_FLOAT32):
            return None
        if np.any(running + row >= EXACT_FLOAT32):
            spans.append((start, k))
            start, running = k, np.zeros_like(running)
        running = running + row
    return spans + [(start, len(bound))]


def _centered(b: Builder, v, zp, tag: str, zp_shape=(-1,)):
    """v - zero point in float32 (a constant when both are: a weight); a zero point with several elements is
    shaped `zp_shape`."""
    if v.const is not None and (zp is None or zp.const is not None):
        z = 0 if zp is None else np.asarray(zp.const, np.float32).reshape(zp_shape if zp.const.size > 1 else ())
        return b.weight(b.name(f"{tag}_centered"), np.asarray(v.const, np.float32) - z)
    out = b.op("Cast", v, to="float32", suffix=f"{tag}_float")
    if zp is None or (zp.const is not None and not np.asarray(zp.const).any()):
        return out
    several = zp.shape is None or int(np.prod(zp.shape)) > 1
    if zp.const is not None:
        z = b.const(np.asarray(zp.const).astype(np.float32).reshape(zp_shape if several else ()),
                    b.name(f"{tag}_zero_point"), literal=False)
    else:  # one element broadcasts against a matmul or conv operand (rank 2 or more) as it is
        z = b.op("Cast", zp, to="float32", suffix=f"{tag}_zero_point")
        if several:
            z = b.op("Reshape", z, b.named(zp_shape, f"{tag}_zero_point_shape", np.int64),
                     suffix=f"{tag}_zero_point_shaped")
    return b.op("Sub", out, z, suffix=f"{tag}_centered")


def _span_sum(b: Builder, spans, product):
    """The exact int32 total of `product(start, end)` (a float32 op on one span) over the spans."""
    parts = [b.op("Cast", product(start, end), to="int32", suffix="int32") for start, end in spans]
    return parts[0] if len(parts) == 1 else b.op("Sum", *parts, suffix="spans")


def _sliced(b: Builder, v, axis: int, start: int, end: int, whole: int, tag: str):
    return v if (start, end) == (0, whole) else slice_spans(b, v, [(axis, start, end)], suffix=tag)


def _matmul_integer(b: Builder, a, w, azp, wzp):
    """The exact int32 product of the centered operands (a's zero point per row when it has several), or None
    when the contracted size is unknown or float32 cannot hold one product."""
    if a.shape is None or w.shape is None or len(a.shape) < 2 or len(w.shape) < 2 or not isinstance(a.shape[-1], int):
        return None
    spans = _spans(a, azp, w, wzp, (-1,), lambda m: np.moveaxis(m, -2, 0).reshape(m.shape[-2], -1))
    if spans is None:
        return None
    ac, wc = _centered(b, a, azp, "a", zp_shape=(-1, 1)), _centered(b, w, wzp, "b")
    k = a.shape[-1]
    return _span_sum(b, spans, lambda s, e: b.op("MatMul", _sliced(b, ac, -1, s, e, k, "a_span"),
                                                 _sliced(b, wc, -2, s, e, k, "b_span"), suffix="accumulate"))


def _decompose_matmul_integer(graph, node) -> bool:
    b = Builder.replacing(node)
    acc = _matmul_integer(b, *(node.input(i) for i in range(4)))
    if acc is None:
        return False
    graph.replace_node(node, [acc])
    return True


def _decompose_conv_integer(graph, node) -> bool:
    """Float32 Convs of the centered operands over spans of input channels (one when ungrouped spans are not
    needed), each provably exact; the padding: zeros of the centered input, i.e. its zero point, as the op
    defines. Grouped convolutions that need several spans stay refused (no target convolves int32)."""
    x, w, xzp, wzp = (node.input(i) for i in range(4))
    if w.shape is None or not all(isinstance(d, int) for d in w.shape):
        return False
    per_output = (-1,) + (1,) * (len(w.shape) - 1)
    spans = _spans(x, xzp, w, wzp, per_output, lambda m: m.reshape(m.shape[0], m.shape[1], -1).sum(axis=2).T)
    if spans is None or (len(spans) > 1 and node.attrs.get("group", 1) != 1):
        return False
    b = Builder.replacing(node)
    xc = _centered(b, x, xzp, "x")
    wc = _centered(b, w, wzp, "w", zp_shape=per_output)
    channels = 1 if node.attrs.get("layout", "NCHW") == "NCHW" else -1
    graph.replace_node(node, [_span_sum(b, spans, lambda s, e: b.op(
        "Conv", _sliced(b, xc, channels, s, e, w.shape[1], "x_span"), _sliced(b, wc, 1, s, e, w.shape[1], "w_span"),
        suffix="accumulate", **node.attrs))])
    return True


def _decompose_qlinear_matmul(graph, node) -> bool:
    """MatMulInteger, then requantized: round(acc * a_scale * b_scale / y_scale) + y_zero_point, saturated."""
    a, a_scale, a_zp, w, w_scale, w_zp, y_scale, y_zp = node.inputs[:8]
    storage = node.outputs[0].dtype
    if not _integer_storage(storage) or any(s.shape is None for s in (a_scale, w_scale, y_scale)):
        return False
    b = Builder.replacing(node)
    acc = _matmul_integer(b, a, w, a_zp, w_zp)
    if acc is None:
        return False
    scale = b.op("Mul", b.op("Cast", a_scale, to="float32", suffix="a_scale"),
                 b.op("Cast", w_scale, to="float32", suffix="b_scale"), suffix="product_scale")
    v = b.op("Div", b.op("Mul", b.op("Cast", acc, to="float32", suffix="acc_float"), scale, suffix="real"),
             b.op("Cast", y_scale, to="float32", suffix="y_scale"), suffix="steps")
    zp = b.op("Cast", y_zp, to="float32", suffix="y_zero_point")
    graph.replace_node(node, [_to_storage(b, v, zp, storage)])
    return True


set_decomposition("DequantizeLinear", _decompose_dequantize)
set_decomposition("QuantizeLinear", _decompose_quantize)
set_decomposition("DynamicQuantizeLinear", _decompose_dynamic_quantize)
set_decomposition("MatMulInteger", _decompose_matmul_integer)
set_decomposition("ConvInteger", _decompose_conv_integer)
set_decomposition("QLinearMatMul", _decompose_qlinear_matmul)
