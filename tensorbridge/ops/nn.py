"""Neural-network layers: convolutions, pooling, normalisation, dense/matmul, softmax, resize.

Layout-carrying ops have a `layout` attribute, "NCHW" (channels first, ONNX/PyTorch) or
"NHWC" (channels last, Keras/TFLite); the name stands for any rank. Convolution weights are
always stored channels-first ([out, in/group, *kernel]) in the IR; frontends that read
other weight layouts permute the constant once at import.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from tensorbridge.ir import shapes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops import layout_rules as L
from tensorbridge.ops.infer import const_ints, norm_axis, same_as
from tensorbridge.ops.layout_classes import IMPLICIT, attribute, implicit, terminate
from tensorbridge.ops.patterns import only_use, other, producer, scalar, strip_cast
from tensorbridge.ops.schema import Attr, attrs_of, op, set_decomposition, set_lowering, set_recovery
from tensorbridge.ops.shape import slice_spans
from tensorbridge.reference.kernels import conv as K
from tensorbridge.reference.kernels.resize import resize as resize_kernel

F = "nn"
LAYOUT = Attr("str", "NCHW")


def channels_first(fn):
    """Run a channels-first kernel on NHWC data by moving the channel axis around it."""

    @functools.wraps(fn)
    def wrapped(X, *args, layout="NCHW", **kwargs):
        if layout == "NCHW":
            return fn(X, *args, **kwargs)
        out = fn(np.moveaxis(X, -1, 1), *args, **kwargs)
        if isinstance(out, tuple):
            return tuple(np.moveaxis(o, 1, -1) if o is not None and o.ndim == X.ndim else o for o in out)
        return np.moveaxis(out, 1, -1)

    return wrapped


def _spatial(shape, layout):
    return (shape[2:], shape[1]) if layout == "NCHW" else (shape[1:-1], shape[-1])


def _with_layout(n, c, sp, layout):
    return (n, c, *sp) if layout == "NCHW" else (n, *sp, c)


def _out_dim(d, k, s, dil, pb, pe, ceil_mode=False):
    if not isinstance(d, int):
        return None
    span = d + pb + pe - ((k - 1) * dil + 1)
    o = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= d + pb:
        o -= 1
    return o


def _window_infer(kernel_of, channels_of):
    def rule(inputs, attrs):
        x = inputs[0]
        if x.shape is None:
            return [(x.dtype, None)] * 2
        layout = attrs.get("layout", "NCHW")
        sp, c = _spatial(x.shape, layout)
        kernel = kernel_of(inputs, attrs)
        nsp = len(sp)
        strides = attrs.get("strides") or [1] * nsp
        dil = attrs.get("dilations") or [1] * nsp
        ap = attrs.get("auto_pad", "NOTSET")
        if kernel is None:
            return [(x.dtype, (x.shape[0], None) + (None,) * nsp)]
        if ap in ("SAME_UPPER", "SAME_LOWER"):
            out = [-(-d // s) if isinstance(d, int) else None for d, s in zip(sp, strides)]
        else:
            pads = [0] * (2 * nsp) if ap == "VALID" else (attrs.get("pads") or [0] * (2 * nsp))
            out = [_out_dim(sp[i], kernel[i], strides[i], dil[i], pads[i], pads[i + nsp],
                            attrs.get("ceil_mode", 0)) for i in range(nsp)]
        shape = _with_layout(x.shape[0], channels_of(inputs, c), out, layout)
        return [(x.dtype, shape), (np.dtype(np.int64), shape)]
    return rule


def _weight_kernel(inputs, attrs):
    w = inputs[1].shape
    return None if w is None else list(w[2:])


def _weight_out(inputs, c):
    w = inputs[1].shape
    return None if w is None else w[0]


@op("Conv", inputs="X W B?", layout=IMPLICIT, family=F,
    attrs={"strides": Attr("ints", None), "pads": Attr("ints", None), "dilations": Attr("ints", None),
           "group": Attr("int", 1), "auto_pad": Attr("str", "NOTSET"), "kernel_shape": Attr("ints", None),
           "layout": LAYOUT},
    infer=lambda i, a: _window_infer(_weight_kernel, lambda ins, c: _weight_out(ins, c))(i, a)[:1],
    doc="N-D convolution (W is [out, in/group, *k]). Equivalents: nn.Conv2d, keras Conv2D/DepthwiseConv2D, CONV_2D.")
@channels_first
def conv(X, W, B=None, *, strides, pads, dilations, group, auto_pad, kernel_shape):
    return K.conv(X, W, B, strides=strides, pads=pads, dilations=dilations, group=group, auto_pad=auto_pad)


def _decompose_conv(graph, node):
    """A SAME-padded convolution as one with the explicit pads SAME means (where the spatial sizes are known); a
    convolution both strided and dilated (Keras takes one or the other) as the dilated one at stride 1, every
    stride-th output kept."""
    return _decompose_conv_auto_pad(graph, node) or _decompose_strided_dilated_conv(graph, node)


def _decompose_strided_dilated_conv(graph, node):
    strides, dilations = node.attrs.get("strides") or [], node.attrs.get("dilations") or []
    if not (any(s > 1 for s in strides) and any(d > 1 for d in dilations)) or \
            node.attrs.get("auto_pad", "NOTSET") != "NOTSET" or node.outputs[0].shape is None:
        return False
    layout = node.attrs.get("layout", "NCHW")
    first = 2 if layout == "NCHW" else 1
    axes = [first + i for i, s in enumerate(strides) if s > 1]
    b = Builder.replacing(node)
    full = b.op("Conv", *node.inputs, **{**node.attrs, "strides": [1] * len(strides)}, suffix="unstrided")
    ends = [np.iinfo(np.int64).max] * len(axes)
    graph.replace_node(node, [b.op("Slice", full, b.named([0] * len(axes), "kept_start", np.int64),
                                   b.named(ends, "kept_end", np.int64), b.named(axes, "strided_axes", np.int64),
                                   b.named([strides[a - first] for a in axes], "kept_step", np.int64))])
    return True


def _decompose_conv_auto_pad(graph, node):
    x, w = node.inputs[0], node.inputs[1]
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER") or x.shape is None or w.shape is None:
        return False
    sp, _ = _spatial(x.shape, node.attrs.get("layout", "NCHW"))
    if not all(isinstance(d, int) for d in sp):
        return False
    nsp = len(sp)
    pads = K.resolve_pads(sp, w.shape[2:], node.attrs.get("strides") or [1] * nsp,
                          node.attrs.get("dilations") or [1] * nsp, None, auto_pad)
    b = Builder.replacing(node)
    attrs = {**node.attrs, "auto_pad": "NOTSET", "pads": [int(p) for p in pads]}
    graph.replace_node(node, [b.op("Conv", *node.inputs, **attrs)])
    return True


set_decomposition("Conv", _decompose_conv)


def _conv_t_infer(inputs, attrs):
    x, w = inputs[0], inputs[1]
    if x.shape is None or w.shape is None:
        return [(x.dtype, None)]
    layout = attrs["layout"]
    sp, _ = _spatial(x.shape, layout)
    nsp = len(sp)
    m = w.shape[1] * attrs["group"] if isinstance(w.shape[1], int) else None
    if attrs["output_shape"]:
        return [(x.dtype, _with_layout(x.shape[0], m, attrs["output_shape"][-nsp:], layout))]
    s = attrs["strides"] or [1] * nsp
    d = attrs["dilations"] or [1] * nsp
    op_ = attrs["output_padding"] or [0] * nsp
    p = attrs["pads"] or [0] * (2 * nsp)
    out = []
    for i in range(nsp):
        if not isinstance(sp[i], int):
            out.append(None)
        elif attrs["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
            out.append(sp[i] * s[i])
        else:
            out.append((sp[i] - 1) * s[i] + (w.shape[2 + i] - 1) * d[i] + 1 + op_[i] - p[i] - p[i + nsp])
    return [(x.dtype, _with_layout(x.shape[0], m, out, layout))]


@op("ConvTranspose", inputs="X W B?", layout=IMPLICIT, family=F, infer=_conv_t_infer,
    attrs={"strides": Attr("ints", None), "pads": Attr("ints", None), "dilations": Attr("ints", None),
           "group": Attr("int", 1), "auto_pad": Attr("str", "NOTSET"), "kernel_shape": Attr("ints", None),
           "output_padding": Attr("ints", None), "output_shape": Attr("ints", None), "layout": LAYOUT},
    doc="Transposed convolution (W is [in, out/group, *k]). Equivalents: nn.ConvTranspose2d, keras Conv2DTranspose, TRANSPOSE_CONV.")
@channels_first
def conv_transpose(X, W, B=None, *, strides, pads, dilations, group, auto_pad, kernel_shape,
                   output_padding, output_shape):
    nsp = X.ndim - 2
    return K.conv_transpose(X, W, B, strides=strides, pads=pads, dilations=dilations, group=group,
                            auto_pad=auto_pad, output_padding=output_padding,
                            output_shape=output_shape[-nsp:] if output_shape else None)


def _decompose_grouped_conv_transpose(graph, node):
    """A grouped transposed convolution as one per group on its slice of the channels, joined (Keras's
    Conv2DTranspose has no groups)."""
    x, w = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    g = node.attrs.get("group", 1)
    rank = len(x.shape or ())
    axis = 1 if node.attrs.get("layout", "NCHW") == "NCHW" else rank - 1
    if g == 1 or w.const is None or (bias is not None and bias.const is None) or rank < 3 or \
            not isinstance(x.shape[axis], int):
        return False
    b = Builder.replacing(node)
    weights, per_in, per_out = np.asarray(w.const), x.shape[axis] // g, w.shape[1]
    attrs = {**node.attrs, "group": 1}
    parts = []
    for j in range(g):
        ends = [b.const(np.array([v], np.int64), b.name(f"{k}{j}")) for k, v in
                (("start", j * per_in), ("end", (j + 1) * per_in), ("axis", axis))]
        xj = b.op("Slice", x, *ends, suffix=f"group{j}")
        wj = b.weight(b.name(f"weight{j}"), weights[j * per_in:(j + 1) * per_in])
        bj = None if bias is None else b.weight(b.name(f"bias{j}"), np.asarray(bias.const)[j * per_out:(j + 1) * per_out])
        parts.append(b.op("ConvTranspose", xj, wj, bj, suffix=f"deconv{j}", **attrs))
    graph.replace_node(node, [b.op("Concat", *parts, axis=axis)])
    return True


def pads_implied(node) -> bool:
    """A ConvTranspose whose pads its auto_pad (SAME) or output_shape imply, rather than state."""
    return node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID") or bool(node.attrs.get("output_shape"))


def _decompose_conv_transpose_padding(graph, node):
    """A transposed convolution whose pads are uneven or implied (auto_pad SAME, output_shape) as one without
    pads, cropped (positive pads) or zero-extended (negative ones) to its size. Needs static spatial sizes."""
    x, w = node.inputs[0], node.inputs[1]
    a = node.attrs
    pads = list(a.get("pads") or [])
    implied = pads_implied(node)
    if (not implied and pads[:len(pads) // 2] == pads[len(pads) // 2:]) or x.shape is None or w.shape is None:
        return False
    layout = a.get("layout", "NCHW")
    sp, _ = _spatial(x.shape, layout)
    if not all(isinstance(d, int) for d in sp):
        return False
    nsp = len(sp)
    strides, dil = a.get("strides") or [1] * nsp, a.get("dilations") or [1] * nsp
    extra = a.get("output_padding") or [0] * nsp
    full = [(sp[i] - 1) * strides[i] + (w.shape[2 + i] - 1) * dil[i] + 1 + extra[i] for i in range(nsp)]
    if implied:
        target = list(a["output_shape"])[-nsp:] if a.get("output_shape") else [d * s for d, s in zip(sp, strides)]
        total = [f - t for f, t in zip(full, target)]
        small = [t // 2 for t in total]
        pads = small + [t - h for t, h in zip(total, small)] if a.get("auto_pad") == "SAME_UPPER" else \
            [t - h for t, h in zip(total, small)] + small
    first = 2 if layout == "NCHW" else 1
    b = Builder.replacing(node)
    bare = {k: v for k, v in a.items() if k not in ("pads", "auto_pad", "output_shape")}
    y = b.op("ConvTranspose", *node.inputs, suffix="full", **bare)
    rank = nsp + 2
    crop = [(first + i, max(pads[i], 0), full[i] - max(pads[i + nsp], 0)) for i in range(nsp)
            if pads[i] > 0 or pads[i + nsp] > 0]
    if crop:
        y = slice_spans(b, y, crop, suffix="cropped")
    if any(p < 0 for p in pads):
        grow = [0] * (2 * rank)
        for i in range(nsp):
            grow[first + i], grow[first + i + rank] = max(-pads[i], 0), max(-pads[i + nsp], 0)
        y = b.op("Pad", y, b.const(np.array(grow, np.int64), b.name("grow")), suffix="extended")
    graph.replace_node(node, [y])
    return True


def _decompose_dilated_conv_transpose(graph, node):
    """A dilated transposed convolution as an undilated one whose constant kernel has the dilation's zeros
    between its taps (the same sums)."""
    w = node.inputs[1]
    dil = node.attrs.get("dilations") or []
    if w.const is None or all(d == 1 for d in dil):
        return False
    kernel = np.asarray(w.const)
    spread = np.zeros(kernel.shape[:2] + tuple((k - 1) * d + 1 for k, d in zip(kernel.shape[2:], dil)), kernel.dtype)
    spread[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dil)] = kernel
    b = Builder.replacing(node)
    attrs = {k: v for k, v in node.attrs.items() if k not in ("dilations", "kernel_shape")}
    graph.replace_node(node, [b.op("ConvTranspose", node.inputs[0], b.weight(b.name("dilated_weight"), spread),
                                   *node.inputs[2:], **attrs)])
    return True


set_decomposition("ConvTranspose", lambda graph, node: _decompose_grouped_conv_transpose(graph, node) or
                  _decompose_conv_transpose_padding(graph, node) or _decompose_dilated_conv_transpose(graph, node))


_POOL_ATTRS = {"kernel_shape": Attr("ints"), "strides": Attr("ints", None), "pads": Attr("ints", None),
               "dilations": Attr("ints", None), "auto_pad": Attr("str", "NOTSET"),
               "ceil_mode": Attr("int", 0), "layout": LAYOUT}
_pool_infer = _window_infer(lambda i, a: a["kernel_shape"], lambda i, c: c)


def _pool_args(X, kernel_shape, strides, pads, dilations, auto_pad):
    nsp = X.ndim - 2
    strides = strides or [1] * nsp
    dilations = dilations or [1] * nsp
    pads = K.resolve_pads(X.shape[2:], kernel_shape, strides, dilations, pads, auto_pad)
    return strides, pads, dilations


@op("MaxPool", outputs="Y Indices?", layout=IMPLICIT, family=F, infer=_pool_infer,
    attrs={**_POOL_ATTRS, "storage_order": Attr("int", 0)},
    doc="Max pooling (optional argmax indices). Equivalents: nn.MaxPool2d, keras MaxPooling2D, MAX_POOL_2D.")
@channels_first
def max_pool(X, *, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, storage_order, _num_outputs):
    s, p, d = _pool_args(X, kernel_shape, strides, pads, dilations, auto_pad)
    return K.max_pool(X, kernel_shape, s, p, d, ceil_mode, storage_order, _num_outputs > 1)


@op("AveragePool", layout=IMPLICIT, family=F, infer=lambda i, a: _pool_infer(i, a)[:1],
    attrs={**_POOL_ATTRS, "count_include_pad": Attr("int", 0)},
    doc="Average pooling. Equivalents: nn.AvgPool2d, keras AveragePooling2D, AVERAGE_POOL_2D.")
@channels_first
def average_pool(X, *, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, count_include_pad):
    s, p, d = _pool_args(X, kernel_shape, strides, pads, dilations, auto_pad)
    return K.avg_pool(X, kernel_shape, s, p, d, ceil_mode, count_include_pad)


@op("LpPool", layout=IMPLICIT, family=F, infer=lambda i, a: _pool_infer(i, a)[:1],
    attrs={**_POOL_ATTRS, "p": Attr("int", 2)}, doc="Lp-norm pooling. Equivalents: nn.LPPool2d.")
@channels_first
def lp_pool(X, *, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, p):
    s, pd, d = _pool_args(X, kernel_shape, strides, pads, dilations, auto_pad)
    return K.lp_pool(X, kernel_shape, s, pd, d, ceil_mode, p)


def _decompose_lp_pool(graph, node):
    """(sum over the window of |x|^p)^(1/p): an average pool of |x|^p counting the padding, times the window's
    size (zero padding adds nothing to the sum)."""
    x = node.inputs[0]
    if x.dtype is None:
        return False
    a = attrs_of(node)
    b = Builder.replacing(node)

    def scalar(name, v):
        return b.const(np.array(v, x.dtype), b.name(name))

    p = a["p"]
    magnitude = b.op("Abs", x, suffix="abs")
    powered = b.op("Mul", magnitude, magnitude) if p == 2 else magnitude if p == 1 else \
        b.op("Pow", magnitude, scalar("p", p))
    pool_attrs = {k: a[k] for k in ("kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "layout")
                  if a.get(k) is not None}
    mean = b.op("AveragePool", powered, count_include_pad=1, suffix="mean", **pool_attrs)
    total = b.op("Mul", mean, scalar("window", float(np.prod(a["kernel_shape"]))), suffix="sum")
    root = total if p == 1 else b.op("Sqrt", total) if p == 2 else b.op("Pow", total, scalar("inverse_p", 1.0 / p))
    graph.replace_node(node, [root])
    return True


set_decomposition("LpPool", _decompose_lp_pool)


def _global_infer(inputs, attrs):
    x = inputs[0]
    if x.shape is None:
        return [(x.dtype, None)]
    sp, c = _spatial(x.shape, attrs["layout"])
    return [(x.dtype, _with_layout(x.shape[0], c, [1] * len(sp), attrs["layout"]))]


for _name, _fn, _eq in (
        ("GlobalAveragePool", lambda X: X.mean(axis=tuple(range(2, X.ndim)), keepdims=True),
         "nn.AdaptiveAvgPool2d(1), keras GlobalAveragePooling2D(keepdims=True), MEAN"),
        ("GlobalMaxPool", lambda X: X.max(axis=tuple(range(2, X.ndim)), keepdims=True),
         "nn.AdaptiveMaxPool2d(1), keras GlobalMaxPooling2D(keepdims=True), REDUCE_MAX")):
    op(_name, layout=IMPLICIT, family=F, attrs={"layout": LAYOUT}, infer=_global_infer,
       doc=f"{_name[6:]} over all spatial dims. Equivalents: {_eq}.")(
        channels_first((lambda f: lambda X: f(X.astype(np.float32) if X.dtype == np.float16 else X)
                        .astype(X.dtype))(_fn)))


@op("GlobalLpPool", layout=IMPLICIT, family=F, attrs={"p": Attr("int", 2), "layout": LAYOUT},
    examples=({"inputs": [(1, 3, 5, 5)]}, {"inputs": [(2, 4, 6, 3)], "attrs": {"p": 1}}),
    infer=_global_infer, doc="Lp norm over all spatial dims.")
@channels_first
def global_lp_pool(X, *, p):
    return (np.sum(np.abs(X) ** p, axis=tuple(range(2, X.ndim)), keepdims=True) ** (1.0 / p)).astype(X.dtype)


# -- normalisation -----------------------------------------------------------------------------
def _lp_norm(b, x, axes: list[int], p: int):
    """The Lp norm of x over `axes`, kept as size-1 dims: ReduceL1/ReduceL2, else (sum |x|^p)^(1/p)."""
    ax = b.const(np.array(axes, np.int64), b.name("axes"))
    if p in (1, 2):
        return b.op(f"ReduceL{p}", x, ax, keepdims=1)
    def power(name, v):
        return b.const(np.array(v, x.dtype), b.name(name))
    total = b.op("ReduceSum", b.op("Pow", b.op("Abs", x), power("p", p)), ax, keepdims=1)
    return b.op("Pow", total, power("inverse_p", 1.0 / p))


def _decompose_global_lp_pool(graph, node):
    x = node.inputs[0]
    if x.shape is None or x.dtype is None:
        return False
    rank = len(x.shape)
    axes = list(range(2, rank)) if node.attrs.get("layout", "NCHW") == "NCHW" else list(range(1, rank - 1))
    b = Builder.replacing(node)
    graph.replace_node(node, [_lp_norm(b, x, axes, attrs_of(node)["p"])])
    return True


set_decomposition("GlobalLpPool", _decompose_global_lp_pool)


@op("BatchNormalization", inputs="X scale B input_mean input_var",
    outputs="Y running_mean? running_var?", layout=IMPLICIT, family=F, infer=same_as(0),
    attrs={"epsilon": Attr("float", 1e-5), "momentum": Attr("float", 0.9),
           "training_mode": Attr("int", 0), "layout": LAYOUT},
    doc="Batch normalisation (inference, or training statistics); epsilon_on='std' adds epsilon to the standard "
        "deviation instead (Darknet). Equivalents: nn.BatchNorm2d, keras BatchNormalization.")
@channels_first
def batch_normalization(X, scale, B, input_mean, input_var, *, epsilon, momentum, training_mode):
    bshape = (1, -1) + (1,) * (X.ndim - 2)
    xf = X.astype(np.float32) if X.dtype != np.float64 else X
    if training_mode:
        axes = (0,) + tuple(range(2, X.ndim))
        mean, var = xf.mean(axis=axes), xf.var(axis=axes)
        y = (xf - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + epsilon) * scale.reshape(bshape) \
            + B.reshape(bshape)
        rm = input_mean * momentum + mean * (1 - momentum)
        rv = input_var * momentum + var * (1 - momentum)
        return y.astype(X.dtype), rm.astype(input_mean.dtype), rv.astype(input_var.dtype)
    y = (xf - input_mean.reshape(bshape)) / np.sqrt(input_var.reshape(bshape) + epsilon) \
        * scale.reshape(bshape) + B.reshape(bshape)
    return y.astype(X.dtype), None, None


def _lower_epsilon_on_std(graph, node) -> bool:
    """`epsilon_on="std"` (Darknet): divide by sqrt(var) + epsilon. Lowered to the plain op with epsilon 0 and the
    variance whose square root that is, computed once in float64 when the variance is a constant."""
    var, eps = node.input(4), float(node.attrs.get("epsilon", 1e-5))
    b = Builder.replacing(node)
    if var.const is not None:
        std = np.sqrt(np.asarray(var.const, np.float64)) + eps
        new = b.const((std * std).astype(var.dtype), f"{var.name}.std_squared", literal=False)
    else:
        std = b.op("Add", b.op("Sqrt", var, suffix="std"), b.const(np.asarray(eps, var.dtype)), suffix="std_eps")
        new = b.op("Mul", std, std, suffix="variance")
    node.set_input(4, new)
    node.attrs["epsilon"] = 0.0
    node.attrs.pop("epsilon_on")
    return True


set_lowering("BatchNormalization", "epsilon_on", _lower_epsilon_on_std)


def _decompose_batch_statistics(graph, node) -> bool:
    """Training-mode BatchNormalization: the batch's own mean and (population) variance over every axis but the
    channels normalise it, and the running statistics are the momentum blend of the given ones with them."""
    x = node.inputs[0]
    if not node.attrs.get("training_mode") or x.shape is None or x.dtype is None:
        return False
    scale, bias, running_mean, running_var = node.inputs[1:5]
    rank, eps, momentum = len(x.shape), node.attrs.get("epsilon", 1e-5), node.attrs.get("momentum", 0.9)
    channels = rank - 1 if node.attrs.get("layout") == "NHWC" else 1
    b = Builder.replacing(node)

    def const(value, name, dtype=x.dtype):
        return b.const(np.asarray(value, dtype), b.name(name))

    axes = const([a for a in range(rank) if a != channels], "batch_axes", np.int64)
    per_channel = const([-1 if a == channels else 1 for a in range(rank)], "per_channel", np.int64)
    mean = b.op("ReduceMean", x, axes, keepdims=1)
    centered = b.op("Sub", x, mean)
    var = b.op("ReduceMean", b.op("Mul", centered, centered), axes, keepdims=1)
    normal = b.op("Div", centered, b.op("Sqrt", b.op("Add", var, const(eps, "epsilon"))))
    y = b.op("Add", b.op("Mul", normal, b.op("Reshape", scale, per_channel)), b.op("Reshape", bias, per_channel))
    flat = const([-1], "flat", np.int64)
    blended = [b.op("Add", b.op("Mul", given, const(momentum, "momentum", given.dtype)),
                    b.op("Mul", b.op("Reshape", batch, flat), const(1 - momentum, "update", given.dtype)))
               for given, batch in ((running_mean, mean), (running_var, var))]
    graph.replace_node(node, [y, *blended][:len(node.outputs)])
    return True


set_decomposition("BatchNormalization", _decompose_batch_statistics)


@op("InstanceNormalization", inputs="input scale B", outputs="output", layout=IMPLICIT, family=F,
    attrs={"epsilon": Attr("float", 1e-5), "layout": LAYOUT}, infer=same_as(0),
    doc="Per-instance, per-channel normalisation. Equivalents: nn.InstanceNorm2d(affine=True).")
@channels_first
def instance_normalization(input, scale, B, *, epsilon):
    axes = tuple(range(2, input.ndim))
    bshape = (1, -1) + (1,) * (input.ndim - 2)
    m = input.mean(axis=axes, keepdims=True)
    v = input.var(axis=axes, keepdims=True)
    return ((input - m) / np.sqrt(v + epsilon) * scale.reshape(bshape) + B.reshape(bshape)).astype(input.dtype)


def _decompose_instance_norm(graph, node) -> bool:
    """(x - mean) / sqrt(variance + epsilon) * scale + B, the statistics over each instance's spatial axes."""
    x, scale, bias = node.inputs[:3]
    if x.shape is None or scale.const is None or bias.const is None:
        return False
    rank = len(x.shape)
    last = node.attrs.get("layout", "NCHW") != "NCHW"
    axes = np.arange(1, rank - 1) if last else np.arange(2, rank)
    shape = [1] * (rank - 1) + [-1] if last else [1, -1] + [1] * (rank - 2)
    b = Builder.replacing(node)
    mean = b.op("ReduceMean", x, b.const(axes, b.name("axes")), keepdims=1, suffix="mean")
    centred = b.op("Sub", x, mean, suffix="centred")
    var = b.op("ReduceMean", b.op("Mul", centred, centred, suffix="square"), b.const(axes, b.name("var_axes")),
               keepdims=1, suffix="variance")
    eps = b.const(np.array(node.attrs.get("epsilon", 1e-5), x.dtype), b.name("epsilon"))
    y = b.op("Div", centred, b.op("Sqrt", b.op("Add", var, eps, suffix="eps"), suffix="std"), suffix="normalized")
    y = b.op("Mul", y, b.weight(b.name("scale"), np.asarray(scale.const).reshape(shape)), suffix="scaled")
    graph.replace_node(node, [b.op("Add", y, b.weight(b.name("bias"), np.asarray(bias.const).reshape(shape)))])
    return True


