"""Quantization ops. QuantizeLinear/DequantizeLinear are the canonical IR form.

real = (stored - zero_point) * scale, per tensor, per axis (1-D scale) or per block
(`block_size`). Rounding is half to even and results saturate to the storage range, as in
ONNX. Integer ops (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger) are defined as
exact integer accumulation followed by float requantization.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops import layout_rules as L
from tensorbridge.ops.elementwise import cast_array
from tensorbridge.ops.infer import norm_axis
from tensorbridge.ops.layout_classes import IMPLICIT, TERMINATE, attribute
from tensorbridge.ops.schema import Attr, op, set_decomposition
from tensorbridge.reference.kernels import conv as K

F = "quant"


def expand_param(p: np.ndarray, x_shape, axis: int, block_size: int) -> np.ndarray:
    """Broadcast a scale/zero point (scalar, per-axis or blocked) against x."""
    p = np.asarray(p)
    if p.ndim == 0 or p.size == 1 and block_size == 0:
        return p.reshape(())
    ax = norm_axis(axis, len(x_shape))
    if block_size:
        return np.repeat(p, block_size, axis=ax).take(np.arange(x_shape[ax]), axis=ax)
    return p.reshape([-1 if i == ax else 1 for i in range(len(x_shape))])


def saturate_round(v: np.ndarray, storage: np.dtype, saturate: bool = True) -> np.ndarray:
    name = dtypes.name(storage)
    if dtypes.is_float(storage):
        return cast_array(v.astype(np.float32), storage, saturate)
    info = ml_dtypes.iinfo(storage) if dtypes.name(storage) in dtypes.SUB_BYTE_NAMES else np.iinfo(storage)
    return np.clip(np.rint(v), int(info.min), int(info.max)).astype(storage) if name else v


def int32_bias(bias: np.ndarray, x_scale, w_scale) -> tuple[np.ndarray, np.ndarray]:
    """A float bias as integer kernels take it: int32 at scale x_scale * w_scale (per channel), half to even.

    PT2E programs keep the bias in float; onnxruntime's and LiteRT's int8 kernels need it like this.
    """
    scale = np.asarray(x_scale, np.float64).reshape(-1) * np.asarray(w_scale, np.float64).reshape(-1)
    values = np.rint(np.asarray(bias, np.float64) / scale)
    info = np.iinfo(np.int32)
    return np.clip(values, info.min, info.max).astype(np.int32), scale.astype(np.float32)


def _q_infer(inputs, attrs):
    zp = inputs[2] if len(inputs) > 2 else None
    dt = dtypes.dtype(attrs["output_dtype"]) if attrs["output_dtype"] else \
        (zp.dtype if zp is not None else np.dtype(np.uint8))
    return [(dt, inputs[0].shape)]


@op("QuantizeLinear", inputs="x y_scale y_zero_point?", outputs="y", family=F, layout=attribute("axis", rule=L.quant_axis),
    attrs={"axis": Attr("int", 1), "saturate": Attr("int", 1), "block_size": Attr("int", 0),
           "output_dtype": Attr("dtype", None), "precision": Attr("dtype", None), "rounding": Attr("str", "divide")},
    infer=_q_infer, doc="Quantize: saturate(round(x / scale) + zero_point). Equivalents: torch.quantize_per_tensor/channel, QUANTIZE.")
def quantize_linear(x, y_scale, y_zero_point=None, *, axis, saturate, block_size, output_dtype, precision, rounding):
    """`rounding="divide"` (ONNX): round(x / scale); `"reciprocal"` (PT2E's quantize_per_tensor): round(x * (1 /
    scale)) with the reciprocal in float32, which lands on the other side of .5 now and then."""
    storage = dtypes.dtype(output_dtype) if output_dtype else \
        (y_zero_point.dtype if y_zero_point is not None else np.dtype(np.uint8))
    scale = expand_param(y_scale, x.shape, axis, block_size)
    if rounding == "reciprocal":
        v = (x.astype(np.float32) * (1.0 / scale.astype(np.float64)).astype(np.float32)).astype(np.float64)
    else:
        v = x.astype(np.float64) / scale.astype(np.float64)
    if dtypes.is_float(storage):
        return cast_array(v.astype(np.float32), storage, bool(saturate))
    if y_zero_point is not None:
        v = np.rint(v) + expand_param(y_zero_point, x.shape, axis, block_size).astype(np.float64)
    return saturate_round(v, storage)


@op("DequantizeLinear", inputs="x x_scale x_zero_point?", outputs="y", family=F, layout=attribute("axis", rule=L.quant_axis, through=True),
    attrs={"axis": Attr("int", 1), "block_size": Attr("int", 0), "output_dtype": Attr("dtype", None)},
    infer=lambda i, a: [(dtypes.dtype(a["output_dtype"]) if a["output_dtype"] else i[1].dtype, i[0].shape)],
    doc="Dequantize: (x - zero_point) * scale. Equivalents: tensor.dequantize(), DEQUANTIZE.")
def dequantize_linear(x, x_scale, x_zero_point=None, *, axis, block_size, output_dtype):
    out_dt = dtypes.dtype(output_dtype) if output_dtype else x_scale.dtype
    v = x.astype(np.float32) if dtypes.is_float(x.dtype) else x.astype(np.float64)
    if x_zero_point is not None:
        zp = expand_param(x_zero_point, x.shape, axis, block_size)
        v = v - (zp.astype(np.float32) if dtypes.is_float(zp.dtype) else zp.astype(np.float64))
    scale = expand_param(x_scale, x.shape, axis, block_size)
    scale = scale.astype(np.float32) if dtypes.name(scale.dtype) in dtypes.LOW_PRECISION_NAMES else scale
    return (v * scale).astype(out_dt)


@op("DynamicQuantizeLinear", inputs="x", outputs="y y_scale y_zero_point", family=F,
    doc="Quantize to uint8 with a scale/zero point computed from the data range.")
def dynamic_quantize_linear(x):
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255.0)
    zp = np.clip(np.rint(0 - lo / scale), 0, 255) if scale else 0
    y = np.clip(np.rint(x / scale) + zp, 0, 255) if scale else np.zeros_like(x)
    return y.astype(np.uint8), np.array(scale, np.float32), np.array(zp, np.uint8)


def _centered(v, zp, axis=None, block=0):
    out = v.astype(np.float64)
    if zp is not None:
        out = out - (expand_param(zp, v.shape, axis, block) if axis is not None else np.asarray(zp)).astype(np.float64)
    return out


@op("MatMulInteger", inputs="A B a_zero_point? b_zero_point?", family=F, layout=TERMINATE,
    infer=lambda i, a: [(np.dtype(np.int32), None)], doc="Integer matmul with int32 accumulation.")
def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    a = _centered(A, a_zero_point.reshape(-1, 1) if a_zero_point is not None and a_zero_point.size > 1 else a_zero_point)
    b = _centered(B, b_zero_point)
    return np.matmul(a, b).astype(np.int32)


@op("ConvInteger", inputs="x w x_zero_point? w_zero_point?", family=F, layout=IMPLICIT,
    attrs={"strides": Attr("ints", None), "pads": Attr("ints", None), "dilations": Attr("ints", None),
           "group": Attr("int", 1), "auto_pad": Attr("str", "NOTSET"), "kernel_shape": Attr("ints", None),
           "layout": Attr("str", "NCHW")},
    doc="Integer convolution with int32 accumulation.")
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, strides, pads, dilations, group, auto_pad,
                 kernel_shape, layout="NCHW"):
    if layout == "NHWC":  # the weights stay [out, in/groups, *kernel]
        return np.moveaxis(conv_integer(np.moveaxis(x, -1, 1), w, x_zero_point, w_zero_point, strides=strides,
                                        pads=pads, dilations=dilations, group=group, auto_pad=auto_pad,
                                        kernel_shape=kernel_shape), 1, -1)
    xc = _centered(x, x_zero_point)
    wc = _centered(w, w_zero_point, axis=0 if w_zero_point is not None and np.asarray(w_zero_point).size > 1 else None)
    pads = K.resolve_pads(x.shape[2:], w.shape[2:], strides or [1] * (x.ndim - 2),
                          dilations or [1] * (x.ndim - 2), pads, auto_pad)
    return np.rint(K.conv(xc, wc, None, strides=strides, pads=pads, dilations=dilations,
                          group=group)).astype(np.int32)


def _requant(acc, scale, y_scale, y_zero_point, storage):
    v = acc * scale / y_scale.astype(np.float64)
    v = np.rint(v) + (y_zero_point.astype(np.float64) if y_zero_point is not None else 0)
    return saturate_round(v, storage)


@op("QLinearMatMul", inputs="a a_scale a_zero_point b b_scale b_zero_point y_scale y_zero_point",
    family=F, layout=TERMINATE, doc="Quantized matmul: integer accumulation, then requantize.")
def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    acc = np.matmul(_centered(a, a_zero_point), _centered(b, b_zero_point, axis=-1 if b_zero_point.size > 1 else None))
    bs = np.asarray(b_scale, np.float64)
    return _requant(acc, np.asarray(a_scale, np.float64) * bs, y_scale, y_zero_point, y_zero_point.dtype)


def _qlinear_conv_infer(inputs, attrs):
    """Conv's shape rule on (x, w); the element type of the output zero point."""
    from tensorbridge.ops.schema import get

    (_, shape), = get("Conv").infer([inputs[0], inputs[3]], attrs)
    zp = inputs[7] if len(inputs) > 7 else None
    return [(zp.dtype if zp is not None else inputs[0].dtype, shape)]


