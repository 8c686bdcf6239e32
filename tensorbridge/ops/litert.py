"""LiteRT's integer arithmetic: quantized Add and Mean, and dynamic-range Dense and Conv, as LiteRT computes them.

QDQ reads an int8 Add as dequantize -> float add -> quantize. LiteRT's CPU kernels (XNNPACK, its
default delegate) compute it differently, and a float32 chain in the target lands on the other
side of a .5 now and then. One such LSB early in a residual network grows through the following
layers: an int8 ResNet50 differed from LiteRT by 12 LSB at its output, every convolution bit-exact.

- Add: each input is scaled by an integer multiplier, `ratio * 2**shift` rounded, where ratio is
  the float32 input/output scale ratio and shift puts the larger ratio's leading bit at 2**20; a
  bias holds the zero points and the rounding half; an arithmetic right shift by `shift` ends it.
  Written here in float64, where every step is exact: Cast, Mul, Add, Floor, Clip, Cast.
- Mean: the sum of the zero-point-free integers times one float32 factor
  `in_scale / (out_scale * count)`, rounded half to even: Cast, ReduceSum, Sub, Mul, Round, Add,
  Clip, Cast. A float mean of dequantized values moves exact ties off .5.
- Conv (PyTorch targets, which have no int8 convolution to call): the convolution in float64 on
  the zero-point-free integers (exact), then XNNPACK's requantization: the accumulator as float32
  times one float32 `in_scale * w_scale / out_scale` per channel, rounded half to even.

- Dynamic-range FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D (float input, int8 weights): LiteRT quantizes
  each input row (each batch item for a convolution, each pixel for a 1x1 one of stride 1, which it runs as a
  fully connected kernel) at run time, asymmetric int8 over [min(x, 0), max(x, 0)] with a nudged zero point,
  multiplies the integers and scales the int32 result back (measured bit-close on FER's published model).
  A float Dense on dequantized weights differs from it by about 1%;
  here the run-time quantization is written out (ReduceMin/ReduceMax, Div, Round, Clip), the product
  or convolution in float64 (exact), then `acc * in_scale * w_scale + bias` in float32.

These are the meaning of the attribute `int_arithmetic="litert"` on Add, ReduceMean, Dense and Conv,
which the TFLite frontend sets on the kernels it reads: each is an exact lowering into plain ops,
registered with the op (`set_lowering`), which the reference interpreter and the backends apply
(`passes/lower.py`). A lowering applies only where the pattern is the integer kernel's: per-tensor
int8/uint8 inputs, and the output's only reader a per-tensor QuantizeLinear, with a fused
ReLU/ReLU6 between for Add and Conv; elsewhere the node keeps its plain (QDQ) meaning.
"""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.ops.schema import set_lowering

F32 = np.float32
ATTR = "int_arithmetic"


def exact_quantized_convs(graph: Graph) -> int:
    """For targets without an int8 convolution to call (PyTorch): LiteRT's quantized Conv units computed
    integer-exact in float64 with XNNPACK's requantization, and its dynamic-range ones in float64 at any
    size; returns how many."""
    count = 0
    for node in list(graph.nodes):
        if node.graph is None or node.op != "Conv" or node.attrs.get(ATTR) != "litert":
            continue
        count += _dynamic_range_conv(graph, node, float64=True) or _conv(graph, node)
    return count


def _params(dq_or_q: Node) -> tuple[F32, int] | None:
    """(scale, zero point) of a per-tensor Q/DQ with constant parameters."""
    scale, zp = dq_or_q.input(1), dq_or_q.input(2)
    if scale is None or zp is None or scale.const is None or zp.const is None or scale.const.size != 1:
        return None
    return F32(scale.const.reshape(())), int(zp.const.reshape(()))


def _dq_input(v: Value | None) -> tuple[Value, F32, int] | None:
    dq = v.producer if v is not None else None
    if dq is None or dq.op != "DequantizeLinear" or dq.inputs[0].dtype not in (np.int8, np.uint8):
        return None
    p = _params(dq)
    return None if p is None else (dq.inputs[0], *p)



def _q_output(v: Value, graph: Graph) -> Node | None:
    q = graph.only_reader(v)
    if q is None or q.op != "QuantizeLinear" or _params(q) is None:
        return None
    return q if q.input(2).dtype in (np.int8, np.uint8) else None


