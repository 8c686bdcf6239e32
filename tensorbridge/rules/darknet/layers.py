"""Darknet's layer sections, both ways.

Reading: `fn(imp, section) -> Value` builds a section's IR from `imp.x` (the previous layer's output), reading its
weights in file order with `imp.take`. Writing: `fn(writer, node)` adds sections through the writer
(backends/darknet/writer.py), which routes inputs that are not the previous layer's output and merges batch
normalisation and activations into the layer before them, as Darknet's own cfgs do.

Detector heads are read as the tensor the layer outputs: `[yolo]` applies the logistic function to each anchor's
x, y, objectness and class channels and leaves w, h raw; `[region]` does the same with a softmax over the classes.
Decoding boxes (anchors, grid offsets, thresholds, NMS) is left to the user's post-processing, as in Darknet.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ops.patterns import constant as _const
from tensorbridge.rules.darknet.activations import composite_activation
from tensorbridge.rules.darknet.base import BN_EPSILON, R, section
from tensorbridge.rules.probes import repeat_factor


def _ints(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t != ""]
    except ValueError:
        raise ModelError(f"{text!r} is not a list of integers") from None


def _spatial(x, what: str) -> tuple[int, int, int]:
    if x.shape is None or len(x.shape) != 4:
        raise ModelError(f"{what} needs an image (C, H, W) as input, not a tensor of shape {x.shape}")
    return tuple(x.shape[1:])


# -- reading ------------------------------------------------------------------------------------------------
@section("convolutional", produces=("Conv", "BatchNormalization"))
def convolutional(imp, s):
    c, _, _ = _spatial(imp.x, "[convolutional]")
    n, size, stride = imp.int("filters", 1), imp.int("size", 1), imp.int("stride", 1)
    groups, dilation = imp.int("groups", 1), imp.int("dilation", 1)
    for flag in ("binary", "xnor"):
        if imp.int(flag, 0):
            raise ModelError(f"{flag} (XNOR-net) convolutions are not supported")
    if n < 1 or size < 1 or stride < 1 or groups < 1 or dilation < 1 or c % groups or n % groups:
        raise ModelError(f"filters={n}, size={size}, stride={stride}, groups={groups}, dilation={dilation} do "
                         f"not fit {c} input channels")
    pad = size // 2 if imp.int("pad", 0) else imp.int("padding", 0)
    normalize = imp.int("batch_normalize", 0)
    biases = imp.take(n, "biases")
    bn = [imp.take(n, what) for what in ("scales", "rolling_mean", "rolling_variance")] if normalize else None
    weights = imp.take(n * (c // groups) * size * size, "weights")
    if imp.int("flipped", 0):
        weights = weights.reshape(c // groups * size * size, n).T
    attrs = {"kernel_shape": [size, size], "strides": [stride, stride], "pads": [pad] * 4, "group": groups,
             "dilations": [dilation, dilation]}
    w = imp.weight("weight", weights.reshape(n, c // groups, size, size))
    if bn is None:
        y = imp.b.op("Conv", imp.x, w, imp.weight("bias", biases), suffix="conv", **attrs)
    else:
        y = imp.b.op("Conv", imp.x, w, suffix="conv", **attrs)
        y = batch_norm(imp, y, biases, *bn)
    return imp.activate(y, imp.str("activation", "logistic"))


def batch_norm(imp, y, biases, scales, mean, variance):
    weights = [imp.weight(name, a) for name, a in (("scale", scales), ("bias", biases), ("mean", mean),
                                                   ("variance", variance))]
    return imp.b.op("BatchNormalization", y, *weights, suffix="bn", epsilon=BN_EPSILON, epsilon_on="std")


@section("batchnorm", produces="BatchNormalization")
def batchnorm(imp, s):
    c = _spatial(imp.x, "[batchnorm]")[0]
    scales, mean, variance = (imp.take(c, what) for what in ("scales", "rolling_mean", "rolling_variance"))
    return batch_norm(imp, imp.x, np.zeros(c, np.float32), scales, mean, variance)


@section("connected", produces=("Flatten", "Dense", "BatchNormalization"))
def connected(imp, s):
    x = imp.x
    if x.shape is None or any(not isinstance(d, int) for d in x.shape):
        raise ModelError(f"[connected] needs an input of known size, not {x.shape}")
    if len(x.shape) != 2:
        x = imp.b.op("Flatten", x, suffix="flatten", axis=1)
    inputs, outputs = x.shape[1], imp.int("output", 1)
    biases = imp.take(outputs, "biases")
    weights = imp.take(outputs * inputs, "weights")
    matrix = weights.reshape(inputs, outputs) if imp.header.transposed else weights.reshape(outputs, inputs).T
    matrix = imp.weight("weight", np.ascontiguousarray(matrix))
    if not imp.int("batch_normalize", 0):
        y = imp.b.op("Dense", x, matrix, imp.weight("bias", biases), suffix="dense")
    else:  # the biases are added after the normalisation
        bn = [imp.take(outputs, what) for what in ("scales", "rolling_mean", "rolling_variance")]
        y = batch_norm(imp, imp.b.op("Dense", x, matrix, suffix="dense"), biases, *bn)
    return imp.activate(y, imp.str("activation", "logistic"))


@section("maxpool", produces="MaxPool")
def maxpool(imp, s):
    _spatial(imp.x, "[maxpool]")
    size, stride = imp.int("size", 1), imp.int("stride", 1)
    padding = imp.int("padding", size - 1)
    if size < 1 or stride < 1 or not 0 <= padding < 2 * size:
        raise ModelError(f"size={size}, stride={stride}, padding={padding} is not a pooling window")
    begin, end = padding // 2, padding - padding // 2
    return imp.b.op("MaxPool", imp.x, kernel_shape=[size, size], strides=[stride, stride],
                    pads=[begin, begin, end, end])


@section("avgpool", produces="GlobalAveragePool")
def avgpool(imp, s):
    _spatial(imp.x, "[avgpool]")
    return imp.b.op("GlobalAveragePool", imp.x)


@section("route", produces=("Concat", "Slice"))
def route(imp, s):
    layers = [imp.layer(i) for i in _ints(imp.str("layers", ""))]
    if not layers:
        raise ModelError("[route] names no layers")
    groups, group = imp.int("groups", 1), imp.int("group_id", 0)
    if groups > 1:
        parts = []
        for k, v in enumerate(layers):
            c = _spatial(v, "[route] with groups")[0]
            if c % groups or not 0 <= group < groups:
                raise ModelError(f"groups={groups}, group_id={group} does not split {c} channels")
            width = c // groups
            parts.append(imp.b.op("Slice", v, *(imp.b.const(np.array([a], np.int64)) for a in
                                                 (group * width, (group + 1) * width, 1)), suffix=f"group{k}"))
        layers = parts
    if len(layers) == 1:
        return layers[0]
    for v in layers:
        _spatial(v, "[route] over several layers")
    if len({tuple(v.shape[2:]) for v in layers}) > 1:
        raise ModelError(f"[route] joins layers of different sizes: {[list(v.shape[1:]) for v in layers]}")
    return imp.b.op("Concat", *layers, axis=1)


@section("shortcut", produces=("Add", "Mul", "Slice", "Pad"))
def shortcut(imp, s):
    other = imp.layer(imp.int("from", 0))
    alpha, beta = imp.float("alpha", 1.0), imp.float("beta", 1.0)
    b = imp.b
    if other.shape != imp.x.shape:
        if alpha != 1:
            raise ModelError("[shortcut] with alpha between layers of different shapes is not supported")
        other = _strided_add_term(imp, other, imp.x)
    prev = imp.x if alpha == 1 else b.op("Mul", imp.x, b.const(np.float32(alpha)), suffix="alpha")
    other = other if beta == 1 else b.op("Mul", other, b.const(np.float32(beta)), suffix="beta")
    return imp.activate(b.op("Add", prev, other), imp.str("activation", "linear"))


def _strided_add_term(imp, other, x):
    """What Darknet adds from a larger layer: every stride-th pixel of its first channels, zero in the channels
    it lacks (the shortcut of its ResNet cfgs)."""
    (c1, h1, w1), (c2, h2, w2) = _spatial(other, "[shortcut]"), _spatial(x, "[shortcut]")
    stride = w1 // w2
    if stride < 1 or h1 // h2 != stride:
        raise ModelError(f"[shortcut] from a smaller layer ({[c1, h1, w1]} into {[c2, h2, w2]}) is not supported")
    b, channels = imp.b, min(c1, c2)
    ends = [channels, h2 * stride, w2 * stride]
    term = b.op("Slice", other, *(b.const(np.array(a, np.int64)) for a in ([0, 0, 0], ends, [1, 2, 3],
                                                                            [1, stride, stride])), suffix="sample")
    if channels < c2:
        term = b.op("Pad", term, b.const(np.array([0, 0, 0, 0, 0, c2 - channels, 0, 0], np.int64)), suffix="pad")
    return term


@section("upsample", produces=("Resize", "Mul"))
def upsample(imp, s):
    _spatial(imp.x, "[upsample]")
    stride, scale = imp.int("stride", 2), imp.float("scale", 1.0)
    if stride < 1:
        raise ModelError(f"[upsample] with stride={stride} (a downsampling) is not supported")
    scales = imp.b.const(np.array([1, 1, stride, stride], np.float32))
    y = imp.b.op("Resize", imp.x, None, scales, mode="nearest", coordinate_transformation_mode="asymmetric",
                 nearest_mode="floor", suffix="resize")
    return y if scale == 1 else imp.b.op("Mul", y, imp.b.const(np.float32(scale)), suffix="scale")


@section("softmax", produces=("Flatten", "Softmax", "Reshape", "Div"))
def softmax(imp, s):
    if imp.str("tree", "") or imp.float("spatial", 0):
        raise ModelError("hierarchical (tree) and spatial softmax are not supported")
    x, b = imp.x, imp.b
    if x.shape is None or len(x.shape) != 2:
        x = b.op("Flatten", x, suffix="flatten", axis=1)
    temperature, groups = imp.float("temperature", 1.0), imp.int("groups", 1)
    if temperature != 1:
        x = b.op("Div", x, b.const(np.float32(temperature)), suffix="temperature")
    if groups == 1:
        return b.op("Softmax", x, axis=-1)
    if x.shape[1] % groups:
        raise ModelError(f"[softmax] groups={groups} does not divide its {x.shape[1]} inputs")
    grouped = b.op("Reshape", x, b.const(np.array([1, groups, -1], np.int64)), suffix="groups")
    return b.op("Reshape", b.op("Softmax", grouped, axis=-1, suffix="softmax"), b.const(np.array(x.shape, np.int64)))


@section("dropout", produces=())
def dropout(imp, s):
    return imp.x  # inference: the layer passes its input on


@section("cost", produces=())
def cost(imp, s):
    return imp.x  # training only


@section("activation", produces=())
def activation_layer(imp, s):
    return imp.activate(imp.x, imp.str("activation", "linear"))


def _channel_mask(channels: int, per_anchor: int, entries) -> np.ndarray:
    mask = np.zeros((1, channels, 1, 1), bool)
    for start in range(0, channels, per_anchor):
        mask[0, [start + e for e in entries]] = True
    return mask


@section("yolo", produces=("Sigmoid", "Where", "Mul", "Sub"))
def yolo(imp, s):
    c = _spatial(imp.x, "[yolo]")[0]
    classes, total = imp.int("classes", 20), imp.int("num", 1)
    mask = _ints(imp.str("mask", "")) or list(range(total))
    if c != len(mask) * (classes + 5):
        raise ModelError(f"[yolo] with {len(mask)} anchors and {classes} classes needs "
                         f"{len(mask) * (classes + 5)} channels, its input has {c}")
    b = imp.b
    sig = b.op("Sigmoid", imp.x, suffix="sigmoid")
    logistic = _channel_mask(c, classes + 5, [0, 1, *range(4, classes + 5)])
    scale = imp.float("scale_x_y", 1.0)
    y = b.op("Where", b.const(logistic, imp.name("logistic")), sig, imp.x, suffix="logistic" if scale != 1 else "")
    if scale != 1:
        xy = b.op("Sub", b.op("Mul", sig, b.const(np.float32(scale)), suffix="scale_xy"),
                  b.const(np.float32(0.5 * (scale - 1))), suffix="shift_xy")
        y = b.op("Where", b.const(_channel_mask(c, classes + 5, [0, 1]), imp.name("xy")), xy, y)
    return head(y, s)


@section("region", produces=("Reshape", "Slice", "Sigmoid", "Softmax", "Concat"))
def region(imp, s):
    c, h, w = _spatial(imp.x, "[region]")
    classes, n, coords = imp.int("classes", 20), imp.int("num", 1), imp.int("coords", 4)
    if imp.int("background", 0) or imp.str("tree", "") or imp.str("map", "") or coords < 2:
        raise ModelError("[region] with background, tree or map options, or fewer than 2 coords, is not supported")
    entries = coords + 1 + classes
    if c != n * entries:
        raise ModelError(f"[region] with {n} anchors, {coords} coords and {classes} classes needs {n * entries} "
                         f"channels, its input has {c}")
    b = imp.b
    grid = b.op("Reshape", imp.x, b.const(np.array([1, n, entries, h, w], np.int64)), suffix="anchors")

    def part(start, end, suffix):
        return b.op("Slice", grid, *(b.const(np.array([a], np.int64)) for a in (start, end, 2)), suffix=suffix)

    parts = [b.op("Sigmoid", part(0, 2, "xy"), suffix="xy_logistic"), part(2, coords, "wh"),
             b.op("Sigmoid", part(coords, coords + 1, "objectness"), suffix="objectness_logistic")]
    scores = part(coords + 1, entries, "classes")
    parts.append(b.op("Softmax", scores, axis=2, suffix="class_softmax") if imp.int("softmax", 0)
                 else b.op("Sigmoid", scores, suffix="class_logistic"))
    joined = b.op("Concat", *parts, axis=2, suffix="entries")
    return head(b.op("Reshape", joined, b.const(np.array([1, c, h, w], np.int64))), s)


def head(y, s):
    """Mark the last node of a detector head with its section, for the writer (which proves the marked nodes
    still compute the head before it writes the section)."""
    y.producer.meta["darknet_head"] = {"kind": s.kind, "options": dict(s.options)}
    return y


def _logistic(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


def head_output(kind: str, options: dict, x: np.ndarray) -> np.ndarray:
    """What a [yolo] or [region] layer outputs for the image `x` (float64), as Darknet computes it."""
    c, h, w = x.shape[1:]
    classes = int(options.get("classes", 20))
    if kind == "yolo":
        entries = classes + 5
        grid = x.reshape(c // entries, entries, h, w).astype(np.float64)
        out = grid.copy()
        scale = float(options.get("scale_x_y", 1))
        out[:, :2] = _logistic(grid[:, :2]) * scale - 0.5 * (scale - 1)
        out[:, 4:] = _logistic(grid[:, 4:])
        return out.reshape(x.shape)
    coords = int(options.get("coords", 4))
    entries = coords + 1 + classes
    grid = x.reshape(c // entries, entries, h, w).astype(np.float64)
    out = grid.copy()
    out[:, :2] = _logistic(grid[:, :2])
    out[:, coords] = _logistic(grid[:, coords])
    scores = grid[:, coords + 1:]
    if int(options.get("softmax", 0)):
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[:, coords + 1:] = e / e.sum(axis=1, keepdims=True)
    else:
        out[:, coords + 1:] = _logistic(scores)
    return out.reshape(x.shape)


# -- writing ------------------------------------------------------------------------------------------------
def _square(values, what: str) -> str | None:
    return None if values is None or len(set(values)) <= 1 else f"Darknet takes one {what} for both axes, not {values}"


def _check_conv(node):
    x, w = node.input(0), node.input(1)
    if x.shape is None or len(x.shape) != 4 or _const(w) is None or (node.input(2) is not None
                                                                      and _const(node.input(2)) is None):
        return "Darknet convolutions are 2-D, with constant weights"
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return "padding given as auto_pad"
    k = list(w.shape[2:])
    if k == [1, 1] and any(node.attrs.get("pads") or [0]):
        return "a padded 1x1 convolution (libdarknet runs 1x1 convolutions on the unpadded input)"
    return _square(k, "kernel size") or _square(node.attrs.get("strides"), "stride") or \
        _square(node.attrs.get("dilations"), "dilation") or _square(node.attrs.get("pads"), "padding on every side")


@R.exports("Conv", check=_check_conv)
def write_conv(w, node):
    weight = _const(node.input(1))
    n, _, size, _ = weight.shape
    pad = (node.attrs.get("pads") or [0])[0]
    stride = (node.attrs.get("strides") or [1])[0]
    if size == 1 and stride > 1:  # libdarknet runs 1x1 convolutions on the unstrided input: sample it first
        w.layer("maxpool", {"size": 1, "stride": stride}, node)
        node_reads, stride = None, 1
    else:
        node_reads = "first"
    options = {"filters": n, "size": size, "stride": stride}
    options.update({"pad": 1} if pad == size // 2 and pad else {"padding": pad} if pad else {})
    if node.attrs.get("group", 1) != 1:
        options["groups"] = node.attrs["group"]
    dilation = (node.attrs.get("dilations") or [1])[0]
    if dilation != 1:
        options["dilation"] = dilation
    options["activation"] = "linear"
    bias = _const(node.input(2))
    w.layer("convolutional", options, node, {"biases": bias if bias is not None else np.zeros(n, np.float32),
                                             "weights": weight}, reads=node_reads)


def _normalised(node):
    """A normalised layer Darknet can merge `node` into (the convolution or product it reads), or None."""
    src = node.input(0).producer
    if src is not None and src.op in ("Conv", "Dense") and len(node.input(0).uses()) == 1 and \
            node.input(0) not in node.graph.outputs:
        return src
    return None


def _check_bn(node):
    if node.attrs.get("training_mode", 0) or any(_const(v) is None for v in node.inputs[1:5]):
        return "Darknet normalises with constant statistics only"
    if _normalised(node) is None and np.any(_const(node.input(2))):
        return "a batch normalisation with a shift that follows no convolution (Darknet's [batchnorm] has none)"
    std = _darknet_std(node)
    return None if np.all(std > BN_EPSILON) else "a standard deviation at or below Darknet's epsilon (1e-6)"


def _darknet_std(node) -> np.ndarray:
    """The standard deviation the node divides by, float64."""
    var, eps = _const(node.input(4)).astype(np.float64), float(node.attrs.get("epsilon", 1e-5))
    return np.sqrt(var) + eps if node.attrs.get("epsilon_on") == "std" else np.sqrt(var + eps)


def darknet_variance(node) -> np.ndarray:
    """The rolling variance Darknet needs to divide by the same standard deviation as `node` (its own array when
    the node already computes Darknet's way)."""
    var = _const(node.input(4))
    if node.attrs.get("epsilon_on") == "std" and float(node.attrs.get("epsilon")) == BN_EPSILON:
        return var
    return ((_darknet_std(node) - BN_EPSILON) ** 2).astype(np.float32)


@R.exports("BatchNormalization", check=_check_bn)
def write_bn(w, node):
    scales, shift, mean = (_const(node.input(i)) for i in (1, 2, 3))
    stats = {"scales": scales, "mean": mean, "variance": darknet_variance(node)}
    layer = _normalised(node)
    if layer is None:
        w.layer("batchnorm", {}, node, stats)
        return
    section = w.merge(node, layer)
    bias = section.weights.pop("biases")
    if np.any(bias):  # the layer's own bias moves into the mean it is compared with
        stats["mean"] = (mean.astype(np.float64) - bias).astype(np.float32)
    section.weights.update(stats, biases=shift)
    section.options = {**{k: v for k, v in section.options.items() if k != "activation"}, "batch_normalize": 1,
                       "activation": section.options.get("activation", "linear")}


def _check_pool(node):
    x, y = node.input(0), node.outputs[0]
    if x.shape is None or len(x.shape) != 4 or y.shape is None:
        return "Darknet pools images (C, H, W)"
    k, s = node.attrs["kernel_shape"], node.attrs.get("strides") or [1, 1]
    pads = node.attrs.get("pads") or [0] * 4
    if any(d != 1 for d in node.attrs.get("dilations") or [1, 1]):
        return "dilated pooling"
    problem = _square(k, "pool size") or _square(s, "stride")
    if problem:
        return problem
    if pads[0] != pads[1] or pads[2] != pads[3] or pads[2] - pads[0] not in (0, 1):
        return f"padding {pads}: Darknet pads (padding // 2) before and the rest after, equally on both axes"
    total = pads[0] + pads[2]
    if any(out != (size + total - k[0]) // s[0] + 1 for out, size in zip(y.shape[2:], x.shape[2:])):
        return "an output size other than Darknet's (rounded down)"
    return None


@R.exports("MaxPool", check=_check_pool)
def write_maxpool(w, node):
    pads = node.attrs.get("pads") or [0] * 4
    size, stride = node.attrs["kernel_shape"][0], (node.attrs.get("strides") or [1])[0]
    options = {"size": size, "stride": stride}
    if pads[0] + pads[2] != size - 1:
        options["padding"] = pads[0] + pads[2]
    w.layer("maxpool", options, node)


def _check_average(node):
    if len(node.input(0).shape or ()) != 4:
        return "Darknet averages images (C, H, W) only"
    if node.op == "ReduceMean":
        axes = _const(node.input(1)) if node.input(1) is not None else node.attrs.get("axes")
        if axes is None or sorted(int(a) % 4 for a in np.ravel(axes)) != [2, 3] or \
                not node.attrs.get("keepdims", 1):
            return "Darknet averages over the whole image, keeping its dimensions"
    return None


@R.exports("GlobalAveragePool", "ReduceMean", check=_check_average)
def write_avgpool(w, node):
    w.layer("avgpool", {}, node)


def _computed(*values) -> str | None:
    return "Darknet layers read other layers, not constants" if any(v.const is not None for v in values) else None


def _scaled(v):
    """(base, factor, [the Mul]) when `v` is a computed value times a scalar constant and read once; else (v, 1, [])."""
    n = v.producer
    if n is not None and n.op == "Mul" and len(v.uses()) == 1:
        for base, k in ((n.inputs[0], n.inputs[1]), (n.inputs[1], n.inputs[0])):
            if k is not None and k.const is not None and np.asarray(k.const).size == 1 and base.const is None:
                return base, float(np.asarray(k.const).reshape(-1)[0]), [n]
    return v, 1.0, []


def shortcut_operands(node):
    """(previous layer, the layer added, nodes in between, factor of each) of an Add that a [shortcut] computes,
    or None: two images of one shape, each maybe times a scalar (alpha, beta), or a strided sample of a larger
    image zero-padded in channels (`_strided_add_term`)."""
    if node.op != "Add" or _computed(*node.inputs) or len(node.input(0).shape or ()) != 4:
        return None
    (a, ka, ma), (b, kb, mb) = _scaled(node.inputs[0]), _scaled(node.inputs[1])
    for prev, term, k_prev, k_term, scaling in ((a, b, ka, kb, ma + mb), (b, a, kb, ka, mb + ma)):
        inner = list(scaling)
        if term.producer is not None and term.producer.op == "Pad" and len(term.uses()) == 1:
            inner.append(term.producer)
            pads = _const(term.producer.input(1))
            value = term.producer.input(2)
            if term.producer.attrs.get("mode", "constant") != "constant" or pads is None or pads.size != 8 or \
                    np.any(pads[[0, 1, 2, 3, 4, 6, 7]]) or (value is not None and np.any(_const(value))):
                continue
            term = term.producer.input(0)
        sample = term.producer
        if sample is None or sample.op != "Slice" or len(term.uses()) != 1 or k_prev != 1:
            continue
        source = sample.input(0)
        if _sampled(sample, source, prev):
            return prev, source, [sample, *inner], k_prev, k_term
    return (a, b, ma + mb, ka, kb) if a.shape == b.shape else None


def _sampled(sample, source, prev) -> bool:
    """`sample` takes every stride-th pixel (from 0) and the first channels of `source`, as many as `prev` has."""
    if source.shape is None or prev.shape is None or len(source.shape) != 4:
        return False
    probe = np.arange(np.prod(source.shape), dtype=np.float32).reshape(source.shape)
    from tensorbridge.reference.interpreter import run_node

    try:
        got = run_node(sample, [probe, *(None if v is None else _const(v) for v in sample.inputs[1:])])[0]
    except Exception:  # noqa: BLE001 - a slice this probe cannot run is not the pattern
        return False
    stride = source.shape[3] // prev.shape[3]
    channels = min(source.shape[1], prev.shape[1])
    if stride < 1:
        return False
    want = probe[:, :channels, :prev.shape[2] * stride:stride, :prev.shape[3] * stride:stride]
    return got.shape == want.shape and np.array_equal(got, want)


@R.exports("Add", check=lambda n: None if shortcut_operands(n) or composite_activation(n) else
           "Darknet adds layers of one shape, or a strided sample of a larger one")
def write_add(w, node):
    composite = composite_activation(node)
    if composite:
        x, inner, name = composite
        w.activate(node, name, x, inner)
        return
    a, b, _, ka, kb = shortcut_operands(node)
    (prev, alpha), (other, beta) = ((b, kb), (a, ka)) if w.is_last(b) and a.shape == b.shape else ((a, ka), (b, kb))
    weights = {k: v for k, v in (("alpha", alpha), ("beta", beta)) if v != 1}
    w.layer("shortcut", {"from": w.ref(other), **weights, "activation": "linear"}, node, reads=prev)


def _check_concat(node):
    rank = len(node.outputs[0].shape or ())
    axis = node.attrs["axis"] % rank if rank else None
    return _computed(*node.inputs) or (None if rank == 4 and axis == 1 else "Darknet joins images by channel")


@R.exports("Concat", check=_check_concat)
def write_concat(w, node):
    w.layer("route", {"layers": w.ref(*node.inputs)}, node, reads=None)


def _channel_group(node) -> tuple[int, int] | None:
    """(groups, group_id) when `node` slices one of `groups` equal channel groups of an image."""
    x = node.input(0)
    consts = [_const(v) for v in node.inputs[1:]]
    if x.shape is None or len(x.shape) != 4 or any(c is None for c in consts[:2]):
        return None
    starts, ends, axes = consts[0], consts[1], consts[2] if len(consts) > 2 and consts[2] is not None else None
    steps = consts[3] if len(consts) > 3 and consts[3] is not None else np.ones(1)
    if starts.size != 1 or (axes is not None and axes.size == 1 and int(axes[0]) % 4 != 1) or np.any(steps != 1):
        return None
    if axes is None:
        return None
    c = x.shape[1]
    start, end = int(starts[0]), min(int(ends[0]), c)
    width = end - start
    if width <= 0 or c % width or start % width:
        return None
    return c // width, start // width


@R.exports("Slice", check=lambda n: None if _channel_group(n) else "Darknet slices only equal channel groups")
def write_slice(w, node):
    groups, group = _channel_group(node)
    w.layer("route", {"layers": w.ref(node.input(0)), "groups": groups, "group_id": group}, node,
            reads=None)


@R.exports("Resize", check=lambda n: None if repeat_factor(n) else "Darknet upsamples by repeating pixels, an integer "
           "factor on both axes")
def write_resize(w, node):
    w.layer("upsample", {"stride": repeat_factor(node)}, node)


@R.exports("Dense", check=lambda n: None if len(n.input(0).shape or ()) == 2 and _const(n.input(1)) is not None
           and (n.input(2) is None or _const(n.input(2)) is not None) else "a product of a computed matrix")
def write_dense(w, node):
    matrix = _const(node.input(1))
    bias = _const(node.input(2))
    w.layer("connected", {"output": matrix.shape[1], "activation": "linear"}, node,
            {"biases": bias if bias is not None else np.zeros(matrix.shape[1], np.float32), "weights": matrix.T})


def _flattens(node) -> bool:
    """The node only flattens an image (C, H, W) into a vector, which Darknet's buffers already are."""
    x, y = node.input(0).shape, node.outputs[0].shape
    return x is not None and y is not None and len(y) == 2 and y[0] == x[0] and \
        all(isinstance(d, int) for d in x[1:]) and y[1] == int(np.prod(x[1:]))


def _check_reshape(node):
    if node.op == "Reshape" and head_nodes(node):
        return None
    return None if _flattens(node) else "Darknet reshapes only into a vector"


@R.exports("Flatten", "Reshape", check=_check_reshape)
def write_reshape(w, node):
    if node.op == "Reshape" and head_nodes(node):
        _write_head(w, node)
    else:
        w.alias(node.outputs[0], node.input(0))


def _check_softmax(node):
    shape = node.input(0).shape or ()
    if len(shape) == 2 and node.attrs.get("axis", -1) % 2 == 1:
        return None
    if len(shape) == 4 and shape[2:] == (1, 1) and node.attrs.get("axis", -1) % 4 == 1:
        return None
    return "Darknet's softmax runs over a whole vector"


@R.exports("Softmax", check=_check_softmax)
def write_softmax(w, node):
    w.layer("softmax", {"groups": 1}, node)


@R.exports("Identity", "Dropout")
def write_identity(w, node):
    w.alias(node.outputs[0], node.input(0))


def inner_nodes(node) -> list:
    """The nodes a section written for `node` computes too (a detector head's, a shortcut's sample, an
    activation's arithmetic)."""
    if node.op in ("Where", "Reshape"):
        head = head_nodes(node)
        return head[1] if head else []
    composite = composite_activation(node)
    if composite:
        return composite[1]
    found = shortcut_operands(node)
    return found[2] if found else []


def _yolo_by_mask(node):
    """A [yolo] head read from another format: Where(mask, Sigmoid(x), x) whose mask picks each anchor's x, y,
    objectness and classes. Its anchors are not in the graph, so the section written has none (Darknet's
    default boxes): the tensor it outputs is the same, decoding it needs the anchors the model was trained with."""
    if node.op != "Where" or node.input(0) is None or node.input(0).const is None:
        return None
    mask = np.asarray(node.input(0).const)
    if mask.ndim != 4 or mask.shape[0] != 1 or mask.shape[2:] != (1, 1):
        return None
    c = mask.shape[1]
    for entries in range(6, c + 1):
        if c % entries == 0 and np.array_equal(mask, _channel_mask(c, entries, [0, 1, *range(4, entries)])):
            n = c // entries
            return {"kind": "yolo", "options": {"mask": ",".join(map(str, range(n))), "classes": entries - 5,
                                                "num": n}}
    return None


def head_nodes(node):
    """(input, inner nodes, section) of the detector head that `node` ends, when the nodes between them still compute it
    (run on a random image and compared with Darknet's formula); None otherwise."""
    from tensorbridge.reference.interpreter import run_node

    mark = node.meta.get("darknet_head") or _yolo_by_mask(node)
    if mark is None:
        return None
    source = node.meta.get("source_name") if "darknet_head" in node.meta else None
    inside, stack, inputs = [], [node], set()
    while stack:
        n = stack.pop()
        if n in inside:
            continue
        inside.append(n)
        for v in n.inputs:
            if v is None or v.const is not None:
                continue
            ours = v.producer is not None and (v.producer.meta.get("source_name") == source if source else
                                               v.producer.op == "Sigmoid" and n is node)
            if ours and all(r in inside or r is v.producer or (source and r.meta.get("source_name") == source)
                            for r, _ in v.uses()):
                stack.append(v.producer)
            else:
                inputs.add(v)
    if len(inputs) != 1:
        return None
    x = inputs.pop()
    if x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape):
        return None
    probe = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32) * 4
    values = {id(x): probe}
    order = [n for n in node.graph.nodes if n in inside]
    try:
        for n in order:
            args = [None if v is None else v.const if v.const is not None else values[id(v)] for v in n.inputs]
            for v, out in zip(n.outputs, run_node(n, args)):
                values[id(v)] = out
        expected = head_output(mark["kind"], mark["options"], probe)
    except (KeyError, ValueError, IndexError):
        return None
    got = values[id(node.outputs[0])]
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
        return None
    return x, [n for n in order if n is not node], mark


def _write_head(w, node):
    x, _, mark = head_nodes(node)
    w.layer(mark["kind"], dict(mark["options"]), node, reads=x)


R.add_export(("Where",), _write_head, check=lambda n: None if head_nodes(n) else
             "Darknet selects elements only in a detector head ([yolo], [region])")
