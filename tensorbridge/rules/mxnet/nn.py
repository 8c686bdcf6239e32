"""MXNet's layers with weights or windows, read into the IR.

Pooling follows MXNet: "valid" rounds the output size down, "full" up; max pooling ignores the padding; the
average divides by the part of the window inside the padded image when `count_include_pad` (the default), the
overhang of "full" rounding excluded, and by the part inside the image otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.mxnet.base import known_shape, op, spatial
from tensorbridge.rules.probes import window_pool

CHANNELS_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _image(imp, what: str) -> tuple[int, ...]:
    shape = known_shape(imp.x, what)
    if len(shape) not in (3, 4, 5):
        raise ModelError(f"{what} needs an (N, C, spatial...) input, not rank {len(shape)}")
    layout = imp.attrs.text("layout")
    if layout is not None and layout != CHANNELS_FIRST[len(shape) - 2]:
        raise ModelError(f"layout {layout}: only channels-first {what} is read")
    return shape


def _const(imp, index: int, what: str) -> np.ndarray:
    v = imp.inputs[index] if index < len(imp.inputs) else None
    if v is None or v.const is None:
        raise ModelError(f"its {what} is not a parameter in the params file")
    return np.asarray(v.const)


@op("Convolution", "Deconvolution", produces=("Conv", "ConvTranspose"))
def convolution(imp, node):
    a = imp.attrs
    shape = _image(imp, node.op)
    rank = len(shape) - 2
    k = a.ints("kernel")
    if not k or len(k) != rank:
        raise ModelError(f"kernel {k} does not fit a rank-{len(shape)} input")
    s, d, p = spatial(a, "stride", rank, 1), spatial(a, "dilate", rank, 1), spatial(a, "pad", rank, 0)
    groups, filters = a.int("num_group", 1), a.int("num_filter")
    deconv = node.op == "Deconvolution"
    no_bias = a.bool("no_bias", deconv)  # Deconvolution has no bias unless asked
    weight = imp.inputs[1]
    _const(imp, 1, "weight")
    attrs = {"kernel_shape": k, "strides": s, "pads": p * 2, "dilations": d, "group": groups}
    if deconv:
        adj = spatial(a, "adj", rank, 0)
        if a.ints("target_shape"):
            raise ModelError("target_shape (the output size chosen by MXNet's padding search) is not read")
        attrs["output_padding"] = adj
    bias = None if no_bias else imp.inputs[2]
    if bias is not None:
        _const(imp, 2, "bias")
    if filters is None or weight.shape[0 if not deconv else 1] * (groups if deconv else 1) != filters:
        raise ModelError(f"num_filter {filters} does not match its weight {list(weight.shape)}")
    return imp.b.op("ConvTranspose" if deconv else "Conv", imp.x, weight, bias, **attrs)


@op("FullyConnected", produces=("Flatten", "Dense"))
def fully_connected(imp, node):
    a = imp.attrs
    x, b = imp.x, imp.b
    hidden, no_bias, flatten = a.int("num_hidden"), a.bool("no_bias"), a.bool("flatten", True)
    weight = _const(imp, 1, "weight")
    if weight.ndim != 2 or weight.shape[0] != hidden:
        raise ModelError(f"num_hidden {hidden} does not match its weight {list(weight.shape)}")
    if flatten and len(x.shape or ()) != 2:
        x = b.op("Flatten", x, suffix="flatten", axis=1)
    bias = None if no_bias else imp.inputs[2]
    if bias is not None:
        _const(imp, 2, "bias")
    return b.op("Dense", x, imp.weight("weight", weight.T), bias)


def pooled_size(size, k, s, p, full: bool) -> list[int]:
    rounding = math.ceil if full else math.floor
    return [rounding((n + 2 * pp - kk) / ss) + 1 for n, kk, ss, pp in zip(size, k, s, p)]


def pool_reference(x: np.ndarray, kind: str, k, s, p, full: bool, count_include_pad: bool) -> np.ndarray:
    """MXNet's pooling of an (N, C, H, W) array as its CPU code computes it (max, avg or sum)."""
    return window_pool(x, kind, k, s, p, pooled_size(x.shape[2:], k, s, p, full), count_include_pad)


