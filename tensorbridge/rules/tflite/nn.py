"""TFLite <-> IR: convolutions, fully connected layers, pooling, softmax, resizing, normalisation.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.tflite.base import NHWC, R, builtin, filter_weight, litert_arithmetic, padding_attrs
from tensorbridge.rules.tflite.kernel import (
    NotInteger,
    Rule,
    const_dq,
    gemm_plain,
    params,
    window,
)


@builtin("CONV_2D", produces="Conv")
def read_conv_2d(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    attrs = padding_attrs(opts, {"strides": [opts.StrideH(), opts.StrideW()],
                                 "dilations": [opts.DilationHFactor(), opts.DilationWFactor()], "layout": NHWC})
    wt = filter_weight(imp, w, (0, 3, 1, 2), "oihw")  # OHWI -> OIHW
    cin = x.shape[-1] if x.shape is not None else None
    if isinstance(cin, int) and wt.shape is not None and wt.shape[1] != cin:
        attrs["group"] = cin // wt.shape[1]
    y = imp.emit("Conv", [x, wt] + ([b] if b is not None else []), {**attrs, **litert_arithmetic(imp)})
    return imp.fused(y, opts.FusedActivationFunction())


@builtin("DEPTHWISE_CONV_2D", produces="Conv")
def read_depthwise_conv_2d(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    cin = x.shape[-1]
    if not isinstance(cin, int):
        raise ModelError("DEPTHWISE_CONV_2D needs a static channel count")
    wt = filter_weight(imp, w, (3, 0, 1, 2), "oihw")  # [1, H, W, C*M] -> [C*M, 1, H, W]
    attrs = padding_attrs(opts, {"strides": [opts.StrideH(), opts.StrideW()],
                                 "dilations": [opts.DilationHFactor(), opts.DilationWFactor()], "group": int(cin),
                                 "layout": NHWC})
    y = imp.emit("Conv", [x, wt] + ([b] if b is not None else []), {**attrs, **litert_arithmetic(imp)})
    return imp.fused(y, opts.FusedActivationFunction())


def _weighted(ctx, b_index: int | None = 2) -> bool:
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


def write_conv(ctx):
    node = ctx.node
    w_shape = node.inputs[1].shape
    x, padding, strides, dil = window(ctx, w_shape[2:])
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


R.add_export(("Conv",), Rule("CONV_2D", write_conv, fuses=True, int_version=3, accepts=_weighted))


@builtin("TRANSPOSE_CONV", produces="ConvTranspose")
def read_transpose_conv(imp, ins, opts):
    output_shape, w, x = ins[0], ins[1], ins[2]
    b = ins[3] if len(ins) > 3 else None
    if output_shape.const is None:
        raise ModelError("TRANSPOSE_CONV needs a constant output shape")
    out = [int(d) for d in output_shape.const]
    wt = filter_weight(imp, w, (3, 0, 1, 2), "iohw")  # [out, H, W, in] -> [in, out, H, W]
    attrs = {"strides": [opts.StrideH(), opts.StrideW()], "output_shape": out[1:3], "layout": NHWC,
             "auto_pad": "SAME_UPPER" if opts.Padding() == 0 else "VALID"}
    if opts.Padding() == 1:
        attrs.pop("output_shape")
    y = imp.emit("ConvTranspose", [x, wt] + ([b] if b is not None else []), attrs)
    code = opts.FusedActivationFunction() if hasattr(opts, "FusedActivationFunction") else 0
    return imp.fused(y, code)


def _conv_3d_attrs(opts) -> dict:
    return {"strides": [opts.StrideD(), opts.StrideH(), opts.StrideW()], "layout": NHWC,
            "auto_pad": "SAME_UPPER" if opts.Padding() == 0 else "VALID"}


@builtin("CONV_3D", produces="Conv")
def read_conv_3d(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    wt = filter_weight(imp, w, (4, 3, 0, 1, 2), "oidhw")  # [D, H, W, I, O] -> [O, I, D, H, W]
    attrs = {**_conv_3d_attrs(opts), "dilations": [opts.DilationDFactor(), opts.DilationHFactor(),
                                                   opts.DilationWFactor()]}
    cin = x.shape[-1] if x.shape is not None else None
    if isinstance(cin, int) and wt.shape[1] != cin:
        attrs["group"] = cin // wt.shape[1]
    y = imp.emit("Conv", [x, wt] + ([b] if b is not None else []), attrs)
    return imp.fused(y, opts.FusedActivationFunction())


@builtin("CONV_3D_TRANSPOSE", produces="ConvTranspose")
def read_conv_3d_transpose(imp, ins, opts):
    output_shape, w, x = ins[0], ins[1], ins[2]
    b = ins[3] if len(ins) > 3 else None
    if any(d != 1 for d in (opts.DilationDFactor(), opts.DilationHFactor(), opts.DilationWFactor())):
        raise ModelError("CONV_3D_TRANSPOSE with dilation is not supported")
    if output_shape.const is None:
        raise ModelError("CONV_3D_TRANSPOSE needs a constant output shape")
    wt = filter_weight(imp, w, (4, 3, 0, 1, 2), "iodhw")  # [D, H, W, O, I] -> [I, O, D, H, W]
    attrs = _conv_3d_attrs(opts)
    if attrs["auto_pad"] == "SAME_UPPER":
        attrs["output_shape"] = [int(d) for d in output_shape.const][1:4]
    y = imp.emit("ConvTranspose", [x, wt] + ([b] if b is not None else []), attrs)
    return imp.fused(y, opts.FusedActivationFunction())


@builtin("FULLY_CONNECTED", produces="Dense")
def read_fully_connected(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    wt = filter_weight(imp, w, (1, 0), "in_out")  # [out, in] -> [in, out]
    keep = opts.KeepNumDims() if opts is not None else False
    if x.shape is not None and len(x.shape) != 2 and not keep:
        x = imp.emit("Reshape", [x, imp.const([-1, wt.shape[0]], np.int64)], suffix="flatten")
    y = imp.emit("Dense", [x, wt] + ([b] if b is not None else []), litert_arithmetic(imp))
    return imp.fused(y, opts.FusedActivationFunction() if opts is not None else 0)


@builtin("BATCH_MATMUL", produces="MatMul")
def read_batch_matmul(imp, ins, opts):
    a, b = ins
    if opts is not None and opts.AdjX():
        a = imp.emit("Transpose", [a], {"perm": _swap_last(a)}, suffix="adj_x")
    if opts is not None and opts.AdjY():
        b = imp.emit("Transpose", [b], {"perm": _swap_last(b)}, suffix="adj_y")
    return imp.emit("MatMul", [a, b])


def _swap_last(v):
    r = len(v.shape)
    return list(range(r - 2)) + [r - 1, r - 2]


def _fc_ok(ctx) -> bool:
    node = ctx.node
    if node.op == "Gemm":
        return gemm_plain(node) and _weighted(ctx)
    return _weighted(ctx, 2 if node.op == "Dense" else None)


def write_fully_connected(ctx):
    node = ctx.node
    if node.op == "Gemm":
        if not gemm_plain(node):
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


R.add_export(("Gemm",), Rule("FULLY_CONNECTED", write_fully_connected, fuses=True, int_version=4, accepts=_fc_ok))
R.add_export(("Dense",), Rule("FULLY_CONNECTED", write_fully_connected, fuses=True, int_version=4, accepts=_fc_ok))
R.add_export(("MatMul",), Rule("FULLY_CONNECTED", write_fully_connected, fuses=True, int_version=4, accepts=_fc_ok))


@builtin("AVERAGE_POOL_2D", "MAX_POOL_2D", produces=("AveragePool", "MaxPool"))
def read_pool_2d(imp, ins, opts):
    op = "MaxPool" if imp.op_name == "MAX_POOL_2D" else "AveragePool"
    attrs = padding_attrs(opts, {"kernel_shape": [opts.FilterHeight(), opts.FilterWidth()],
                                 "strides": [opts.StrideH(), opts.StrideW()], "layout": NHWC})
    return imp.fused(imp.emit(op, [ins[0]], attrs), opts.FusedActivationFunction())


@builtin("L2_POOL_2D", produces="AveragePool")
def read_l2_pool_2d(imp, ins, opts):
    """LiteRT's L2 pooling is the root of the mean of squares over the window's in-bounds entries."""
    attrs = padding_attrs(opts, {"kernel_shape": [opts.FilterHeight(), opts.FilterWidth()],
                                 "strides": [opts.StrideH(), opts.StrideW()], "layout": NHWC})
    squares = imp.emit("Mul", [ins[0], ins[0]], suffix="squares")
    mean = imp.emit("AveragePool", [squares], {**attrs, "count_include_pad": 0}, suffix="mean")
    return imp.fused(imp.emit("Sqrt", [mean]), opts.FusedActivationFunction())


def write_pool(average: bool):
    def write(ctx):
        k = ctx.node.attrs["kernel_shape"]
        if ctx.node.attrs.get("ceil_mode", 0) or list(ctx.node.attrs.get("dilations") or [1, 1]) != [1, 1]:
            raise NotInteger("ceil_mode and dilated pooling are not written")
        pad = ("zero" if ctx.node.attrs.get("count_include_pad") else "refuse") if average else "lowest"
        x, padding, strides, _ = window(ctx, k, pad)
        return [x], ("Pool2DOptions", {"Padding": padding, "StrideW": strides[1], "StrideH": strides[0],
                                       "FilterWidth": k[1], "FilterHeight": k[0],
                                       "FusedActivationFunction": ctx.activation()})
    return write


R.add_export(("MaxPool",), Rule("MAX_POOL_2D", write_pool(average=False), keeps_quant=True, fuses=True))
R.add_export(("AveragePool",), Rule("AVERAGE_POOL_2D", write_pool(average=True), keeps_quant=True, fuses=True))


def write_global_pool(ctx):
    if ctx.node.attrs.get("layout") != "NHWC":
        raise NotInteger("global pooling is written in NHWC only")
    rank = len(ctx.node.inputs[0].shape)
    return [ctx.x(0), ctx.index_const("axes", list(range(1, rank - 1)))], ("ReducerOptions", {"KeepDims": True})


R.add_export(("GlobalAveragePool",), Rule("MEAN", write_global_pool))
R.add_export(("GlobalMaxPool",), Rule("REDUCE_MAX", write_global_pool, keeps_quant=True))


#: ops TFLite runs over the last axis only (SOFTMAX, LOG_SOFTMAX): the layout planner moves their axis last
LAST_AXIS_ONLY = frozenset({"Softmax", "LogSoftmax"})


@builtin("SOFTMAX", produces="Softmax")
def read_softmax(imp, ins, opts):
    x = ins[0]
    beta = opts.Beta() if opts is not None else 1.0
    if beta != 1.0:
        x = imp.emit("Mul", [x, imp.const(beta)], suffix="beta")
    return imp.emit("Softmax", [x], {"axis": -1})


@builtin("LOG_SOFTMAX", produces="LogSoftmax")
def read_log_softmax(imp, ins, opts):
    return imp.emit("LogSoftmax", [ins[0]], {"axis": -1})


def write_softmax(ctx):
    rank = len(ctx.node.inputs[0].shape)
    if ctx.node.attrs.get("axis", -1) % rank != rank - 1:
        raise NotInteger("SOFTMAX works on the last axis only")
    return [ctx.x(0)], ("SoftmaxOptions", {"Beta": 1.0})


R.add_export(("Softmax",), Rule("SOFTMAX", write_softmax, fixed_out=(1 / 256, -128)))


@builtin("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", produces="Resize")
def read_resize(imp, ins, opts):
    attrs = tf_semantics.resize_attrs(imp.op_name == "RESIZE_BILINEAR", bool(opts.AlignCorners()),
                                      bool(opts.HalfPixelCenters()))
    return tf_semantics.resize(imp, ins[0], ins[1], {**attrs, "layout": NHWC})


@builtin("SPACE_TO_DEPTH", produces="SpaceToDepth")
def read_space_to_depth(imp, ins, opts):
    return imp.emit("SpaceToDepth", [ins[0]], {"blocksize": int(opts.BlockSize()), "layout": NHWC})


@builtin("DEPTH_TO_SPACE", produces="DepthToSpace")
def read_depth_to_space(imp, ins, opts):
    return imp.emit("DepthToSpace", [ins[0]], {"blocksize": int(opts.BlockSize()), "mode": "DCR", "layout": NHWC})


@builtin("L2_NORMALIZATION", produces="LpNormalization")
def read_l2_norm(imp, ins, opts):
    return imp.emit("LpNormalization", [ins[0]], {"axis": -1, "p": 2})


@builtin("LOCAL_RESPONSE_NORMALIZATION", produces="LRN")
def read_lrn(imp, ins, opts):
    r = int(opts.Radius())
    return imp.emit("LRN", [ins[0]], {"size": 2 * r + 1, "alpha": float(opts.Alpha()) * (2 * r + 1),
                                      "beta": float(opts.Beta()), "bias": float(opts.Bias()), "layout": NHWC})

R.add_export(("Dropout",), Rule("", None, passes_through=True))


@builtin("NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", produces="NonMaxSuppression")
def read_non_max_suppression(imp, ins, opts):
    return tf_semantics.non_max_suppression(imp, *ins[:5], ins[5] if len(ins) > 5 else None, padded=True,
                                            with_scores=len(ins) > 5, counted=True)