def _requantization(node: Node, graph: Graph) -> tuple[Node, tuple[int, int]] | None:
    """The QuantizeLinear that ends `node`'s integer kernel, and the integer clamp of the fused activation."""
    act, y = None, node.outputs[0]
    reader = graph.only_reader(y)
    if reader is not None and reader.op in ("Relu", "Clip"):
        act, y = reader, reader.outputs[0]
    q = _q_output(y, graph)
    bounds = _activation_bounds(act, q)
    return None if bounds is None else (q, bounds)


def _builders(graph: Graph, node: Node, q: Node):
    """`const(name, value, dtype)` and `op(kind, *inputs, **attrs)`, adding before `q` under `node`'s name."""
    def const(name, value, dtype=np.float64):
        return graph.add_constant(graph.unique_name(f"{node.name}.{name}"), np.asarray(value, dtype))

    def op(kind, *inputs, **attrs):
        return graph.add_node(kind, inputs, attrs, name=f"{node.name}.litert", meta=node.meta, before=q).outputs[0]

    return const, op


def _add(graph: Graph, node: Node) -> int:
    a, b = _dq_input(node.input(0)), _dq_input(node.input(1))
    found = _requantization(node, graph)
    if a is None or b is None or found is None:
        return 0
    q, bounds = found
    (xa, sa, za), (xb, sb, zb) = a, b
    so, zo = _params(q)
    ra, rb = F32(sa / so), F32(sb / so)
    exponent = math.frexp(float(max(ra, rb)))[1] - 1
    if not -10 <= exponent < 8:          # XNNPACK refuses ratios outside [2**-10, 2**8)
        return 0
    shift = 20 - exponent
    ma, mb = round(math.ldexp(float(ra), shift)), round(math.ldexp(float(rb), shift))
    bias = (1 << (shift - 1)) - ma * za - mb * zb
    c, op = _builders(graph, node, q)
    acc = op("Add", op("Mul", op("Cast", xa, to="float64"), c("mul_a", ma)),
             op("Mul", op("Cast", xb, to="float64"), c("mul_b", mb)))
    shifted = op("Floor", op("Mul", op("Add", acc, c("bias", bias)), c("shift", math.ldexp(1.0, -shift))))
    out = op("Clip", op("Add", shifted, c("zero_point", zo)), c("min", bounds[0]), c("max", bounds[1]))
    _replace(graph, q.outputs[0], op("Cast", out, to=np.dtype(q.input(2).dtype).name))
    return 1


def _conv(graph: Graph, node: Node) -> int:
    """Conv with int8 weights (zero point 0, per tensor or per output channel) and an int32 bias at
    in_scale * w_scale: the convolution in float64 on the zero-point-free integers (exact), then
    XNNPACK's requantization: float32 accumulator times float32 `in_scale * w_scale / out_scale`."""
    x = _dq_input(node.input(0))
    w_dq, b_dq = node.input(1).producer, node.input(2).producer if node.input(2) is not None else None
    if x is None or w_dq is None or w_dq.op != "DequantizeLinear" or w_dq.inputs[0].const is None:
        return 0
    w, ws, wz = w_dq.inputs[0].const, w_dq.input(1).const, w_dq.input(2).const
    if ws is None or wz is None or np.any(wz != 0) or w.dtype != np.int8:
        return 0
    bias = None
    if b_dq is not None:
        if b_dq.op != "DequantizeLinear" or b_dq.inputs[0].const is None or b_dq.inputs[0].dtype != np.int32:
            return 0
        bias = b_dq.inputs[0].const
    found = _requantization(node, graph)
    if found is None:
        return 0
    q, bounds = found
    xq, xs, xz = x
    so, zo = _params(q)
    scale = (F32(xs) * np.asarray(ws, F32).reshape(-1)) / F32(so)
    channels = w.shape[0]
    scale = np.broadcast_to(scale, (channels,)).reshape((1, channels) + (1,) * (w.ndim - 2))
    c, op = _builders(graph, node, q)
    ints = op("Sub", op("Cast", xq, to="float64"), c("zero_point_in", xz))
    attrs = {k: v for k, v in node.attrs.items() if k != ATTR}
    acc = op("Conv", ints, c("weight", w), *([c("bias", bias)] if bias is not None else []), **attrs)
    scaled = op("Round", op("Mul", op("Cast", acc, to="float32"), c("scale", scale, F32)))
    out = op("Clip", op("Add", scaled, c("zero_point", zo, F32)), c("min", bounds[0], F32), c("max", bounds[1], F32))
    _replace(graph, q.outputs[0], op("Cast", out, to=np.dtype(q.input(2).dtype).name))
    return 1