set_decomposition("InstanceNormalization", _decompose_instance_norm)


def _stash(x, stash_type):
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32)


@op("LayerNormalization", inputs="X Scale B?", outputs="Y Mean? InvStdDev?", layout=attribute("axis", rule=L.suffix_norm),
    family=F, attrs={"axis": Attr("int", -1), "epsilon": Attr("float", 1e-5), "stash_type": Attr("int", 1)},
    infer=same_as(0), doc="Normalise over the trailing axes from `axis`. Equivalents: nn.LayerNorm, keras LayerNormalization.")
def layer_normalization(X, Scale, B=None, *, axis, epsilon, stash_type):
    ax = norm_axis(axis, X.ndim)
    axes = tuple(range(ax, X.ndim))
    xf = _stash(X, stash_type)
    mean = xf.mean(axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(((xf - mean) ** 2).mean(axis=axes, keepdims=True) + epsilon)
    y = (xf - mean) * inv * Scale
    if B is not None:
        y = y + B
    return y.astype(X.dtype), mean.astype(np.float32), inv.astype(np.float32)


def _decompose_layer_norm(graph, node):
    """(x - mean) / sqrt(var + epsilon) * scale (+ bias) over the trailing axes from `axis`, with the mean and
    the inverse deviation as the optional outputs. Float32 inputs only (the reference stashes in float32)."""
    x = node.inputs[0]
    if x.shape is None or x.dtype != np.float32:
        return False
    a = attrs_of(node)
    rank = len(x.shape)
    b = Builder.replacing(node)
    axes = b.const(np.arange(norm_axis(a["axis"], rank), rank, dtype=np.int64), b.name("axes"))
    mean = b.op("ReduceMean", x, axes, keepdims=1, suffix="mean")
    centred = b.op("Sub", x, mean, suffix="centred")
    var = b.op("ReduceMean", b.op("Mul", centred, centred), axes, keepdims=1, suffix="var")
    inv = b.op("Reciprocal", b.op("Sqrt", b.op("Add", var, b.const(np.array(a["epsilon"], np.float32),
                                                                  b.name("epsilon")))), suffix="inv_std")
    y = b.op("Mul", b.op("Mul", centred, inv), node.inputs[1], suffix="scaled")
    if node.input(2) is not None:
        y = b.op("Add", y, node.inputs[2])
    graph.replace_node(node, [y, mean, inv][:len(node.outputs)])
    return True


set_decomposition("LayerNormalization", _decompose_layer_norm)


@op("RMSNormalization", inputs="X scale", outputs="Y", layout=attribute("axis", rule=L.suffix_norm), family=F,
    attrs={"axis": Attr("int", -1), "epsilon": Attr("float", 1e-5), "stash_type": Attr("int", 1)},
    infer=same_as(0), doc="Root-mean-square normalisation. Equivalents: nn.RMSNorm, keras RMSNormalization.")
def rms_normalization(X, scale, *, axis, epsilon, stash_type):
    ax = norm_axis(axis, X.ndim)
    xf = _stash(X, stash_type)
    rms = np.sqrt((xf ** 2).mean(axis=tuple(range(ax, X.ndim)), keepdims=True) + epsilon)
    return (xf / rms * scale).astype(X.dtype)


def _rms_parts(graph, y):
    """(x, epsilon) when `y` = x / sqrt(mean(x², last axis) + epsilon), written with a reciprocal or a division
    and with or without x cast to float32 first and the result cast back; else None."""
    cast_back = only_use(y, ("Cast",), graph)
    norm = only_use(cast_back.inputs[0] if cast_back else y, ("Mul", "Div"), graph)
    if norm is None:
        return None
    xf, r = norm.inputs
    if norm.op == "Mul" and producer(xf, "Reciprocal"):
        xf, r = r, xf
    inverse = only_use(r, ("Reciprocal",), graph) if norm.op == "Mul" else None
    root = only_use(inverse.inputs[0] if inverse else r if norm.op == "Div" else None, ("Sqrt",), graph)
    add = only_use(root.inputs[0], ("Add",), graph) if root else None
    if add is None:
        return None
    mean_v = next((v for v in add.inputs if producer(v, "ReduceMean")), None)
    mean, eps = only_use(mean_v, ("ReduceMean",), graph), scalar(other(add, mean_v))
    square = only_use(mean.inputs[0], ("Pow", "Mul"), graph) if mean and eps is not None else None
    if square is None or not mean.attrs.get("keepdims", 1) or xf.shape is None or mean.input(1) is None \
            or mean.inputs[1].const is None:
        return None
    axes = [norm_axis(int(a), len(xf.shape)) for a in np.asarray(mean.inputs[1].const).ravel()]
    squares = square.inputs[0] is xf and (square.inputs[1] is xf if square.op == "Mul"
                                            else scalar(square.inputs[1]) == 2.0)
    if axes != [len(xf.shape) - 1] or not squares:
        return None
    return (strip_cast(xf) if cast_back else xf), eps


def _recover_rms_norm(graph, node) -> bool:
    """w * (x / sqrt(mean(x², last axis) + eps)) with w a constant over the last axis -> RMSNormalization(x, w):
    transformers' LlamaRMSNorm (and its kin) as torch.export, ONNX exporters and TensorFlow write it."""
    for w, y in (node.inputs, node.inputs[::-1]):
        parts = _rms_parts(graph, y) if w.const is not None and w.shape is not None and len(w.shape) == 1 else None
        if parts is None:
            continue
        x, eps = parts
        if x.shape is None or x.shape[-1] != w.shape[0] or x.dtype != node.outputs[0].dtype:
            continue
        b = Builder.replacing(node)
        epsilon = float(str(np.float32(eps)))  # the number the source wrote, not its float32 neighbour's digits
        norm = b.node("RMSNormalization", [x, w], {"axis": -1, "epsilon": epsilon}, name=node.meta.get("module"),
                      suffix="rms_norm")  # named after the source's layer where the frontend knows it
        graph.replace_node(node, norm.outputs)
        return True
    return False


def _as(b: Builder, value, dtype):
    """`value` in `dtype` (cast when it is another)."""
    return value if value.dtype == dtype else b.op("Cast", value, to=str(dtype))


def _decompose_rms_norm(graph, node) -> bool:
    """x / sqrt(mean(x², trailing axes) + epsilon) * scale, computed in float32 (as the op is) for narrower x."""
    x, scale = node.inputs
    if x.shape is None or x.dtype is None:
        return False
    b = Builder.replacing(node)
    wide = x.dtype if x.dtype.itemsize >= 4 else np.dtype(np.float32)
    xf = _as(b, x, wide)
    axes = np.arange(norm_axis(node.attrs.get("axis", -1), len(x.shape)), len(x.shape), dtype=np.int64)
    mean = b.op("ReduceMean", b.op("Mul", xf, xf), b.const(axes, b.name("axes")), keepdims=1)
    eps = b.const(np.array(node.attrs.get("epsilon", 1e-5), wide), b.name("epsilon"))
    y = b.op("Mul", b.op("Div", xf, b.op("Sqrt", b.op("Add", mean, eps))), _as(b, scale, wide))
    graph.replace_node(node, [b.op("Cast", y, to=str(x.dtype)) if wide != x.dtype else y])
    return True


set_recovery("RMSNormalization", "Mul", _recover_rms_norm)
set_decomposition("RMSNormalization", _decompose_rms_norm)


@op("GroupNormalization", inputs="X scale bias", layout=IMPLICIT, family=F,
    attrs={"epsilon": Attr("float", 1e-5), "num_groups": Attr("int"), "stash_type": Attr("int", 1),
           "layout": LAYOUT},
    infer=same_as(0), doc="Group normalisation (per-channel scale/bias). Equivalents: nn.GroupNorm, keras GroupNormalization.")
@channels_first
def group_normalization(X, scale, bias, *, epsilon, num_groups, stash_type):
    n, c = X.shape[:2]
    xf = _stash(X, stash_type).reshape(n, num_groups, -1)
    mean = xf.mean(axis=-1, keepdims=True)
    var = xf.var(axis=-1, keepdims=True)
    y = ((xf - mean) / np.sqrt(var + epsilon)).reshape(X.shape)
    bshape = (1, c) + (1,) * (X.ndim - 2)
    return (y * scale.reshape(bshape) + bias.reshape(bshape)).astype(X.dtype)


def _decompose_group_norm(graph, node) -> bool:
    """Channels-first x as (N, groups, rest): (x - mean) / sqrt(variance + epsilon) over the rest, reshaped back,
    times the per-channel scale plus the bias; computed in float32 (stash_type 1) for narrower x."""
    x, scale, bias = node.inputs
    if node.attrs.get("layout", "NCHW") != "NCHW" or x.shape is None or len(x.shape) < 3 \
            or not all(isinstance(d, int) for d in x.shape[1:]) or x.dtype is None:
        return False
    c, groups = x.shape[1], node.attrs["num_groups"]
    b = Builder.replacing(node)
    wide = x.dtype if x.dtype.itemsize >= 4 or node.attrs.get("stash_type", 1) != 1 else np.dtype(np.float32)
    xf = _as(b, x, wide)
    grouped = b.op("Reshape", xf, b.named([0, groups, -1], "group_shape"), suffix="grouped")
    last = b.named([2], "group_axis")
    centred = b.op("Sub", grouped, b.op("ReduceMean", grouped, last, keepdims=1, suffix="mean"), suffix="centred")
    variance = b.op("ReduceMean", b.op("Mul", centred, centred, suffix="squares"), last, keepdims=1, suffix="variance")
    deviation = b.op("Sqrt", b.op("Add", variance, b.named(node.attrs.get("epsilon", 1e-5), "epsilon", wide),
                                  suffix="variance_epsilon"), suffix="deviation")
    normal = b.op("Reshape", b.op("Div", centred, deviation, suffix="normal_groups"),
                  b.named([0, *x.shape[1:]], "channel_shape"), suffix="normal")
    per_channel = b.named([c] + [1] * (len(x.shape) - 2), "per_channel")
    scaled = b.op("Mul", normal, b.op("Reshape", _as(b, scale, wide), per_channel, suffix="channel_scale"),
                  suffix="scaled")
    y = b.op("Add", scaled, b.op("Reshape", _as(b, bias, wide), per_channel, suffix="channel_bias"), suffix="shifted")
    graph.replace_node(node, [b.op("Cast", y, to=str(x.dtype)) if wide != x.dtype else y])
    return True


set_decomposition("GroupNormalization", _decompose_group_norm)


@op("LRN", layout=IMPLICIT, family=F, infer=same_as(0),
    attrs={"size": Attr("int"), "alpha": Attr("float", 1e-4), "beta": Attr("float", 0.75),
           "bias": Attr("float", 1.0), "layout": LAYOUT},
    doc="Local response normalisation across channels. Equivalents: nn.LocalResponseNorm, tf.nn.lrn (depth_radius=(size-1)/2).")
@channels_first
def lrn(X, *, size, alpha, beta, bias):
    c = X.shape[1]
    sq = X.astype(np.float64) ** 2
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    padded = np.pad(sq, [(0, 0), (lo, hi)] + [(0, 0)] * (X.ndim - 2))
    s = sum(padded[:, i:i + c] for i in range(size))
    return (X / (bias + alpha / size * s) ** beta).astype(X.dtype)


def _decompose_lrn(graph, node):
    """x / (bias + alpha/size * window sum of x^2 over channels)^beta, the window sum as `size` shifted slices of
    the channel-padded squares, for targets without a local response normalisation (Keras, TFLite, Flax)."""
    x = node.inputs[0]
    rank = len(x.shape or ())
    axis = 1 if node.attrs.get("layout", "NCHW") == "NCHW" else rank - 1
    if rank < 3 or not isinstance(x.shape[axis], int):
        return False
    size, c = node.attrs["size"], x.shape[axis]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    b = Builder.replacing(node)
    dt = x.dtype or np.float32

    def const(name, v, dtype=np.int64):
        return b.const(np.array(v, dtype=dtype), b.name(name))

    pads = [0] * (2 * rank)
    pads[axis], pads[rank + axis] = lo, hi
    squares = b.op("Pad", b.op("Mul", x, x, suffix="square"), const("pads", pads), suffix="pad")
    total = None
    for i in range(size):
        part = b.op("Slice", squares, const(f"start{i}", [i]), const(f"end{i}", [i + c]), const("axis", [axis]),
                    suffix=f"shift{i}")
        total = part if total is None else b.op("Add", total, part, suffix=f"sum{i}")
    scaled = b.op("Mul", total, const("alpha", node.attrs.get("alpha", 1e-4) / size, dt), suffix="scaled")
    base = b.op("Add", scaled, const("bias", node.attrs.get("bias", 1.0), dt), suffix="base")
    power = b.op("Pow", base, const("beta", node.attrs.get("beta", 0.75), dt), suffix="power")
    graph.replace_node(node, [b.op("Div", x, power, suffix="normalized")])
    return True


set_decomposition("LRN", _decompose_lrn)


@op("LpNormalization", inputs="input", outputs="output", layout=attribute("axis", rule=L.single_axis(-1)), family=F, infer=same_as(0),
    attrs={"axis": Attr("int", -1), "p": Attr("int", 2)},
    doc="Normalise by the Lp norm along an axis. Equivalents: F.normalize, tf.math.l2_normalize.")
def lp_normalization(input, axis, p):
    n = np.sum(np.abs(input) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n == 0, 0, input / n).astype(input.dtype)


@op("MeanVarianceNormalization", family=F, layout=attribute("axes", rule=L.mvn_axes), infer=same_as(0),
    attrs={"axes": Attr("ints", [0, 2, 3])}, doc="(x - mean) / std over axes.")
def mean_variance_normalization(X, axes):
    ax = tuple(axes)
    m = X.mean(axis=ax, keepdims=True)
    s = np.sqrt((X ** 2).mean(axis=ax, keepdims=True) - m ** 2)
    return ((X - m) / (s + 1e-9)).astype(X.dtype)


def _decompose_lp_normalization(graph, node):
    """x / ||x||_p along the axis, 0 where the norm is 0."""
    x = node.inputs[0]
    if x.shape is None or x.dtype is None:
        return False
    a = attrs_of(node)
    b = Builder.replacing(node)
    norm = _lp_norm(b, x, [norm_axis(a["axis"], len(x.shape))], a["p"])
    zero = b.const(np.array(0, x.dtype), b.name("zero"))
    graph.replace_node(node, [b.op("Where", b.op("Equal", norm, zero), zero, b.op("Div", x, norm))])
    return True


def _decompose_mean_variance_normalization(graph, node):
    """(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over the axes, as the reference computes it."""
    x = node.inputs[0]
    if x.dtype is None:
        return False
    b = Builder.replacing(node)
    axes = b.const(np.array(attrs_of(node)["axes"], np.int64), b.name("axes"))
    mean = b.op("ReduceMean", x, axes, keepdims=1, suffix="mean")
    mean_sq = b.op("ReduceMean", b.op("Mul", x, x), axes, keepdims=1, suffix="mean_square")
    std = b.op("Sqrt", b.op("Sub", mean_sq, b.op("Mul", mean, mean)), suffix="std")
    eps = b.const(np.array(1e-9, x.dtype), b.name("epsilon"))
    graph.replace_node(node, [b.op("Div", b.op("Sub", x, mean), b.op("Add", std, eps))])
    return True


set_decomposition("LpNormalization", _decompose_lp_normalization)
set_decomposition("MeanVarianceNormalization", _decompose_mean_variance_normalization)


@op("Dropout", inputs="data ratio? training_mode?", outputs="output mask?", family=F, foldable=False,
    attrs={"seed": Attr("int", None)}, infer=same_as(0),
    doc="Dropout; identity at inference. Equivalents: nn.Dropout, keras Dropout.")
def dropout(data, ratio=None, training_mode=None, *, seed):
    r = 0.5 if ratio is None else float(np.asarray(ratio))
    if training_mode is None or not bool(training_mode) or r == 0:
        return data.copy(), np.ones(data.shape, dtype=bool)
    rng = np.random.default_rng(seed)
    mask = rng.uniform(size=data.shape) >= r
    return (data * mask / (1 - r)).astype(data.dtype), mask


def _decompose_inference_dropout(graph, node):
    """At inference (or with a ratio of 0): the data, and (when read) a mask of all True."""
    training = node.input(2) if len(node.inputs) > 2 else None
    ratio = node.input(1) if len(node.inputs) > 1 else None
    if training is not None and (training.const is None or bool(np.asarray(training.const))) and \
            (ratio is None or ratio.const is None or float(np.asarray(ratio.const)) != 0):
        return "dropout in training mode draws a random mask"
    x = node.inputs[0]
    masked = len(node.outputs) > 1 and node.outputs[1] is not None
    if masked and (x.shape is None or not shapes.is_static(x.shape)):
        return "the mask of a dropout of dynamic shape"
    b = Builder.replacing(node)
    outputs = [b.op("Identity", x)]
    if masked:
        outputs.append(b.op("Identity", b.named(np.ones(x.shape, bool), "kept"), suffix="mask"))
    graph.replace_node(node, outputs)
    return True


set_decomposition("Dropout", _decompose_inference_dropout)


# -- dense algebra ------------------------------------------------------------------------------
def _matmul_infer(inputs, attrs):
    a, b = inputs[0].shape, inputs[1].shape
    dt = inputs[0].dtype
    if a is None or b is None:
        return [(dt, None)]
    a2, b2 = (list(a) if len(a) > 1 else [1] + list(a)), (list(b) if len(b) > 1 else list(b) + [1])
    batch = shapes.broadcast(tuple(a2[:-2]), tuple(b2[:-2]))
    out = list(batch) + ([a2[-2]] if len(a) > 1 else []) + ([b2[-1]] if len(b) > 1 else [])
    return [(dt, tuple(out))]


def _f64(x):
    """Products accumulate in float64 (ints too: exact for the ranges models use)."""
    return x.astype(np.float64)


@op("MatMul", inputs="A B", family=F, layout=terminate(head=(1, 0)), infer=_matmul_infer,
    examples=({"inputs": [(2, 3, 4), (2, 4, 5)]},),  # two activations, as attention multiplies them
    doc="Matrix product with NumPy broadcasting. Equivalents: torch.matmul, tf.matmul, BATCH_MATMUL.")
def matmul(A, B):
    return np.matmul(_f64(A), _f64(B)).astype(A.dtype)


def _gemm_infer(inputs, attrs):
    a, b = inputs[0].shape, inputs[1].shape
    if a is None or b is None:
        return [(inputs[0].dtype, None)]
    m = a[1] if attrs["transA"] else a[0]
    n = b[0] if attrs["transB"] else b[1]
    return [(inputs[0].dtype, (m, n))]


@op("Gemm", inputs="A B C?", family=F, layout=terminate(head=(1, None)), infer=_gemm_infer,
    attrs={"alpha": Attr("float", 1.0), "beta": Attr("float", 1.0), "transA": Attr("int", 0),
           "transB": Attr("int", 0)},
    doc="alpha*A'B' + beta*C on 2-D operands. Equivalents: nn.Linear, keras Dense, FULLY_CONNECTED.")
def gemm(A, B, C=None, *, alpha, beta, transA, transB):
    a = _f64(A.T if transA else A)
    b = _f64(B.T if transB else B)
    y = alpha * (a @ b)
    if C is not None:
        y = y + beta * _f64(C)
    return y.astype(A.dtype)


def _decompose_gemm(graph, node):
    """alpha * A' @ B' + beta * C as Transpose, MatMul, Mul and Add."""
    a = attrs_of(node)
    x, w = node.inputs[0], node.inputs[1]
    c = node.input(2)
    b = Builder.replacing(node)

    def scalar(name, v):
        return b.const(np.array(v, x.dtype), b.name(name))

    if a["transA"]:
        x = b.op("Transpose", x, perm=[1, 0], suffix="a_t")
    if a["transB"]:
        w = b.op("Transpose", w, perm=[1, 0], suffix="b_t")
    y = b.op("MatMul", x, w, suffix="matmul")
    if a["alpha"] != 1.0:
        y = b.op("Mul", y, scalar("alpha", a["alpha"]), suffix="alpha")
    if c is not None:
        y = b.op("Add", y, c if a["beta"] == 1.0 else b.op("Mul", c, scalar("beta", a["beta"]), suffix="beta"))
    graph.replace_node(node, [y])
    return True


set_decomposition("Gemm", _decompose_gemm)


def _dense_infer(inputs, attrs):
    x, w = inputs[0].shape, inputs[1].shape
    if x is None or w is None:
        return [(inputs[0].dtype, None)]
    return [(inputs[0].dtype, tuple(x[:-1]) + (w[1],))]


@op("Dense", inputs="X W B?", family=F, layout=terminate(head=(1, 0)), infer=_dense_infer,
    examples=({"inputs": [(2, 8), (8, 5), (5,)], "const": [1, 2]}, {"inputs": [(2, 3, 6), (6, 4)], "const": [1]}),
    doc="X @ W + B on the last axis, W is [in, out]. Equivalents: nn.Linear (weight transposed), keras Dense, FULLY_CONNECTED.")
def dense(X, W, B=None):
    y = np.matmul(_f64(X), _f64(W))
    if B is not None:
        y = y + _f64(B)
    return y.astype(X.dtype)


def _recover_dense_over_leading_axes(graph, node) -> bool:
    """Reshape(Dense(Reshape(x, [rows, K]), W), x's leading dims + [N]) -> Dense(x, W): TensorFlow's tensordot
    (Keras's Dense on a tensor of rank > 2) flattens the leading axes around a 2-D product; the IR's Dense takes
    them as they are. Matched on shapes: the flattening keeps x's last axis, and the result has x's leading dims."""
    dense = only_use(node.inputs[0], ("Dense",), graph)
    flat = only_use(dense.inputs[0], ("Reshape",), graph) if dense is not None else None
    if flat is None:
        return False
    x, rows, out = flat.inputs[0], flat.outputs[0].shape, node.outputs[0].shape
    if x.shape is None or rows is None or out is None or len(x.shape) < 3 or len(rows) != 2 or \
            not isinstance(x.shape[-1], int) or rows[1] != x.shape[-1] or \
            tuple(out[:-1]) != tuple(x.shape[:-1]) or None in x.shape[:-1] or out[-1] != dense.outputs[0].shape[-1]:
        return False
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("Dense", x, *dense.inputs[1:], suffix="dense")])
    return True


