"""Paddle's layers with weights or windows, read into the IR.

Pooling follows Paddle's CPU kernels: with `ceil_mode` the output size rounds up (no window is dropped for
starting in the padding); max pooling ignores the padding; an `exclusive` average divides by the part of the
window inside the image, a non-exclusive one by the whole kernel area, overhang included.
"""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.reference.kernels.conv import resolve_pads
from tensorbridge.rules.paddle.base import channels_first, const, ints, known_shape, op


def _pads(imp, shape, kernel, strides, dilations) -> list[int]:
    """[begin..., end...] from `paddings` ([p] per axis, or [begin, end] per axis) and `padding_algorithm`."""
    rank = len(kernel)
    algorithm = imp.attrs.choice("padding_algorithm", "EXPLICIT", ("EXPLICIT", "SAME", "VALID"))
    p = list(imp.attrs.get("paddings", [0] * rank))
    if algorithm != "EXPLICIT":
        return resolve_pads(shape[2:], kernel, strides, dilations, None,
                            "SAME_UPPER" if algorithm == "SAME" else "VALID")
    if len(p) == rank:
        return p * 2
    if len(p) == 2 * rank:
        return p[0::2] + p[1::2]
    raise ModelError(f"paddings {p} do not fit {rank} spatial axes")


def _filter_window(imp, what: str) -> tuple:
    """(input shape, filter, kernel, strides, dilations) of a convolution over a channels-first image."""
    a = imp.attrs
    channels_first(imp, what)
    shape = known_shape(imp.x, what)
    weight = const(imp, 1, "filter")
    kernel = list(weight.shape[2:])
    strides, dilations = (list(a.get(key, [1] * len(kernel))) for key in ("strides", "dilations"))
    return shape, weight, kernel, strides, dilations


@op("conv2d", "depthwise_conv2d", produces="Conv")
def conv(imp, node):
    a = imp.attrs
    shape, weight, kernel, strides, dilations = _filter_window(imp, node.type)
    groups = a.get("groups", 1)
    if a.raw.get("padding_algorithm") == "SAME":
        dilations = [1] * len(kernel)  # Paddle's SAME padding drops the dilation (phi's UpdatePaddingAndDilation)
    if weight.shape[1] * groups != shape[1]:
        raise ModelError(f"a filter of {weight.shape[1]} channels in {groups} groups does not fit {shape[1]} "
                         "input channels")
    return imp.b.op("Conv", imp.x, imp.inputs[1], kernel_shape=kernel, strides=strides, dilations=dilations,
                    group=groups, pads=_pads(imp, shape, kernel, strides, dilations))


@op("conv2d_transpose", produces="ConvTranspose")
def conv_transpose(imp, node):
    a = imp.attrs
    shape, _, kernel, strides, dilations = _filter_window(imp, node.type)
    if a.choice("padding_algorithm", "EXPLICIT", ("EXPLICIT", "VALID")) == "VALID":
        pads = [0] * 2 * len(kernel)
    else:
        pads = _pads(imp, shape, kernel, strides, dilations)
    if len(imp.inputs) > 2 and imp.inputs[2] is not None and ints(imp, 2, "output size"):
        raise ModelError("an explicit output_size is not read")
    output_padding = list(a.get("output_padding") or [0] * len(kernel))
    return imp.b.op("ConvTranspose", imp.x, imp.inputs[1], kernel_shape=kernel, strides=strides,
                    dilations=dilations, group=a.get("groups", 1), pads=pads, output_padding=output_padding)


@op("batch_norm_", produces="BatchNormalization")
def batch_norm(imp, node):
    """Inference with the running statistics (inputs: x, mean, variance, scale, bias)."""
    a = imp.attrs
    channels_first(imp, "batch_norm")
    if not a.get("use_global_stats", True) and not a.get("is_test", True):
        raise ModelError("batch statistics (training mode) are not read")
    a.get("use_global_stats")
    x, mean, variance, scale, bias = imp.inputs[:5]
    for i, what in ((1, "mean"), (2, "variance"), (3, "scale"), (4, "bias")):
        const(imp, i, what)
    y = imp.b.op("BatchNormalization", x, scale, bias, mean, variance, epsilon=a.get("epsilon", 1e-5))
    return [y, mean, variance, mean, variance, None]