def _dynamic_range_dense(graph: Graph, node: Node) -> int:
    """Dense(float x, int8 weights [in, out] behind a DequantizeLinear, zero point 0, per tensor or per
    output column; possibly as Transpose(DequantizeLinear([out, in]))) as LiteRT's dynamically quantized
    kernel computes it (XNNPACK's per-row asymmetric int8 input)."""
    x, weights = node.inputs[0], _moved_int8_weights(node.inputs[1], out_axis=1)
    if not _float_activation(x) or weights is None or weights[0].ndim != 2:
        return 0
    w, ws = weights
    c, op = _builders(graph, node, node)
    q, zero_point, scale = _dynamic_int8(x, c, op, [-1])
    acc = op("MatMul", op("Cast", op("Sub", q, zero_point), to="float64"), c("weight", w))
    y = op("Mul", op("Mul", op("Cast", acc, to="float32"), scale), c("w_scale", np.asarray(ws, F32).reshape(-1), F32))
    if node.input(2) is not None:
        y = op("Add", y, node.input(2))
    _replace(graph, node.outputs[0], y)
    return 1


def _dynamic_range_conv(graph: Graph, node: Node, float64: bool = False) -> int:
    """Conv(float x, int8 weights behind a DequantizeLinear, or a Transpose of one, zero point 0, per output
    channel) as LiteRT's dynamically quantized kernel computes it: the input quantized per batch item (per pixel
    for a pointwise one), the convolution on the integers (padding is the zero point, i.e. a real 0), then scaled
    back. The convolution is exact in float32 while 255 * 127 * (inputs per output) < 2**24; beyond that in
    float64 (`float64`, PyTorch), else in float32 (onnxruntime has no float64 Conv): its sums then round to
    float32's 24 bits, where the float model would miss the run-time quantization itself (about 1%)."""
    x, weights = node.inputs[0], _moved_int8_weights(node.inputs[1], out_axis=0)
    if not _float_activation(x) or x.shape is None or weights is None:
        return 0
    w, ws = weights
    rank = len(x.shape)
    channel = 1 if node.attrs.get("layout", "NCHW") == "NCHW" else rank - 1
    in_float64 = float64 and 255 * 127 * math.prod(w.shape[1:]) >= 2**24
    c, op = _builders(graph, node, node)
    q, zero_point, scale = _dynamic_int8(x, c, op, [channel] if _pointwise(node, w) else list(range(1, rank)))
    ints = op("Cast", op("Sub", q, zero_point), to="float64") if in_float64 else op("Sub", q, zero_point)
    attrs = {k: v for k, v in node.attrs.items() if k != ATTR}
    acc = op("Conv", ints, c("weight", w, np.float64 if in_float64 else F32), **attrs)
    along = [-1 if axis == channel else 1 for axis in range(rank)]
    y = op("Mul", op("Mul", op("Cast", acc, to="float32"), scale), c("w_scale", np.asarray(ws, F32).reshape(along),
                                                                     F32))
    if node.input(2) is not None:
        y = op("Add", y, op("Reshape", node.input(2), c("bias_shape", along, np.int64)))
    _replace(graph, node.outputs[0], y)
    return 1


def _moved_int8_weights(weight: Value, out_axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 weights, scales along `out_axis`) of a weight behind a DequantizeLinear, or a Transpose of one (a
    .tflite kernel's [O, *k, I] or a depthwise one's [1, *k, O] read as [O, I, *k]; a Dense's [out, in] as
    [in, out]), in the order the op reads them."""
    producer = weight.producer
    if producer is not None and producer.op == "Transpose" and producer.attrs.get("perm"):
        perm = list(producer.attrs["perm"])
        weights = _int8_weights(producer.inputs[0].producer, out_axis=perm[out_axis])
        return None if weights is None else (weights[0].transpose(perm), weights[1])
    return _int8_weights(producer, out_axis=out_axis)


def _pointwise(node: Node, w: np.ndarray) -> bool:
    """A 1x1 convolution of stride 1 without padding or groups: LiteRT runs it as a fully connected kernel over
    the pixels, quantizing each pixel's channels on its own (any other, each batch item)."""
    a = node.attrs
    return all(k == 1 for k in w.shape[2:]) and all(v == 1 for v in a.get("strides") or [1]) \
        and not any(a.get("pads") or []) and a.get("group", 1) == 1


def _float_activation(x: Value) -> bool:
    """A float32 input computed in float (not dequantized): what a dynamic-range kernel quantizes itself."""
    return x.dtype == np.float32 and (x.producer is None or x.producer.op != "DequantizeLinear")