set_recovery("Dense", "Reshape", _recover_dense_over_leading_axes)


def _softmax_family(kind):
    def ref(input, axis):
        x = input.astype(np.float64) if input.dtype != np.float64 else input
        if kind == "Hardmax":
            arg = np.argmax(x, axis=axis)
            return (np.expand_dims(arg, axis) == np.arange(x.shape[axis]).reshape(
                [-1 if i == norm_axis(axis, x.ndim) else 1 for i in range(x.ndim)])).astype(input.dtype)
        shifted = x - x.max(axis=axis, keepdims=True)
        lse = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        out = shifted - lse if kind == "LogSoftmax" else np.exp(shifted - lse)
        return out.astype(input.dtype)
    return ref


for _name, _eq in (("Softmax", "nn.Softmax, keras Softmax, SOFTMAX"),
                   ("LogSoftmax", "nn.LogSoftmax, LOG_SOFTMAX"), ("Hardmax", "one-hot of argmax")):
    op(_name, inputs="input", outputs="output", attrs={"axis": Attr("int", -1)}, family=F,
       layout=attribute("axis", rule=L.single_axis(-1)), infer=same_as(0),
       doc=f"{_name} along an axis. Equivalents: {_eq}.")(_softmax_family(_name))


def _decompose_hardmax(graph, node):
    """One-hot of the first maximum: ArgMax then OneHot (off 0, on 1) along the axis."""
    x = node.inputs[0]
    if x.shape is None or not isinstance(x.shape[node.attrs.get("axis", -1)], int):
        return False
    axis = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    b = Builder.replacing(node)
    arg = b.op("ArgMax", x, axis=axis, keepdims=0)
    hot = b.op("OneHot", arg, b.const(np.array(x.shape[axis], np.int64)), b.const(np.array([0, 1], x.dtype)),
               axis=axis)
    graph.replace_node(node, [hot])
    return True