@op("QLinearConv", inputs="x x_scale x_zero_point w w_scale w_zero_point y_scale y_zero_point B?",
    family=F, layout=IMPLICIT, infer=_qlinear_conv_infer,
    attrs={"strides": Attr("ints", None), "pads": Attr("ints", None), "dilations": Attr("ints", None),
           "group": Attr("int", 1), "auto_pad": Attr("str", "NOTSET"), "kernel_shape": Attr("ints", None),
           "layout": Attr("str", "NCHW")},
    doc="Quantized convolution: integer accumulation (+ int32 bias), then requantize. Channels-last "
        "(layout NHWC): com.microsoft.QLinearConv with channels_last=1.")
def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, *,
                 strides, pads, dilations, group, auto_pad, kernel_shape, layout):
    if layout == "NHWC":  # the weights stay [out, in/groups, *kernel]
        y = qlinear_conv(np.moveaxis(x, -1, 1), x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                         y_zero_point, B, strides=strides, pads=pads, dilations=dilations, group=group,
                         auto_pad=auto_pad, kernel_shape=kernel_shape, layout="NCHW")
        return np.moveaxis(y, 1, -1)
    per_channel = np.asarray(w_zero_point).size > 1
    xc = _centered(x, x_zero_point)
    wc = _centered(w, w_zero_point, axis=0 if per_channel else None)
    nsp = x.ndim - 2
    acc = K.conv(xc, wc, None, strides=strides, pads=pads, dilations=dilations, group=group, auto_pad=auto_pad)
    if B is not None:
        acc = acc + B.astype(np.float64).reshape((1, -1) + (1,) * nsp)
    ws = np.asarray(w_scale, np.float64)
    scale = np.asarray(x_scale, np.float64) * (ws.reshape((1, -1) + (1,) * nsp) if ws.size > 1 else ws)
    return _requant(acc, scale, y_scale, y_zero_point, y_zero_point.dtype)


