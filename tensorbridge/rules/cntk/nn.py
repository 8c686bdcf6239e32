"""CNTK's ops with weights or windows, read into the IR: Times, Convolution, Pooling, BatchNormalization.

CNTK stores a window op's per-axis options (strides, padding, dilation, sharing) innermost first and may store
fewer than the axes it covers: the last stored value then holds for the rest (`per_axis`). An image is (C, H, W) in
its static axes, so convolutions and pools read an (N, C, H, W) IR value. A convolution's kernel spans all its
input's channels (the channel axis gives one output position, replaced by the output channels); CNTK's automatic
padding pads (k - 1) // 2 before each axis and what the output size ceil(n / stride) needs after (measured against
CNTK 2.7 for kernels 2 to 5 and strides 1 to 3).
"""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.cntk.base import op, static_rank, static_shape
from tensorbridge.rules.cntk.tensor import align


def per_axis(stored, rank: int, what: str) -> list:
    """A window option for `rank` axes in NumPy's order: stored innermost first, its last value repeated."""
    values = list(stored) if isinstance(stored, (list, tuple)) else [stored]
    if not values:
        raise ModelError(f"an empty {what}")
    values = (values + [values[-1]] * rank)[:rank]
    return list(reversed(values))


def _pads(sizes, kernels, strides, dilations, auto, lower, upper, ceil: bool = False) -> tuple[list, list, list]:
    """(pads before, pads after, output sizes) per axis, CNTK's way."""
    before, after, out = [], [], []
    for n, k, s, d, automatic, lo, hi in zip(sizes, kernels, strides, dilations, auto, lower, upper):
        span = (k - 1) * d + 1
        if automatic:
            m = -(-n // s)
            lo = (span - 1) // 2
            hi = max(0, (m - 1) * s + span - n - lo)
        else:
            m = (math.ceil if ceil else math.floor)((n + lo + hi - span) / s) + 1
        before.append(lo)
        after.append(hi)
        out.append(m)
    return before, after, out


@op("Times", produces=("MatMul", "Reshape"))
def times(imp, f):
    """`times(x, W)`, stored as Times(W, x): W is (K..., O...) with O its last `outputRank` axes, and x's static
    axes end with K; the product is x's other static axes then O."""
    a, b = imp.inputs  # a = W (the right operand in NumPy's terms), b = x
    attrs = imp.attrs
    outputs = int(attrs.get("outputRank", 1))
    attrs.get("inferInputRankToMap")
    if imp.dynamic(a) and imp.dynamic(b):
        raise ModelError("a Times of two values with dynamic axes")
    a_static, b_static = static_shape(imp, a), static_shape(imp, b)
    k = len(a_static) - outputs
    if k < 1 or tuple(b_static[len(b_static) - k:]) != tuple(a_static[:k]):
        raise ModelError(f"a Times of static shapes {b_static} and {a_static} (output rank {outputs})")
    contracted, out = int(np.prod(a_static[:k])), list(a_static[k:])
    if imp.dynamic(a) and len(b_static) - k != 1:
        raise ModelError("a Times of a parameter by a value with dynamic axes, other than a matrix by a matrix")
    rows = list(b_static[:len(b_static) - k])
    left = b if k == 1 else imp.emit("Reshape", [b, imp.ints([0] * imp.dynamic(b) + rows + [contracted])],
                                     suffix="rows")
    right = a if len(a_static) == 2 and k == 1 else \
        imp.emit("Reshape", [a, imp.ints([0] * imp.dynamic(a) + [contracted, int(np.prod(out or [1]))])],
                 suffix="matrix")
    product = imp.emit("MatMul", [left, right], suffix="product" if len(out) != 1 else "")
    dynamic = max(imp.dynamic(a), imp.dynamic(b))
    if len(out) == 1:
        return imp.result(product, dynamic)
    return imp.result(imp.emit("Reshape", [product, imp.ints([0] * dynamic + rows + out)]), dynamic)


@op("Convolution", produces=("Conv", "ConvTranspose"))
def convolution(imp, f):
    w, x = imp.inputs
    a = imp.attrs
    if a.get("transpose", False):
        return _transposed(imp, w, x, a)
    if a.get("sequential", False):
        raise ModelError("a convolution along the sequence axis")
    if imp.dynamic(x) != 1 or w.const is None:
        raise ModelError("a convolution of a value other than a batch of (C, spatial...) images, or by computed "
                         "weights")
    shape, kernel = static_shape(imp, x), w.const.shape
    rank, groups = len(shape), int(a.get("groups", 1))
    if len(kernel) != rank + 1 or shape[0] != kernel[1] * groups:
        raise ModelError(f"a convolution of a {list(shape)} input by a {list(kernel)} kernel (read: (out, in, "
                         "spatial...) over (in, spatial...))")
    stored_kernel = per_axis(a.get("kernelShape", list(reversed(kernel[1:]))), rank, "kernelShape")
    if stored_kernel != list(kernel[1:]):
        raise ModelError(f"kernelShape {stored_kernel} differs from the kernel's {list(kernel[1:])}")
    strides = per_axis(a.get("strides", [1]), rank, "strides")
    dilations = per_axis(a.get("dilation", [1]), rank, "dilation")
    auto = per_axis(a.get("autoPadding", [True]), rank, "autoPadding")
    lower, upper = (per_axis(a.get(k, [0]), rank, k) for k in ("lowerPad", "upperPad"))
    per_axis(a.get("sharing", [True]), rank, "sharing")
    if a.get("outputShape") not in (None, (), (0,)):
        raise ModelError(f"a convolution with outputShape {a.get('outputShape')}")
    before, after, out = _pads(shape, [shape[0], *kernel[2:]], strides, dilations, auto, lower, upper)
    if out[0] != 1 or groups > 1 and (auto[0] or before[0] or after[0]):
        raise ModelError("a convolution that moves along the channel axis")
    attrs = {"kernel_shape": list(kernel[2:]), "strides": strides[1:], "pads": before[1:] + after[1:],
             "dilations": dilations[1:], "group": groups}
    return imp.emit("Conv", [x, w], attrs)


@op("Pooling", produces=("MaxPool", "AveragePool"))
def pooling(imp, f):
    (x,) = imp.inputs
    a = imp.attrs
    kind = int(a.require("poolingType"))
    if kind not in (0, 1):
        raise ModelError(f"pooling type {kind} (read: max 0, average 1)")
    if imp.dynamic(x) != 1 or static_rank(imp, x) < 2:
        raise ModelError("a pooling of a value other than a batch of (C, spatial...) images")
    window = list(reversed(a.require("poolingWindowShape")))
    spatial = static_shape(imp, x)[1:]
    rank = len(window)
    if rank > len(spatial):
        raise ModelError(f"a {rank}-D pooling window over {len(spatial)} spatial axes (pooling across channels)")
    strides = per_axis(a.get("strides", [1]), rank, "strides")
    auto = per_axis(a.get("autoPadding", [False]), rank, "autoPadding")
    lower, upper = (per_axis(a.get(k, [0]), rank, k) for k in ("lowerPad", "upperPad"))
    ceil = bool(a.get("ceilOutDim", False))
    include = bool(a.get("includePad", False))
    untouched = len(spatial) - rank
    before, after, _ = _pads(spatial[untouched:], window, strides, [1] * rank, auto, lower, upper, ceil)
    kernel = [1] * untouched + window
    attrs = {"kernel_shape": kernel, "strides": [1] * untouched + strides,
             "pads": [0] * untouched + before + [0] * untouched + after, "ceil_mode": int(ceil and not any(auto))}
    if kind == 1:
        attrs["count_include_pad"] = int(include)
        return imp.emit("AveragePool", [x], attrs)
    return imp.emit("MaxPool", [x], attrs)


@op("BatchNormalization", produces=("BatchNormalization", "Sub", "Div", "Sqrt", "Mul", "Add", "Reshape"))
def batch_norm(imp, f):
    """(x - mean) / sqrt(var + epsilon) * scale + bias with the running statistics (CNTK normalises with them at
    inference whatever its sample count); per channel (spatial) or per element."""
    x, scale, bias, mean, var, _count = imp.inputs
    a = imp.attrs
    spatial = bool(a.require("spatial"))
    epsilon = float(a.get("epsilon", 1e-5))
    params = [scale, bias, mean, var]
    if any(v.const is None for v in params):
        raise ModelError("a BatchNormalization with computed statistics")
    static = static_shape(imp, x)
    if spatial and imp.dynamic(x) == 1 and len(static) >= 1:
        flat = [imp.const(np.asarray(v.const).reshape(-1)) for v in params]
        if any(v.const.size != static[0] for v in flat):
            raise ModelError("a spatial BatchNormalization whose statistics are not one per channel")
        return imp.emit("BatchNormalization", [x, *flat], {"epsilon": epsilon})
    shape = [static[0]] + [1] * (len(static) - 1) if spatial else list(static)
    scale, bias, mean, var = (imp.const(np.asarray(v.const).reshape(shape)) for v in params)
    x, mean = align(imp, x, mean)
    centred = imp.emit("Sub", [x, mean], suffix="centred")
    spread = imp.emit("Sqrt", [imp.emit("Add", [var, imp.const(np.array(epsilon, var.dtype))], suffix="var_eps")],
                      suffix="std")
    normed = imp.emit("Div", [centred, spread], suffix="normed")
    return imp.emit("Add", [imp.emit("Mul", [normed, scale], suffix="scaled"), bias])


def _transposed(imp, w, x, a):
    """ConvolutionTranspose: the adjoint of the convolution from `outputShape` to the input's size, with that
    convolution's padding (automatic or given); the kernel is (in, out / groups, spatial...), as ONNX's."""
    if imp.dynamic(x) != 1 or w.const is None:
        raise ModelError("a transposed convolution of a value other than a batch of images, or by computed weights")
    shape, kernel = static_shape(imp, x), w.const.shape
    rank, groups = len(shape), int(a.get("groups", 1))
    if len(kernel) != rank + 1 or kernel[0] != shape[0]:
        raise ModelError(f"a transposed convolution of a {list(shape)} input by a {list(kernel)} kernel")
    a.get("kernelShape")
    a.get("sequential")
    strides = per_axis(a.get("strides", [1]), rank, "strides")[1:]
    dilations = per_axis(a.get("dilation", [1]), rank, "dilation")[1:]
    auto = per_axis(a.get("autoPadding", [True]), rank, "autoPadding")[1:]
    lower, upper = (per_axis(a.get(k, [0]), rank, k)[1:] for k in ("lowerPad", "upperPad"))
    per_axis(a.get("sharing", [True]), rank, "sharing")
    wanted = list(reversed(a.get("outputShape") or ()))
    if len(wanted) != rank or wanted[0] != kernel[1] * groups:
        raise ModelError(f"a transposed convolution with outputShape {wanted} (read: one given for every axis, its "
                         "channels the kernel's)")
    sizes, spans = wanted[1:], [(k - 1) * d + 1 for k, d in zip(kernel[2:], dilations)]
    before, after, steps = _pads(sizes, list(kernel[2:]), strides, dilations, auto, lower, upper)
    if steps != list(shape[1:]):
        raise ModelError(f"a transposed convolution to {sizes} from {list(shape[1:])}, which that convolution does "
                         f"not make ({steps})")
    extra = [o - (s * (n - 1) + k - lo - hi) for o, s, n, k, lo, hi in zip(sizes, strides, shape[1:], spans, before,
                                                                           after)]
    attrs = {"kernel_shape": list(kernel[2:]), "strides": strides, "pads": before + after, "dilations": dilations,
             "group": groups, "output_padding": extra}
    return imp.emit("ConvTranspose", [x, w], attrs)