@op("layer_norm", produces="LayerNormalization")
def layer_norm(imp, node):
    a = imp.attrs
    x, scale, bias = imp.inputs[:3]
    rank = len(known_shape(imp.x, "layer_norm"))
    axis = a.get("begin_norm_axis", 1)
    width = math.prod(x.shape[axis:])
    b = imp.b
    if scale is None or bias is None:
        raise ModelError("layer_norm without a scale or a bias is not read")
    if axis == rank - 1:
        return [b.op("LayerNormalization", x, scale, bias, axis=axis, epsilon=a.get("epsilon", 1e-5)), None, None]
    shape = b.const(np.array(x.shape[axis:], np.int64))
    scale, bias = (b.op("Reshape", v, shape, suffix=s) for v, s in ((scale, "scale"), (bias, "bias")))
    if const(imp, 1, "scale").size != width:
        raise ModelError("the scale does not cover the normalized axes")
    return [b.op("LayerNormalization", x, scale, bias, axis=axis, epsilon=a.get("epsilon", 1e-5)), None, None]


@op("group_norm", produces="GroupNormalization")
def group_norm(imp, node):
    a = imp.attrs
    channels_first(imp, "group_norm")
    x, scale, bias = imp.inputs[:3]
    const(imp, 1, "scale"), const(imp, 2, "bias")
    return [imp.b.op("GroupNormalization", x, scale, bias, num_groups=a.get("groups"),
                     epsilon=a.get("epsilon", 1e-5)), None, None]


@op("instance_norm", produces="InstanceNormalization")
def instance_norm(imp, node):
    x, scale, bias = imp.inputs[:3]
    const(imp, 1, "scale"), const(imp, 2, "bias")
    return [imp.b.op("InstanceNormalization", x, scale, bias, epsilon=imp.attrs.get("epsilon", 1e-5)), None, None]