set_decomposition("Hardmax", _decompose_hardmax)


# -- resampling ----------------------------------------------------------------------------------
def _resize_sizes(X, roi, scales, sizes, axes, policy):
    rank = X.ndim
    axes = [norm_axis(a, rank) for a in axes] if axes else list(range(rank))
    full_scales = [1.0] * rank
    out = list(X.shape)
    if sizes is not None and np.asarray(sizes).size:
        sz = [int(s) for s in np.asarray(sizes).ravel()]
        sc = [sz[j] / X.shape[a] for j, a in enumerate(axes)]
        if policy != "stretch":
            pick = min(sc) if policy == "not_larger" else max(sc)
            sc = [pick] * len(axes)
            sz = [int(np.floor(X.shape[a] * pick + 0.5)) for a in axes]
        for j, a in enumerate(axes):
            out[a], full_scales[a] = sz[j], sc[j]
    else:
        sc = [float(s) for s in np.asarray(scales).ravel()]
        for j, a in enumerate(axes):
            out[a], full_scales[a] = int(np.floor(X.shape[a] * sc[j])), sc[j]
    full_roi = None
    if roi is not None and np.asarray(roi).size:
        r = [float(v) for v in np.asarray(roi).ravel()]
        full_roi = [0.0] * rank + [1.0] * rank
        n = len(axes)
        for j, a in enumerate(axes):
            full_roi[a], full_roi[a + rank] = r[j], r[j + n]
    return out, full_scales, full_roi