def _int8_weights(dq: Node | None, out_axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 weights, scales) of a DequantizeLinear of a constant with zero point 0, per tensor or per
    `out_axis`."""
    if dq is None or dq.op != "DequantizeLinear" or dq.inputs[0].const is None:
        return None
    w, ws, wz = dq.inputs[0].const, dq.input(1).const, dq.input(2).const if dq.input(2) is not None else None
    if w.dtype != np.int8 or ws is None or (wz is not None and np.any(wz != 0)) \
            or (ws.size > 1 and dq.attrs.get("axis", 1) % w.ndim != out_axis):
        return None
    return w, ws


def _dynamic_int8(x: Value, c, op, axes: list[int]) -> tuple[Value, Value, Value]:
    """XNNPACK's run-time int8 quantization of `x` over `axes`: asymmetric over [min(x, 0), max(x, 0)],
    scale (max - min) / 255, zero point nudged toward the side with the smaller error.
    Returns the quantized values, zero point and scale, all as float32."""
    over = c("axes", axes, np.int64)
    lo = op("Min", op("ReduceMin", x, over, keepdims=1), c("zero", 0, F32))
    hi = op("Max", op("ReduceMax", x, over, keepdims=1), c("zero", 0, F32))
    span = op("Div", op("Sub", hi, lo), c("levels", 255, F32))
    scale = op("Where", op("Equal", span, c("zero", 0, F32)), c("one", 1, F32), span)
    low, high = op("Div", lo, scale), op("Div", hi, scale)
    qmin, qmax = c("qmin", -128, F32), c("qmax", 127, F32)
    nudge = op("Greater", op("Add", op("Add", low, qmin), op("Add", high, qmax)), c("zero", 0, F32))
    zero_point = op("Clip", op("Round", op("Where", nudge, op("Sub", qmin, low), op("Sub", qmax, high))), qmin, qmax)
    q = op("Clip", op("Add", op("Round", op("Div", x, scale)), zero_point), qmin, qmax)
    return q, zero_point, scale


def _activation_bounds(act: Node | None, q: Node | None) -> tuple[int, int] | None:
    """The integer clamp of the fused activation, in the output's quantized range."""
    if q is None:
        return None
    info = np.iinfo(q.input(2).dtype)
    so, zo = _params(q)
    if act is None:
        return info.min, info.max
    lo, hi = (0.0, None) if act.op == "Relu" else _clip_range(act)
    if lo is None:
        return None
    qlo = max(info.min, zo + round(lo / so))
    qhi = info.max if hi is None else min(info.max, zo + round(hi / so))
    return qlo, qhi


def _clip_range(act: Node) -> tuple[float | None, float | None]:
    lo, hi = act.input(1), act.input(2)
    if lo is None or hi is None or lo.const is None or hi.const is None:
        return None, None
    return float(lo.const), float(hi.const)


def _mean(graph: Graph, node: Node) -> int:
    x = _dq_input(node.input(0))
    q = _q_output(node.outputs[0], graph)
    axes = node.input(1)
    if x is None or q is None or axes is None or axes.const is None or x[0].shape is None:
        return 0
    xq, si, zi = x
    dims = [xq.shape[int(a)] for a in np.asarray(axes.const).reshape(-1)]
    if not dims or any(not isinstance(d, int) for d in dims):
        return 0
    so, zo = _params(q)
    count = math.prod(dims)
    factor = F32(si) / (F32(so) * F32(count))
    c, op = _builders(graph, node, q)
    info = np.iinfo(q.input(2).dtype)
    total = op("ReduceSum", op("Cast", xq, to="float32"), axes, keepdims=node.attrs.get("keepdims", 1))
    scaled = op("Round", op("Mul", op("Sub", total, c("zero_point_sum", count * zi, F32)), c("factor", factor, F32)))
    out = op("Clip", op("Add", scaled, c("zero_point", zo, F32)), c("min", info.min, F32), c("max", info.max, F32))
    _replace(graph, q.outputs[0], op("Cast", out, to=np.dtype(q.input(2).dtype).name))
    return 1


def _replace(graph: Graph, old: Value, new: Value) -> None:
    """Let `new` take the place of `old` (its name included), then drop the float path."""
    new.dtype, new.shape, new.layout, new.quant = old.dtype, old.shape, old.layout, old.quant
    graph.replace_all_uses(old, new)
    name = old.name
    old.name = graph.unique_name(f"{name}.float")
    new.name = name


set_lowering("Add", ATTR, _add)
set_lowering("ReduceMean", ATTR, _mean)
set_lowering("Dense", ATTR, _dynamic_range_dense)
set_lowering("Conv", ATTR, _dynamic_range_conv)