@op("pool2d", produces=("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "Pad"))
def pool2d(imp, node):
    a, b = imp.attrs, imp.b
    channels_first(imp, "pool2d")
    shape = known_shape(imp.x, "pool2d")
    kind = a.choice("pooling_type", "max", ("max", "avg"))
    size = shape[2:]
    kernel = ints(imp, 1, "kernel size")
    kernel = kernel * 2 if len(kernel) == 1 else kernel
    strides = list(a.get("strides", [1, 1]))
    exclusive, ceil = a.get("exclusive", True), a.get("ceil_mode", False)
    if a.get("global_pooling", False) or (a.get("adaptive", False) and kernel == [1, 1]):
        a.get("adaptive"), a.get("paddings"), a.get("padding_algorithm")
        return b.op("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", imp.x)
    if a.get("adaptive", False):
        if any(n % k for n, k in zip(size, kernel)):
            raise ModelError(f"adaptive pooling of {list(size)} to {kernel} (not a whole number of windows) is not "
                             "read")
        a.get("paddings"), a.get("padding_algorithm")
        window = [n // k for n, k in zip(size, kernel)]
        return b.op("MaxPool" if kind == "max" else "AveragePool", imp.x, kernel_shape=window, strides=window)
    pads = _pads(imp, shape, kernel, strides, [1, 1])
    rounding = math.ceil if ceil else math.floor
    out = [rounding((n + p0 + p1 - k) / s) + 1 for n, p0, p1, k, s in zip(size, pads[:2], pads[2:], kernel, strides)]
    if min(out) < 1:
        raise ModelError(f"kernel {kernel} is larger than the padded input {list(size)}")
    end = [max((o - 1) * s + k - n - p0 - p1, 0) + p1
           for o, s, k, n, p0, p1 in zip(out, strides, kernel, size, pads[:2], pads[2:])]
    if kind == "max":
        return b.op("MaxPool", imp.x, kernel_shape=kernel, strides=strides, pads=[*pads[:2], *end])
    if exclusive:
        return b.op("AveragePool", imp.x, kernel_shape=kernel, strides=strides, pads=[*pads[:2], *end],
                    count_include_pad=0)
    padded = b.op("Pad", imp.x, b.const(np.array([0, 0, *pads[:2], 0, 0, *end], np.int64)), suffix="pad")
    return b.op("AveragePool", padded, kernel_shape=kernel, strides=strides, pads=[0] * 4, count_include_pad=1)


@op("matmul", produces=("MatMul", "Transpose"))
def matmul(imp, node):
    a, b = imp.attrs, imp.b
    x, y = imp.inputs[:2]
    if a.get("transpose_x", False):
        x = b.op("Transpose", x, perm=_swap_last(x, "matmul"), suffix="x_t")
    if a.get("transpose_y", False):
        y = b.op("Transpose", y, perm=_swap_last(y, "matmul"), suffix="y_t")
    return b.op("MatMul", x, y)


def _swap_last(x, what: str) -> list[int]:
    rank = len(known_shape(x, what)) if x.shape is not None else None
    if not rank or rank < 2:
        raise ModelError(f"{what} transposes an input of rank {rank}")
    return [*range(rank - 2), rank - 1, rank - 2]


@op("embedding", produces="Gather")
def embedding(imp, node):
    ids, table = imp.inputs[:2]
    const(imp, 1, "table")
    padding = imp.attrs.get("padding_idx", -1)
    if padding not in (None, -1) and np.any(const(imp, 1, "table")[padding]):
        raise ModelError(f"padding_idx {padding} (zeros for that id) with a nonzero table row is not read")
    return imp.b.op("Gather", table, ids, axis=0)


@op("prelu", produces="PRelu")
def prelu(imp, node):
    a, b = imp.attrs, imp.b
    x, alpha = imp.inputs[:2]
    slopes = const(imp, 1, "slopes")
    rank = len(known_shape(x, "prelu"))
    mode = a.choice("mode", "all", ("all", "channel", "element"))
    channels_first(imp, "prelu")
    if mode == "channel":
        slopes = slopes.reshape([-1] + [1] * (rank - 2))
    elif mode == "element":
        slopes = slopes.reshape(x.shape[1:])
    else:
        slopes = slopes.reshape(())
    return b.op("PRelu", x, imp.weight("slope", slopes.astype(np.float32)))


@op("dropout", produces=("Mul",))
def dropout(imp, node):
    """At inference "upscale_in_train" passes values through; "downgrade_in_infer" scales them by 1 - p."""
    a = imp.attrs
    mode = a.choice("mode", "upscale_in_train", ("upscale_in_train", "downgrade_in_infer"))
    p = a.get("p")
    if p is None and len(imp.inputs) > 2 and imp.inputs[2] is not None:
        p = float(const(imp, 2, "probability").reshape(-1)[0])
    if mode == "upscale_in_train":
        return [imp.x, None]
    return [imp.b.op("Mul", imp.x, imp.b.const(np.array(1.0 - float(p or 0.5), imp.x.dtype))), None]


@op("nearest_interp", "bilinear_interp", produces="Resize")
def interpolate(imp, node):
    """To `out_h` x `out_w`, or by `scale`: nearest samples at floor(i / scale); linear at pixel centres
    (align_mode 0), at i / scale (align_mode 1) or with the corners aligned."""
    a, b = imp.attrs, imp.b
    channels_first(imp, node.type)
    shape = known_shape(imp.x, node.type)
    if len(shape) != 4:
        raise ModelError(f"{node.type} of a rank-{len(shape)} input")
    if any(v is not None for v in imp.inputs[1:4]):
        raise ModelError("an output size or scale given as a tensor is not read")
    method = a.choice("interp_method", node.type.split("_")[0], (node.type.split("_")[0],))
    corners, align_mode = a.get("align_corners", False), a.get("align_mode", 1)
    out_h, out_w, scale = a.get("out_h", -1), a.get("out_w", -1), list(a.get("scale") or [])
    a.get("out_d")
    if out_h > 0 and out_w > 0 and all(isinstance(d, int) for d in shape):
        sizes, scales = b.const(np.array([*shape[:2], out_h, out_w], np.int64)), None
    elif out_h > 0 and out_w > 0 and out_h % shape[2] == 0 and out_w % shape[3] == 0:  # whole factors: exact
        sizes, scales = None, b.const(np.array([1, 1, out_h // shape[2], out_w // shape[3]], np.float32))
    elif out_h > 0 and out_w > 0:
        raise ModelError(f"resizing to {out_h} x {out_w} needs the batch size: pass --input-shape")
    elif len(scale) in (1, 2) and min(scale) > 0:
        scale = scale * 2 if len(scale) == 1 else scale
        sizes, scales = None, b.const(np.array([1, 1, *scale], np.float32))
    else:
        raise ModelError("neither an output size nor a scale")
    if method == "nearest":
        if corners:
            raise ModelError("nearest interpolation with align_corners is not read")
        return b.op("Resize", imp.x, None, scales, sizes, mode="nearest",
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    transform = "align_corners" if corners else ("half_pixel" if align_mode == 0 else "asymmetric")
    return b.op("Resize", imp.x, None, scales, sizes, mode="linear", coordinate_transformation_mode=transform)