def _resize_infer(inputs, attrs):
    x = inputs[0]
    sizes = const_ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    scales = inputs[2].const if len(inputs) > 2 and inputs[2] is not None else None
    if x.shape is None or (sizes is None and scales is None):
        return [(x.dtype, None if x.shape is None else (None,) * len(x.shape))]
    rank = len(x.shape)
    axes = [a % rank for a in attrs["axes"]] if attrs["axes"] else list(range(rank))
    factors = dict(zip(axes, np.asarray(scales).reshape(-1))) if scales is not None and np.size(scales) else {}
    open_dims = {i for i, d in enumerate(x.shape) if not isinstance(d, int)}
    kept = {i for i in open_dims if i not in axes or factors.get(i) == 1}
    if open_dims - kept and sizes and attrs["keep_aspect_ratio_policy"] != "stretch":
        return [(x.dtype, (None,) * rank)]  # every resized size depends on the open one
    dummy = np.empty(tuple(1 if i in open_dims else d for i, d in enumerate(x.shape)), dtype=np.uint8)
    out, _, _ = _resize_sizes(dummy, None, scales, sizes or None, attrs["axes"], attrs["keep_aspect_ratio_policy"])
    scaled = open_dims - kept if not sizes else set()  # an open dim times a factor: known at run time only
    return [(x.dtype, tuple(x.shape[i] if i in kept else None if i in scaled else d for i, d in enumerate(out)))]