def _decompose_qlinear_conv(graph, node) -> bool:
    """The IR's QDQ form: DequantizeLinear on x, w (per output channel: axis 0) and the int32 bias (at
    x_scale * w_scale), the float Conv, QuantizeLinear. Needs constant scales and zero points."""
    x, xs, xz, w, ws, wz, ys, yz = node.inputs[:8]
    b = node.input(8)
    if any(v is None or v.const is None for v in (xs, xz, ws, wz, ys, yz)):
        return False

    bld = Builder.replacing(node)

    def param(v, tag):  # one element: a scalar, so that it is per tensor
        arr = np.asarray(v.const)
        return bld.const(arr.reshape(()) if arr.size == 1 else arr.reshape(-1), bld.name(tag), literal=False)

    def add(op_name, inputs, attrs, tag):
        return bld.emit(op_name, inputs, attrs, suffix=tag)

    conv_in = [add("DequantizeLinear", [x, param(xs, "x_scale"), param(xz, "x_zero_point")], {}, "dq_x"),
               add("DequantizeLinear", [w, param(ws, "w_scale"), param(wz, "w_zero_point")], {"axis": 0}, "dq_w")]
    if b is not None:
        scale = (np.asarray(xs.const, np.float64).reshape(-1) * np.asarray(ws.const, np.float64).reshape(-1))
        scale_v = bld.const(scale.astype(np.float32).reshape(-1 if scale.size > 1 else ()), bld.name("b_scale"),
                            literal=False)
        zero = bld.const(np.zeros(scale_v.const.shape, np.int32), bld.name("b_zero_point"), literal=False)
        conv_in.append(add("DequantizeLinear", [b, scale_v, zero], {"axis": 0}, "dq_b"))
    y = add("Conv", conv_in, dict(node.attrs), "conv")
    graph.replace_node(node, [add("QuantizeLinear", [y, param(ys, "y_scale"), param(yz, "y_zero_point")], {},
                                   "q")])
    return True


set_decomposition("QLinearConv", _decompose_qlinear_conv)


def inside_quantized_unit(v) -> bool:
    """A float value every reader of which quantizes it (through a fused ReLU/Clip at most): the inside
    of an integer kernel, which runtimes never materialise the same way; its quantized result is compared."""
    uses = v.uses()
    return bool(uses) and all(n.op == "QuantizeLinear" or (n.op in ("Relu", "Clip") and
                                                            inside_quantized_unit(n.outputs[0])) for n, _ in uses)