@op("Pooling", produces=("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "ReduceSum", "Pad", "Mul"))
def pooling(imp, node):
    a, b = imp.attrs, imp.b
    shape = _image(imp, "Pooling")
    rank = len(shape) - 2
    kind = a.choice("pool_type", "max", ("max", "avg", "sum"))
    convention = a.choice("pooling_convention", "valid", ("valid", "full"))
    include_pad = a.bool("count_include_pad", True)
    k = spatial(a, "kernel", rank, 1)
    s, p = spatial(a, "stride", rank, 1), spatial(a, "pad", rank, 0)
    if a.bool("global_pool"):
        if kind == "sum":
            return b.op("ReduceSum", imp.x, b.const(np.arange(2, rank + 2, dtype=np.int64)), keepdims=1)
        return b.op("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", imp.x)
    size = shape[2:]
    out = pooled_size(size, k, s, p, convention == "full")
    if min(out) < 1:
        raise ModelError(f"kernel {k} is larger than the padded input {list(size)}")
    end = [max((o - 1) * ss + kk - n - 2 * pp, 0) for o, ss, kk, n, pp in zip(out, s, k, size, p)]
    zeros = [0] * rank
    if kind == "max":
        return b.op("MaxPool", imp.x, kernel_shape=k, strides=s, pads=[*p, *(pp + e for pp, e in zip(p, end))])
    if kind == "avg" and not include_pad:
        return b.op("AveragePool", imp.x, kernel_shape=k, strides=s, pads=[*p, *(pp + e for pp, e in zip(p, end))],
                    count_include_pad=0)
    x = imp.x
    tail = end if kind == "sum" else zeros  # a sum reads zeros past the end; an average excludes the overhang
    if any(p) or any(tail):
        pads = np.array([0, 0, *p, 0, 0, *(pp + t for pp, t in zip(p, tail))], np.int64)
        x = b.op("Pad", x, b.const(pads), suffix="pad")
    if kind == "sum":
        mean = b.op("AveragePool", x, kernel_shape=k, strides=s, pads=zeros * 2, count_include_pad=0, suffix="mean")
        return b.op("Mul", mean, b.const(np.float32(np.prod(k))))
    return b.op("AveragePool", x, kernel_shape=k, strides=s, pads=[*zeros, *end], count_include_pad=0)


@op("BatchNorm", produces=("BatchNormalization", "Mul", "Add"))
def batch_norm(imp, node):
    """Inference: the running statistics, whatever `use_global_stats` says; `fix_gamma` (the default) means a
    scale of 1 whatever the gamma parameter holds."""
    a, b = imp.attrs, imp.b
    x = imp.x
    eps, axis = a.float("eps", 1e-3), a.int("axis", 1)
    a.bool("use_global_stats")
    if a.bool("output_mean_var"):
        raise ModelError("output_mean_var: the batch statistics are outputs only in training")
    gamma, beta, mean, var = (_const(imp, i, what) for i, what in
                              ((1, "gamma"), (2, "beta"), (3, "moving mean"), (4, "moving variance")))
    fixed = a.bool("fix_gamma", True)
    if fixed:
        gamma = np.ones_like(gamma)
    rank = len(x.shape or ())
    axis = axis % rank if rank else axis
    if axis == 1:
        scale = imp.weight("gamma", gamma) if fixed else imp.inputs[1]
        return b.op("BatchNormalization", x, scale, *imp.inputs[2:5], epsilon=eps)
    factor = (gamma / np.sqrt(var.astype(np.float64) + eps)).astype(np.float32)
    shift = (beta - mean * factor).astype(np.float32)
    shape = [-1 if i == axis else 1 for i in range(rank)]
    y = b.op("Mul", x, imp.weight("scale", factor.reshape(shape)), suffix="scale")
    return b.op("Add", y, imp.weight("shift", shift.reshape(shape)))


@op("LayerNorm", produces="LayerNormalization")
def layer_norm(imp, node):
    a = imp.attrs
    rank = len(imp.x.shape or ())
    axis = a.int("axis", -1)
    if a.bool("output_mean_var"):
        raise ModelError("output_mean_var: the statistics as outputs are not read")
    if axis % rank != rank - 1:
        raise ModelError(f"LayerNorm over axis {axis} of a rank-{rank} tensor (only the last axis is read)")
    _const(imp, 1, "gamma"), _const(imp, 2, "beta")
    return imp.b.op("LayerNormalization", imp.x, imp.inputs[1], imp.inputs[2], axis=-1, epsilon=a.float("eps", 1e-5))


@op("InstanceNorm", produces="InstanceNormalization")
def instance_norm(imp, node):
    _const(imp, 1, "gamma"), _const(imp, 2, "beta")
    return imp.b.op("InstanceNormalization", imp.x, imp.inputs[1], imp.inputs[2], epsilon=imp.attrs.float("eps", 1e-3))


@op("L2Normalization", produces=("ReduceSumSquare", "Add", "Sqrt", "Div"))
def l2_normalization(imp, node):
    """x / sqrt(sum of squares + eps), the sum over everything but the batch ("instance"), the channels
    ("channel") or the spatial axes ("spatial")."""
    a, b = imp.attrs, imp.b
    rank = len(known_shape(imp.x, "L2Normalization"))
    mode = a.choice("mode", "instance", ("instance", "channel", "spatial"))
    axes = {"instance": range(1, rank), "channel": [1], "spatial": range(2, rank)}[mode]
    sums = b.op("ReduceSumSquare", imp.x, b.const(np.array(list(axes), np.int64)), keepdims=1, suffix="sum_squares")
    norm = b.op("Sqrt", b.op("Add", sums, b.const(np.float32(a.float("eps", 1e-10))), suffix="eps"), suffix="norm")
    return b.op("Div", imp.x, norm)


@op("LRN", produces="LRN")
def lrn(imp, node):
    a = imp.attrs
    return imp.b.op("LRN", imp.x, size=a.int("nsize"), alpha=a.float("alpha", 1e-4), beta=a.float("beta", 0.75),
                    bias=a.float("knorm", 2.0))


@op("Embedding", produces=("Cast", "Clip", "Gather"))
def embedding(imp, node):
    a, b = imp.attrs, imp.b
    table = _const(imp, 1, "weight")
    rows, width = a.int("input_dim"), a.int("output_dim")
    a.text("dtype")
    if table.shape != (rows, width):
        raise ModelError(f"input_dim {rows}, output_dim {width} do not match its weight {list(table.shape)}")
    indices = b.op("Cast", imp.x, to="int64", suffix="indices")
    return b.op("Gather", imp.inputs[1], _bounded(b, indices, rows, "clip"), axis=0)


def _bounded(b, indices, size: int, mode: str):
    """Indices as MXNet takes them: clipped into range, wrapped around, or as they are ("raise")."""
    if mode == "clip":
        low, high = (b.const(np.array(v, indices.dtype)) for v in (0, size - 1))
        return b.op("Clip", indices, low, high, suffix="clip")
    if mode == "wrap":
        return b.op("Mod", indices, b.const(np.array(size, indices.dtype)), suffix="wrap")
    return indices


@op("take", produces=("Clip", "Mod", "Gather"))
def take(imp, node):
    a, b = imp.attrs, imp.b
    data, indices = imp.inputs
    axis = a.int("axis", 0)
    shape = known_shape(data, "take")
    if indices.dtype.kind not in "iu":
        indices = b.op("Cast", indices, to="int64", suffix="indices")
    mode = a.choice("mode", "clip", ("clip", "wrap", "raise"))
    return b.op("Gather", data, _bounded(b, indices, shape[axis], mode), axis=axis)


@op("Dropout", produces=())
def dropout(imp, node):
    if imp.attrs.choice("mode", "training", ("training", "always")) == "always":
        raise ModelError('mode="always" drops values at inference too')
    imp.attrs.float("p"), imp.attrs.ints("axes")
    return imp.x


@op("UpSampling", produces="Resize")
def upsampling(imp, node):
    a, b = imp.attrs, imp.b
    a.choice("sample_type", "nearest", ("nearest",))
    a.text("multi_input_mode"), a.int("num_filter")
    if len(imp.inputs) != 1:
        raise ModelError("UpSampling of several inputs")
    scale = a.int("scale")
    rank = len(_image(imp, "UpSampling"))
    scales = b.const(np.array([1, 1] + [scale] * (rank - 2), np.float32))
    return b.op("Resize", imp.x, None, scales, mode="nearest", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor")


@op("_contrib_BilinearResize2D", produces="Resize")
def bilinear_resize(imp, node):
    """To `height` x `width` (mode "size"), sampling at the corners' alignment (the default) or at pixel centres
    as PyTorch does without it."""
    a, b = imp.attrs, imp.b
    a.choice("mode", "size", ("size",))
    shape = _image(imp, "BilinearResize2D")
    if len(shape) != 4 or a.float("scale_height") is not None or a.float("scale_width") is not None:
        raise ModelError("BilinearResize2D by scale factors is not read (give height and width)")
    height, width = a.int("height", 1), a.int("width", 1)
    corners = a.bool("align_corners", True)
    sizes = b.const(np.array([shape[0], shape[1], height, width], np.int64))
    return b.op("Resize", imp.x, None, None, sizes, mode="linear",
                coordinate_transformation_mode="align_corners" if corners else "pytorch_half_pixel")