@op("Resize", inputs="X roi? scales? sizes?", layout=implicit(L.per_axis_operands(1, 2, 3)), family=F, infer=_resize_infer,
    attrs={"mode": Attr("str", "nearest"), "coordinate_transformation_mode": Attr("str", "half_pixel"),
           "nearest_mode": Attr("str", "round_prefer_floor"), "cubic_coeff_a": Attr("float", -0.75),
           "exclude_outside": Attr("int", 0), "extrapolation_value": Attr("float", 0.0),
           "antialias": Attr("int", 0), "axes": Attr("ints", None),
           "keep_aspect_ratio_policy": Attr("str", "stretch"), "layout": LAYOUT},
    doc="Resample (nearest/linear/cubic). Equivalents: nn.Upsample, F.interpolate, keras UpSampling2D/Resizing, RESIZE_BILINEAR.")
def resize(X, roi=None, scales=None, sizes=None, *, mode, coordinate_transformation_mode, nearest_mode,
           cubic_coeff_a, exclude_outside, extrapolation_value, antialias, axes, keep_aspect_ratio_policy,
           layout):
    out, sc, r = _resize_sizes(X, roi, scales, sizes, axes, keep_aspect_ratio_policy)
    return resize_kernel(X, out, sc, mode=mode, ctm=coordinate_transformation_mode, roi=r,
                         nearest_mode=nearest_mode, cubic_a=cubic_coeff_a,
                         exclude_outside=bool(exclude_outside), antialias=bool(antialias),
                         extrapolation_value=extrapolation_value)


