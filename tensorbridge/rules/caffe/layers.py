"""Caffe's layers with weights or windows, read into the IR.

Pooling follows Caffe, not the ONNX defaults: the output size is rounded up (then reduced by one when the last
window would start in the padding), max pooling ignores the padding, and average pooling divides by the part of
the window inside the padded image (padding counts, the overhang of the rounding does not). `pooled_size` and
`pool_reference` state that once; the writer proves every pooling it writes against them.
"""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.caffe.base import axis_of, image, layer, window
from tensorbridge.rules.probes import window_pool

MAX, AVE, STOCHASTIC = 0, 1, 2


def _blobs(imp, count: int, what: str):
    if len(imp.blobs) < count:
        raise ModelError(f"needs {count} weight blob(s) ({what}); the caffemodel has {len(imp.blobs)} for it")
    return imp.blobs


@layer("Convolution", "Deconvolution", produces=("Conv", "ConvTranspose"))
def convolution(imp, lay):
    p = lay.convolution_param
    n, c, _, _ = image(imp.x, lay.type)
    if p.axis != 1:
        raise ModelError(f"convolution over axis {p.axis} (only channels, axis 1, is read)")
    k, s = window(p, "kernel_size", 0), window(p, "stride", 1)
    pad, d = window(p, "pad", 0), window(p, "dilation", 1)
    g, out = p.group, p.num_output
    if min(k) < 1 or min(s) < 1 or min(d) < 1 or g < 1 or c % g or out % g:
        raise ModelError(f"kernel {k}, stride {s}, dilation {d}, group {g} and {out} outputs do not fit {c} "
                         "input channels")
    blobs = _blobs(imp, 2 if p.bias_term else 1, "filters" + (" and biases" if p.bias_term else ""))
    deconv = lay.type == "Deconvolution"
    shape = (c, out // g, *k) if deconv else (out, c // g, *k)
    weight = imp.weight("weight", _shaped(blobs[0], shape, "filters"))
    bias = imp.weight("bias", _shaped(blobs[1], (out,), "biases")) if p.bias_term else None
    attrs = {"kernel_shape": k, "strides": s, "pads": pad * 2, "dilations": d, "group": g}
    return imp.b.op("ConvTranspose" if deconv else "Conv", imp.x, weight, bias, **attrs)


def _shaped(blob: np.ndarray, shape, what: str) -> np.ndarray:
    if blob.size != int(np.prod(shape)):
        raise ModelError(f"its {what} blob has {blob.size} values ({list(blob.shape)}), the layer needs "
                         f"{list(shape)}")
    return blob.reshape(shape)


def pooled_size(size, k, s, p) -> list[int]:
    """Caffe's pooled (h, w): rounded up, less one on an axis whose last window would start in the end padding
    (checked on both axes when either is padded, as Caffe does)."""
    out = [int(math.ceil((n + 2 * pp - kk) / ss)) + 1 for n, kk, ss, pp in zip(size, k, s, p)]
    if any(p):
        out = [o - 1 if (o - 1) * ss >= n + pp else o for o, n, ss, pp in zip(out, size, s, p)]
    return out


def pool_reference(x: np.ndarray, method: int, k, s, p) -> np.ndarray:
    """Caffe's pooling of an NCHW float array (max or average), as its CPU code computes it."""
    return window_pool(x, "max" if method == MAX else "avg", k, s, p, pooled_size(x.shape[2:], k, s, p))


@layer("Pooling", produces=("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "Pad", "Slice"))
def pooling(imp, lay):
    p = lay.pooling_param
    _, _, h, w = image(imp.x, "Pooling")
    if p.pool == STOCHASTIC:
        raise ModelError("stochastic pooling (a random sample at training, a weighted average at test) is not read")
    b = imp.b
    if p.global_pooling:
        if window(p, "pad", 0) != [0, 0]:
            raise ModelError("global pooling with padding")
        return b.op("GlobalMaxPool" if p.pool == MAX else "GlobalAveragePool", imp.x)
    k, s, pad = window(p, "kernel_size", 0), window(p, "stride", 1), window(p, "pad", 0)
    if min(k) < 1 or min(s) < 1 or any(q >= kk for q, kk in zip(pad, k)):
        raise ModelError(f"kernel {k}, stride {s}, pad {pad} is not a pooling window")
    out = pooled_size((h, w), k, s, pad)
    x, size = imp.x, [h, w]
    if p.pool == AVE and any(pad):  # Caffe's average counts the padding but not the overhang: pad with zeros first
        x = b.op("Pad", x, b.const(np.array([0, 0, *pad, 0, 0, *pad], np.int64)), suffix="pad")
        size, pad = [n + 2 * q for n, q in zip(size, pad)], [0, 0]
    # what the last window reaches past the end, so that ONNX's rounded-down count of windows is Caffe's
    end = [(o - 1) * ss + kk - n - q for o, ss, kk, n, q in zip(out, s, k, size, pad)]
    if min(end) < 0:  # the last rows or columns are in no window
        keep = [n + min(e, 0) for n, e in zip(size, end)]
        x = b.op("Slice", x, *(b.const(np.array(a, np.int64)) for a in ([0, 0], keep, [2, 3])), suffix="unread")
        end = [max(e, 0) for e in end]
    if p.pool == MAX:
        return b.op("MaxPool", x, kernel_shape=k, strides=s, pads=[*pad, *end])
    return b.op("AveragePool", x, kernel_shape=k, strides=s, pads=[0, 0, *end], count_include_pad=0)


@layer("InnerProduct", produces=("Flatten", "Dense"))
def inner_product(imp, lay):
    p = lay.inner_product_param
    x = imp.x
    axis = axis_of(x, p.axis)
    if x.shape is None or not all(isinstance(d, int) for d in x.shape[axis:]):
        raise ModelError(f"InnerProduct needs an input of known size, not {x.shape}")
    if axis != len(x.shape) - 1:
        if axis != 1:
            raise ModelError(f"InnerProduct over axis {axis} of a rank-{len(x.shape)} tensor")
        x = imp.b.op("Flatten", x, suffix="flatten", axis=1)
    k, n = x.shape[-1], p.num_output
    blobs = _blobs(imp, 2 if p.bias_term else 1, "weights" + (" and biases" if p.bias_term else ""))
    matrix = _shaped(blobs[0], (k, n) if p.transpose else (n, k), "weights")
    matrix = imp.weight("weight", matrix if p.transpose else matrix.T)  # a view: 400 MB layers are not copied
    bias = imp.weight("bias", _shaped(blobs[1], (n,), "biases")) if p.bias_term else None
    y = imp.b.op("Dense", x, matrix, bias)
    y.producer.meta["caffe_transpose"] = bool(p.transpose)  # the layout of its weights blob, for writing back
    return y


@layer("BatchNorm", produces="BatchNormalization")
def batch_norm(imp, lay):
    """Caffe's BatchNorm keeps sums scaled by a factor (its third blob); a Scale layer reading it alone is its
    affine part, and is read into the same op."""
    p = lay.batch_norm_param
    if p.HasField("use_global_stats") and not p.use_global_stats:
        raise ModelError("use_global_stats: false normalises with each batch's own statistics (training)")
    c = image(imp.x, "BatchNorm")[1] if len(imp.x.shape or ()) == 4 else (imp.x.shape or [0, 0])[1]
    mean, var, factor = _blobs(imp, 3, "mean, variance and scale factor")[:3]
    f = float(np.asarray(factor).reshape(-1)[0])
    scale = 0.0 if f == 0 else 1.0 / f
    mean, var = (_shaped(a, (c,), what).astype(np.float32) * np.float32(scale) for a, what in
                 ((mean, "mean"), (var, "variance")))
    gamma, beta = np.ones(c, np.float32), np.zeros(c, np.float32)
    affine = imp.fuse_next("Scale")
    if affine is not None:
        sp = affine.scale_param
        blobs = imp.blobs_of(affine)
        if len(blobs) < (2 if sp.bias_term else 1):
            raise ModelError(f"Scale layer {affine.name!r} has no weights in the caffemodel")
        gamma = _shaped(blobs[0], (c,), "scale")
        beta = _shaped(blobs[1], (c,), "bias") if sp.bias_term else beta
    weights = [imp.weight(n, a) for n, a in (("scale", gamma), ("bias", beta), ("mean", mean), ("variance", var))]
    y = imp.b.op("BatchNormalization", imp.x, *weights, epsilon=float(p.eps))
    # how the layers stored it, for writing them back the same way (the writer checks the values still agree)
    y.producer.meta.update(caffe_scale_factor=f, caffe_affine=affine.name if affine is not None else None)
    return y


def scale_fuses(lay, bottoms) -> bool:
    """A Scale layer that is a BatchNorm's affine part: one bottom, per-channel scale, axis 1."""
    p = lay.scale_param
    return len(bottoms) == 1 and p.axis == 1 and p.num_axes == 1


def _per_axis(imp, array, x, axis: int, count: int, what: str):
    """`array` shaped to broadcast over `x` from `axis` on (count dimensions)."""
    shape = list(x.shape[axis:axis + count])
    rest = len(x.shape) - axis - len(shape)
    return imp.weight(what, _shaped(array, shape, what).reshape(shape + [1] * rest))


@layer("Scale", "Bias", produces=("Mul", "Add", "Reshape"))
def scale(imp, lay):
    p = lay.scale_param if lay.type == "Scale" else lay.bias_param
    x, b = imp.x, imp.b
    axis = axis_of(x, p.axis)
    count = len(x.shape) - axis if p.num_axes == -1 else p.num_axes
    if len(imp.bottoms) == 2:  # the factor is the second bottom, aligned at axis
        other = imp.bottoms[1]
        rest = len(x.shape) - axis - len(other.shape)
        factor = b.op("Reshape", other, b.const(np.array([*other.shape, *[1] * rest], np.int64)), suffix="align")
        y = b.op("Mul" if lay.type == "Scale" else "Add", x, factor)
        blobs = imp.blobs
    else:
        blobs = _blobs(imp, 1, "factors")
        op = "Mul" if lay.type == "Scale" else "Add"
        y = b.op(op, x, _per_axis(imp, blobs[0], x, axis, count, "scale" if op == "Mul" else "bias"),
                 suffix=op.lower() if lay.type == "Scale" and p.bias_term else "")
        blobs = blobs[1:]
    if lay.type == "Scale" and p.bias_term:
        if not blobs:
            raise ModelError("bias_term is set but the caffemodel has no bias blob")
        y = b.op("Add", y, _per_axis(imp, blobs[0], x, axis, count, "bias"))
    return y


@layer("LRN", produces=("LRN", "Mul", "Pow", "AveragePool", "Add"))
def lrn(imp, lay):
    p = lay.lrn_param
    size, alpha, beta, k = p.local_size, p.alpha, p.beta, p.k
    if size < 1 or size % 2 == 0:
        raise ModelError(f"local_size {size}: Caffe's LRN takes an odd window")
    b = imp.b
    if p.norm_region == 0:  # ACROSS_CHANNELS
        return b.op("LRN", imp.x, size=size, alpha=float(alpha), beta=float(beta), bias=float(k))
    image(imp.x, "LRN within channels")  # x * (1 + alpha/size^2 * sum of squares in a size x size window)^-beta
    squares = b.op("Mul", imp.x, imp.x, suffix="square")
    half = (size - 1) // 2
    mean = b.op("AveragePool", squares, kernel_shape=[size, size], strides=[1, 1], pads=[half] * 4,
                count_include_pad=1, suffix="window")
    base = b.op("Add", b.op("Mul", mean, b.const(np.float32(alpha)), suffix="alpha"), b.const(np.float32(1)),
                suffix="base")
    return b.op("Mul", imp.x, b.op("Pow", base, b.const(np.float32(-beta)), suffix="power"))


@layer("PReLU", produces="PRelu")
def prelu(imp, lay):
    x = imp.x
    slopes = _blobs(imp, 1, "slopes")[0]
    if lay.prelu_param.channel_shared:
        slope = _shaped(slopes, (1,), "slope")
    else:
        c = x.shape[1]
        slope = _shaped(slopes, (c,), "slopes").reshape([c] + [1] * (len(x.shape) - 2))
    return imp.b.op("PRelu", x, imp.weight("slope", slope))


@layer("Normalize", produces=("ReduceSumSquare", "Add", "Sqrt", "Div", "Mul"))
def normalize(imp, lay):
    """SSD's Normalize: x over the L2 norm of each pixel's channels (or of the whole image), times a scale."""
    p = lay.norm_param
    n, c, _, _ = image(imp.x, "Normalize")
    b = imp.b
    axes = [1, 2, 3] if p.across_spatial else [1]
    sums = b.op("ReduceSumSquare", imp.x, b.const(np.array(axes, np.int64)), keepdims=1, suffix="sum_squares")
    norm = b.op("Sqrt", b.op("Add", sums, b.const(np.float32(p.eps)), suffix="eps"), suffix="norm")
    y = b.op("Div", imp.x, norm, suffix="normalized")
    scales = _blobs(imp, 1, "scale")[0]
    factor = _shaped(scales, (1,), "scale") if p.channel_shared else _shaped(scales, (c,), "scale").reshape(c, 1, 1)
    return b.op("Mul", y, imp.weight("scale", factor))