def _decompose_resize(graph, node):
    """Resize as, per resized axis, a Gather of each tap's source rows times its weights, summed: the same
    separable taps the reference kernel computes (ops every target has). Needs static sizes on the resized axes
    (another, such as an open batch, is kept by scale 1) and constant scales or sizes; not tf_crop_and_resize
    (its extrapolation is not a sum of taps)."""
    from tensorbridge.reference.kernels.resize import axis_taps

    a, x = node.attrs, node.inputs[0]
    operands = [node.input(i) for i in (1, 2, 3)]
    if a.get("coordinate_transformation_mode") == "tf_crop_and_resize" or x.shape is None or \
            any(v is not None and v.const is None for v in operands):
        return False
    roi, scales, sizes = (None if v is None else v.const for v in operands)
    open_axes = [i for i, d in enumerate(x.shape) if not isinstance(d, int)]  # kept as they are (the batch), or refused
    stand_in = np.empty([d if isinstance(d, int) else 1 for d in x.shape], np.uint8)
    out, full_scales, full_roi = _resize_sizes(stand_in, roi, scales, sizes, a.get("axes"),
                                               a.get("keep_aspect_ratio_policy", "stretch"))
    sized = range(len(x.shape)) if sizes is None else [norm_axis(i, len(x.shape)) for i in a.get("axes") or
                                                       range(len(x.shape))]
    if any(full_scales[i] != 1 or (sizes is not None and i in sized) for i in open_axes):
        return False
    b = Builder.replacing(node)
    y = x
    for axis, (n, m) in enumerate(zip(x.shape, out)):
        if axis in open_axes or n == m and full_scales[axis] == 1:
            continue
        r = (full_roi[axis], full_roi[axis + len(x.shape)]) if full_roi else (0.0, 1.0)
        idx, w, _ = axis_taps(n, m, full_scales[axis], mode=a.get("mode", "nearest"),
                              ctm=a.get("coordinate_transformation_mode", "half_pixel"), roi=r,
                              nearest_mode=a.get("nearest_mode", "round_prefer_floor"),
                              cubic_a=a.get("cubic_coeff_a", -0.75), exclude_outside=bool(a.get("exclude_outside")),
                              antialias=bool(a.get("antialias")))
        shape = [1] * len(x.shape)
        shape[axis] = m
        total = None
        for t in range(idx.shape[1]):
            tap = b.op("Gather", y, b.const(idx[:, t].astype(np.int64)), suffix=f"axis{axis}_tap{t}", axis=axis)
            if not np.all(w[:, t] == 1):
                tap = b.op("Mul", tap, b.const(w[:, t].reshape(shape).astype(x.dtype)), suffix=f"axis{axis}_w{t}")
            total = tap if total is None else b.op("Add", total, tap, suffix=f"axis{axis}_sum{t}")
        y = total
    graph.replace_node(node, [y])
    return True


set_decomposition("Resize", _decompose_resize)


def _d2s_infer(kind):
    def rule(inputs, attrs):
        x = inputs[0]
        b = attrs["blocksize"]
        if x.shape is None:
            return [(x.dtype, None)]
        sp, c = _spatial(x.shape, attrs["layout"])
        f = (lambda d: d * b) if kind == "d2s" else (lambda d: d // b)
        cc = (c // (b * b) if kind == "d2s" else c * b * b) if isinstance(c, int) else None
        return [(x.dtype, _with_layout(x.shape[0], cc, [f(d) if isinstance(d, int) else None for d in sp],
                                       attrs["layout"]))]
    return rule


@op("DepthToSpace", inputs="input", outputs="output", layout=IMPLICIT, family=F, infer=_d2s_infer("d2s"),
    attrs={"blocksize": Attr("int"), "mode": Attr("str", "DCR"), "layout": LAYOUT},
    doc="Move channel blocks into space. Equivalents: nn.PixelShuffle (CRD), tf.nn.depth_to_space (DCR), DEPTH_TO_SPACE.")
@channels_first
def depth_to_space(input, *, blocksize, mode):
    n, c, h, w = input.shape
    b = blocksize
    if mode == "DCR":
        t = input.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = input.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


@op("SpaceToDepth", inputs="input", outputs="output", layout=IMPLICIT, family=F, infer=_d2s_infer("s2d"),
    attrs={"blocksize": Attr("int"), "layout": LAYOUT},
    doc="Move spatial blocks into channels. Equivalents: nn.PixelUnshuffle (channel order differs), SPACE_TO_DEPTH.")
@channels_first
def space_to_depth(input, *, blocksize):
    n, c, h, w = input.shape
    b = blocksize
    t = input.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def _decompose_depth_space(graph, node):
    """DepthToSpace/SpaceToDepth as Reshape, Transpose, Reshape in the node's layout (a static image size; the
    batch may be open). Channel c of a DCR block (i, j) is (i*b + j)*C' + c', of a CRD one c'*b*b + i*b + j."""
    x, out = node.inputs[0], node.outputs[0]
    if x.shape is None or out.shape is None or len(x.shape) != 4 or not shapes.is_static(x.shape[1:]):
        return False
    bs, nhwc = node.attrs["blocksize"], node.attrs.get("layout", "NCHW") == "NHWC"
    to_space, crd = node.op == "DepthToSpace", node.attrs.get("mode", "DCR") == "CRD"
    if nhwc:
        h, w, c = x.shape[1:]
        if to_space:
            split, perm = ((h, w, c // bs ** 2, bs, bs), (0, 1, 4, 2, 5, 3)) if crd else                 ((h, w, bs, bs, c // bs ** 2), (0, 1, 3, 2, 4, 5))
        else:
            split, perm = (h // bs, bs, w // bs, bs, c), (0, 1, 3, 2, 4, 5)
    else:
        c, h, w = x.shape[1:]
        if to_space:
            split, perm = ((c // bs ** 2, bs, bs, h, w), (0, 1, 4, 2, 5, 3)) if crd else                 ((bs, bs, c // bs ** 2, h, w), (0, 3, 4, 1, 5, 2))
        else:
            split, perm = (c, h // bs, bs, w // bs, bs), (0, 3, 5, 1, 2, 4)
    b = Builder.replacing(node)
    blocks = b.op("Reshape", x, b.const(np.array([-1, *split], np.int64), b.name("blocks")), suffix="blocks")
    moved = b.op("Transpose", blocks, perm=list(perm), suffix="moved")
    shape = b.const(np.array([-1, *out.shape[1:]], np.int64), b.name("shape"))
    graph.replace_node(node, [b.op("Reshape", moved, shape)])
    return True


set_decomposition("DepthToSpace", _decompose_depth_space)
set_decomposition("SpaceToDepth", _decompose_depth_space)


def floor_window_pads(node) -> tuple[list[int], list[int]] | None:
    """Begin and end pads with which the node's windows, taken with floor rounding, are exactly the ones it
    computes (its auto_pad and ceil_mode resolved); None unless the spatial sizes are static, or the node is a
    max pool in ceil_mode with explicit pads (see _ceil_mode_end_pads)."""
    x, y, layout = node.inputs[0], node.outputs[0], node.attrs.get("layout", "NCHW")
    if x.shape is None or y.shape is None:
        return None
    (sp, _), (out, _) = _spatial(x.shape, layout), _spatial(y.shape, layout)
    nsp, kernel = len(sp), node.attrs["kernel_shape"]
    strides = node.attrs.get("strides") or [1] * nsp
    dil = node.attrs.get("dilations") or [1] * nsp
    if not all(isinstance(d, int) for d in (*sp, *out)):
        return _ceil_mode_end_pads(node, sp, out, strides, dil)
    pads = K.resolve_pads(sp, kernel, strides, dil, node.attrs.get("pads"), node.attrs.get("auto_pad", "NOTSET"))
    begin = list(pads[:nsp])
    return begin, [_reaching_end(*axis) for axis in zip(out, strides, kernel, dil, sp, begin)]


def _reaching_end(windows: int, stride: int, kernel: int, dilation: int, size: int, begin: int) -> int:
    """The end pad that `windows` windows, taken with floor rounding, reach past an axis of `size`."""
    return max(0, (windows - 1) * stride + (kernel - 1) * dilation + 1 - size - begin)


def _ceil_mode_end_pads(node, sizes, out, strides, dilations) -> tuple[list[int], list[int]] | None:
    """A max pool in ceil_mode over run-time sizes: the end pads widened by stride - 1 count the windows ceil_mode
    counts whenever the end pad plus the stride is at most the dilated kernel, as in every pool whose windows
    overlap or tile (ceil_mode would otherwise drop a last window starting in the padding); a known size's pad
    as for static sizes. The padding is never a maximum: every window holds one of the input's values."""
    a = node.attrs
    if node.op != "MaxPool" or not a.get("ceil_mode") or a.get("auto_pad", "NOTSET") != "NOTSET":
        return None
    nsp = len(sizes)
    pads = list(a.get("pads") or [0] * (2 * nsp))
    begin, end = pads[:nsp], pads[nsp:]
    for i, (n, o, k, s, d) in enumerate(zip(sizes, out, a["kernel_shape"], strides, dilations)):
        if isinstance(n, int) and isinstance(o, int):
            end[i] = _reaching_end(o, s, k, d, n, begin[i])
        elif end[i] + s <= (k - 1) * d + 1:
            end[i] += s - 1
        else:
            return None
    return begin, end


def indices_read(node) -> bool:
    """Whether a MaxPool's Indices output is read (by a node, or as a graph output)."""
    if len(node.outputs) < 2:
        return False
    indices = node.outputs[1]
    return bool(indices.uses()) or (node.graph is not None and any(v is indices for v in node.graph.outputs))


def _decompose_pool(graph, node):
    """MaxPool/AveragePool with ceil_mode, auto_pad or padding as Pad + a pool without either, or, where there is
    nothing to resolve or the pool is dilated, as Pad + its window's taps; an average pool's divisor (padding
    not counted, windows past the end) restored by a constant factor."""
    windows = floor_window_pads(node)
    if indices_read(node):
        return _pool_with_indices(graph, node, windows)
    if windows is None:
        return False
    begin, end = windows
    x, layout = node.inputs[0], node.attrs.get("layout", "NCHW")
    nsp = len(begin)
    first = 2 if layout == "NCHW" else 1  # the first spatial axis
    is_max = node.op == "MaxPool"
    b = Builder.replacing(node)
    padded = _window_padded(b, x, begin, end, first, is_max)
    attrs = {k: v for k, v in node.attrs.items() if k not in ("pads", "auto_pad", "ceil_mode")}
    if not is_max:
        attrs["count_include_pad"] = 1
    resolved = padded is x and not node.attrs.get("ceil_mode") and node.attrs.get("auto_pad", "NOTSET") == "NOTSET"
    if resolved or any(d != 1 for d in node.attrs.get("dilations") or []):  # the pool itself is what is refused
        y = _window_taps(b, padded, node, first)
    else:
        y = b.node(node.op, [padded], attrs, outputs=1, suffix="pool").outputs[0]
    if not is_max:
        sp = _spatial(x.shape, layout)[0]
        ones = np.ones((1, 1, *sp))
        kernel, strides = node.attrs["kernel_shape"], node.attrs.get("strides") or [1] * nsp
        dil = node.attrs.get("dilations") or [1] * nsp
        pads = K.resolve_pads(sp, kernel, strides, dil, node.attrs.get("pads"), node.attrs.get("auto_pad", "NOTSET"))
        wanted = K.avg_pool(ones, kernel, strides, pads, dil, node.attrs.get("ceil_mode", 0),
                            node.attrs.get("count_include_pad", 0))
        counted = K.avg_pool(ones, kernel, strides, begin + end, dil, 0, 1)
        factor = wanted / counted
        if not np.allclose(factor, 1.0, rtol=0, atol=1e-12):
            factor = factor if layout == "NCHW" else np.moveaxis(factor, 1, -1)
            y = b.op("Mul", y, b.const(factor.astype(x.dtype), b.name("divisor")), suffix="divisor")
    graph.replace_node(node, [y])  # an Indices output is unread (checked above)
    return True


def plane_starts(shape) -> np.ndarray:
    """Where each channel plane of an (N, C, *spatial) tensor of static `shape` starts in its flat order, shaped
    (N, C, 1, ...): what turns indices within a plane (PyTorch's pooling indices) into ONNX's over the tensor."""
    return np.arange(shape[0] * shape[1]).reshape(*shape[:2], *[1] * (len(shape) - 2)) * int(np.prod(shape[2:]))


def _window_padded(b, x, begin, end, first: int, is_max: bool):
    """`x` padded `begin`/`end` on its spatial axes (from `first`) as a pool's windows need: with the lowest value
    for a max pool, zeros for an average."""
    if not any(begin) and not any(end):
        return x
    nsp = len(begin)
    fill = (-np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min) if is_max else 0
    full = [[0] * (nsp + 2), [0] * (nsp + 2)]
    full[0][first:first + nsp], full[1][first:first + nsp] = begin, end
    return b.op("Pad", x, b.const(np.array(full[0] + full[1], np.int64)), b.const(np.array(fill, x.dtype)),
                suffix="pad", mode="constant")


def _pool_with_indices(graph, node, windows):
    """A max pool with its argmax Indices (ONNX's: flat over the whole NCHW input, whichever layout the node
    runs in) from its window's taps: each tap taken where it exceeds the best so far (the first maximum in window
    order wins, as the reference's and PyTorch's; a NaN wins over numbers), its input position's index kept
    beside it."""
    x = node.inputs[0]
    if windows is None or x.shape is None or not all(isinstance(d, int) for d in x.shape):
        return "indices of an input whose shape is known only at run time"
    if node.attrs.get("storage_order"):
        return "indices in column-major order"
    begin, end = windows
    b = Builder.replacing(node)
    nsp = len(begin)
    first = 2 if node.attrs.get("layout", "NCHW") == "NCHW" else 1  # the first spatial axis (channels last: 1)
    sp = list(x.shape[first:first + nsp])
    batch, channels = x.shape[0], x.shape[1 if first == 2 else -1]
    kernel = node.attrs["kernel_shape"]
    strides = node.attrs.get("strides") or [1] * nsp
    dil = node.attrs.get("dilations") or [1] * nsp
    padded = _window_padded(b, x, begin, end, first, True)
    out = [(n + bb + e - (k - 1) * d - 1) // s + 1 for n, bb, e, k, d, s in zip(sp, begin, end, kernel, dil, strides)]
    axes = b.named(list(range(first, first + nsp)), "window_axes", np.int64)
    steps = b.named(strides, "window_strides")

    def arranged(array):  # an (N, C, *spatial) array in the node's layout
        return array if first == 2 else np.moveaxis(array, 1, -1)
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    best = index = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        start = [o * d for o, d in zip(offset, dil)]
        stop = [a + (n - 1) * s + 1 for a, n, s in zip(start, out, strides)]
        tap = b.op("Slice", padded, b.named(start, "tap_start"), b.named(stop, "tap_end"), axes, steps, suffix="tap")
        coords = [np.clip(g * s + a - bb, 0, n - 1) for g, s, a, bb, n in zip(grids, strides, start, begin, sp)]
        position = b.named(arranged(np.ravel_multi_index(tuple(coords), sp).reshape(1, 1, *out)), "tap_positions",
                           np.int64)
        if best is None:
            best, index = tap, position
            continue
        taken = b.op("Greater", tap, best, suffix="tap_greater")
        if x.dtype.kind == "f":
            taken = b.op("Or", taken, b.op("And", b.op("IsNaN", tap), b.op("Not", b.op("IsNaN", best))), suffix="taken")
        best = b.op("Where", taken, tap, best, suffix="window_max")
        index = b.op("Where", taken, position, index, suffix="window_argmax")
    indices = b.op("Add", index, b.named(arranged(plane_starts([batch, channels, *sp])), "plane_starts", np.int64),
                   suffix="indices")
    graph.replace_node(node, [best, indices])
    return True


def _window_taps(b, padded, node, first: int):
    """A pool over an input already padded as its windows need, for a target that lacks this pool (dilated,
    3-D): the window's taps are strided slices of the input, one per kernel position, combined by Max (or
    averaged over the window, padding counted)."""
    kernel = node.attrs["kernel_shape"]
    nsp = len(kernel)
    strides = node.attrs.get("strides") or [1] * nsp
    dil = node.attrs.get("dilations") or [1] * nsp
    sp = padded.shape[first:first + nsp]
    out = [(n - (k - 1) * d - 1) // s + 1 for n, k, d, s in zip(sp, kernel, dil, strides)]

    axes, steps = b.named(list(range(first, first + nsp)), "window_axes", np.int64), b.named(strides, "window_strides")
    taps = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        start = [o * d for o, d in zip(offset, dil)]
        end = [a + (n - 1) * s + 1 for a, n, s in zip(start, out, strides)]
        taps.append(b.op("Slice", padded, b.named(start, "tap_start"), b.named(end, "tap_end"), axes, steps, suffix="tap"))
    if node.op == "MaxPool":
        return b.op("Max", *taps, suffix="window_max")
    total = b.op("Sum", *taps, suffix="window_sum")
    return b.op("Mul", total, b.named(1.0 / np.prod(kernel), "window_mean", padded.dtype))


set_decomposition("MaxPool", _decompose_pool)
set_decomposition("AveragePool", _decompose_pool)


def _decompose_dense(graph, node):
    b = Builder.replacing(node)
    y = b.op("MatMul", node.inputs[0], node.inputs[1], suffix="matmul")
    if node.input(2) is not None:
        y = b.op("Add", y, node.input(2), suffix="bias")
    graph.replace_node(node, [y])
    return True


set_decomposition("Dense", _decompose_dense)
