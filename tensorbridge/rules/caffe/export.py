"""IR ops written as Caffe 1.0 layers (BVLC; the layers of forks are not written, since Caffe 1.0 cannot load
them).

Export rules take (writer, node) and add layers through the writer (backends/caffe/writer.py), which names
blobs after IR values. Every pooling written is first proven equal to Caffe's own (rounded-up sizes, its
average-pool border rule) on a probe, with the zero padding before it when the IR states Caffe's average that
way (as the frontend reads it).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ops.patterns import constant as _const
from tensorbridge.rules.caffe.base import R
from tensorbridge.rules.caffe.layers import AVE, MAX, pool_reference, pooled_size
from tensorbridge.rules.probes import repeat_factor


def _image(v) -> bool:
    return v is not None and v.shape is not None and len(v.shape) == 4 and all(isinstance(d, int) for d in v.shape)


def _hw(name: str, values, repeated: bool = True) -> dict:
    """Caffe's option for an (h, w) pair: `name` when both are equal (a list in ConvolutionParameter, one value in
    PoolingParameter), else `<stem>_h` and `<stem>_w` (kernel_size's stem is kernel)."""
    h, w = (int(v) for v in values)
    if h == w:
        return {name: [h] if repeated else h}
    stem = "kernel" if name == "kernel_size" else name
    return {f"{stem}_h": h, f"{stem}_w": w}


# -- convolutions -------------------------------------------------------------------------------------------
def _check_conv(node):
    if not _image(node.input(0)) or _const(node.input(1)) is None or \
            (node.input(2) is not None and _const(node.input(2)) is None):
        return "Caffe convolves images (N, C, H, W) with constant weights"
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return "padding given as auto_pad"
    pads = node.attrs.get("pads") or [0] * 4
    if pads[:2] != pads[2:]:
        return f"padding {pads}: Caffe pads both sides of an axis equally"
    if node.op == "ConvTranspose" and (any(node.attrs.get("output_padding") or []) or node.attrs.get("output_shape")):
        return "a transposed convolution with output_padding or output_shape"
    return None


@R.exports("Conv", "ConvTranspose", check=_check_conv)
def write_conv(w, node):
    weight, bias = _const(node.input(1)), _const(node.input(2))
    group = node.attrs.get("group", 1)
    kernel = list(weight.shape[2:])
    outputs = weight.shape[1] * group if node.op == "ConvTranspose" else weight.shape[0]
    dilations = node.attrs.get("dilations") or [1, 1]
    params = {"num_output": outputs, "bias_term": bias is not None, "group": group,
              **_hw("kernel_size", kernel), **_hw("stride", node.attrs.get("strides") or [1, 1]),
              **_hw("pad", (node.attrs.get("pads") or [0] * 4)[:2]),
              "dilation": dilations if dilations[0] != dilations[1] else [dilations[0]]}
    w.layer("Deconvolution" if node.op == "ConvTranspose" else "Convolution", node, [node.input(0)],
            {"convolution_param": params}, [weight] + ([bias] if bias is not None else []))


# -- pooling ------------------------------------------------------------------------------------------------
def _prefix(node):
    """The nodes the frontend puts before a pooling to state Caffe's (a zero Pad before an average, then a Slice
    dropping rows no window reads), each read only by the next: (those nodes in order, the image before them)."""
    chain, x = [], node.input(0)
    for op, fits in (("Slice", _from_origin), ("Pad", _zero_border)):
        n = x.producer
        if n is not None and n.op == op and len(x.uses()) == 1 and fits(n):
            chain.insert(0, n)
            x = n.input(0)
    return chain, x


def _zero_border(pad) -> bool:
    """A Pad adding zeros equally before and after each spatial axis of an image."""
    amounts, value = _const(pad.input(1)), pad.input(2) if len(pad.inputs) > 2 else None
    return pad.attrs.get("mode", "constant") == "constant" and amounts is not None and amounts.size == 8 and \
        not np.any(amounts[[0, 1, 4, 5]]) and amounts[2] == amounts[6] and amounts[3] == amounts[7] and \
        (value is None or not np.any(_const(value))) and (len(pad.inputs) < 4 or pad.input(3) is None)


def _from_origin(sl) -> bool:
    """A Slice keeping the first rows and columns of an image (starts 0, steps 1, spatial axes)."""
    consts = [_const(v) for v in sl.inputs[1:]]
    return len(consts) >= 3 and all(c is not None for c in consts[:3]) and not np.any(consts[0]) and \
        sorted(int(a) % 4 for a in consts[2].reshape(-1)) in ([2], [3], [2, 3]) and \
        (len(consts) < 4 or consts[3] is None or np.all(consts[3] == 1))


def pooling_params(node):
    """(method, kernel, stride, pad, source, crop) of the Caffe pooling that computes `node` with the nodes
    `_prefix` finds before it, proven on a probe; `crop` is the output size when it is smaller than Caffe's (the
    extra row or column is sliced off after). None when Caffe's pooling computes something else."""
    chain, source = _prefix(node)
    if not _image(source) or not _image(node.outputs[0]) or any(d != 1 for d in node.attrs.get("dilations") or []):
        return None
    k = list(node.attrs["kernel_shape"])
    s = list(node.attrs.get("strides") or [1, 1])
    pads = list(node.attrs.get("pads") or [0] * 4)
    padding = [n for n in chain if n.op == "Pad"]
    if padding and any(pads[:2]):
        return None
    p = [int(a) for a in _const(padding[0].input(1))[2:4]] if padding else pads[:2]
    method = MAX if node.op == "MaxPool" else AVE
    shape = source.shape
    caffe_size = pooled_size(shape[2:], k, s, p)
    size = list(node.outputs[0].shape[2:])
    if any(c < n or c > n + 1 for c, n in zip(caffe_size, size)) or any(pp >= kk for pp, kk in zip(p, k)):
        return None
    from tensorbridge.reference.interpreter import run_node

    probe = np.random.default_rng(0).standard_normal((1, 2, *shape[2:])).astype(np.float32)
    x = probe
    try:
        for n in [*chain, node]:
            x = run_node(n, [x, *(_const(v) for v in n.inputs[1:])])[0]
    except Exception:  # noqa: BLE001 - a pooling the probe cannot run is not Caffe's
        return None
    want = pool_reference(probe.astype(np.float64), method, k, s, p)[:, :, :size[0], :size[1]]
    if x.shape != want.shape or not np.allclose(x, want, rtol=1e-5, atol=1e-6):
        return None
    return method, k, s, p, source, size if size != caffe_size else None


def _check_pool(node):
    return None if pooling_params(node) else ("a pooling other than Caffe's (its output size is rounded up; its "
                                              "average divides by the window inside the padded image)")


@R.exports("MaxPool", "AveragePool", check=_check_pool)
def write_pool(w, node):
    """A Pooling layer; when the IR rounds the output size down where Caffe rounds up, the extra last row or
    column Caffe computes is sliced off."""
    method, k, s, p, source, crop = pooling_params(node)
    pooled = w.spare(node, "pooled") if crop else None
    w.layer("Pooling", node, [source], {"pooling_param": {
        "pool": "MAX" if method == MAX else "AVE", **_hw("kernel_size", k, False), **_hw("stride", s, False),
        **_hw("pad", p, False)}}, tops=[pooled] if crop else None)
    if crop:
        full = pooled_size(source.shape[2:], k, s, p)
        axes = [axis for axis, (c, n) in zip((2, 3), zip(full, crop)) if c != n]
        for axis in axes:
            last = axis == axes[-1]
            top = node.outputs[0] if last else w.spare(node, f"rows{axis}")
            w.layer("Slice", node, [pooled], {"slice_param": {"axis": axis, "slice_point": [crop[axis - 2]]}},
                    tops=[top, w.spare(node, f"extra{axis}")], name=f"{node.name}.crop{axis}")
            pooled = top


def _check_global(node):
    if not _image(node.input(0)):
        return "Caffe pools images (N, C, H, W)"
    if node.op in ("ReduceMean", "ReduceMax"):
        axes = _const(node.input(1)) if node.input(1) is not None else node.attrs.get("axes")
        if axes is None or sorted(int(a) % 4 for a in np.ravel(axes)) != [2, 3] or not node.attrs.get("keepdims", 1):
            return "Caffe pools over the whole image, keeping its dimensions"
    return None


@R.exports("GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceMax", check=_check_global)
def write_global_pool(w, node):
    method = "MAX" if "Max" in node.op else "AVE"
    w.layer("Pooling", node, [node.input(0)], {"pooling_param": {"pool": method, "global_pooling": True}})


# -- products and normalisation -----------------------------------------------------------------------------
def _matrix(node):
    """(weights (outputs, inputs), bias or None) of a product of a 2-D input with a constant matrix."""
    x = node.input(0)
    if x.shape is None or len(x.shape) != 2:
        return None
    if node.op == "Dense":
        matrix, bias = _const(node.input(1)), _const(node.input(2))
        return None if matrix is None or (node.input(2) is not None and bias is None) else (matrix.T, bias)
    if node.op == "MatMul":
        matrix = _const(node.input(1))
        return None if matrix is None or matrix.ndim != 2 else (matrix.T, None)
    a, b = node.attrs.get("alpha", 1.0), node.attrs.get("beta", 1.0)
    matrix, c = _const(node.input(1)), _const(node.input(2)) if len(node.inputs) > 2 else None
    if matrix is None or node.attrs.get("transA", 0) or a != 1 or (c is not None and (b != 1 or c.ndim > 1)) or \
            (len(node.inputs) > 2 and node.input(2) is not None and c is None):
        return None
    weights = matrix if node.attrs.get("transB", 0) else matrix.T
    bias = None if c is None else np.broadcast_to(c, (weights.shape[0],)).astype(np.float32)
    return weights, bias


@R.exports("Dense", "MatMul", "Gemm", check=lambda n: None if _matrix(n) else
           "Caffe's InnerProduct multiplies a (N, K) input by a constant matrix")
def write_inner_product(w, node):
    weights, bias = _matrix(node)
    transpose = bool(node.meta.get("caffe_transpose"))  # (inputs, outputs), as a model read from Caffe stored it
    w.layer("InnerProduct", node, [node.input(0)], {"inner_product_param": {
        "num_output": weights.shape[0], "bias_term": bias is not None, "transpose": transpose}},
        [np.ascontiguousarray(weights.T if transpose else weights, np.float32)] + ([bias] if bias is not None else []))


def _check_bn(node):
    if node.attrs.get("training_mode", 0) or any(_const(v) is None for v in node.inputs[1:5]):
        return "Caffe normalises with constant statistics only"
    if len(node.input(0).shape or ()) not in (2, 4):
        return "Caffe's BatchNorm normalises (N, C) or (N, C, H, W)"
    return None


@R.exports("BatchNormalization", check=_check_bn)
def write_bn(w, node):
    """BatchNorm and, unless it is the identity, the Scale layer of its affine part, in place, as Caffe's own nets
    write it. A model read from Caffe gets back the scale factor its statistics were stored with, when dividing
    by it again gives the same float32 values."""
    gamma, beta, mean, var = (_const(node.input(i)) for i in range(1, 5))
    eps = float(node.attrs.get("epsilon", 1e-5))
    w.layer("BatchNorm", node, [node.input(0)], {"batch_norm_param": {"eps": eps}}, _stored_statistics(node, mean, var))
    affine = node.meta.get("caffe_affine")
    if affine or np.any(gamma != 1) or np.any(beta != 0):
        bias = affine is not None or bool(np.any(beta != 0))
        w.layer("Scale", node, [node.outputs[0]], {"scale_param": {"bias_term": bias}},
                [gamma] + ([beta] if bias else []), name=affine or f"{node.name}/scale")


def _stored_statistics(node, mean, var) -> list[np.ndarray]:
    factor = node.meta.get("caffe_scale_factor") or 1.0
    if factor != 1.0:
        scaled = [(a.astype(np.float64) * factor).astype(np.float32) for a in (mean, var)]
        inverse = np.float32(1.0 / factor)
        if all(np.array_equal(s * inverse, a) for s, a in zip(scaled, (mean, var))):
            return [*scaled, np.float32([factor])]
    return [mean, var, np.ones(1, np.float32)]


def _channel_vector(node, v) -> np.ndarray | None:
    """A constant that holds one value per channel of the other operand (broadcast from axis 1), flattened."""
    other = next(u for u in node.inputs if u is not v)
    c = _const(v)
    if c is None or other.shape is None or len(other.shape) < 2 or c.ndim > len(other.shape):
        return None
    shape = (1,) * (len(other.shape) - c.ndim) + c.shape
    channels = other.shape[1]
    if shape[0] != 1 or shape[1] not in (1, channels) or any(d != 1 for d in shape[2:]):
        return None
    return np.broadcast_to(c.reshape(-1), (channels,)).astype(np.float32)


def _scalar(v) -> float | None:
    c = _const(v)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 else None


def _arith(node):
    """How Caffe writes an Add/Sub/Mul/Div/Max/Pow: ("eltwise", op, coeffs) for two computed operands of one
    shape; ("power", scale, shift, power) for a scalar constant; ("scale"/"bias", vector) per channel."""
    a, b = node.inputs[0], node.inputs[1]
    if a.const is None and b.const is None:
        if a.shape != b.shape or a.shape is None or node.op in ("Div", "Pow"):
            return None
        op = {"Add": "SUM", "Sub": "SUM", "Mul": "PROD", "Max": "MAX"}.get(node.op)
        return op and ("eltwise", op, [1.0, -1.0] if node.op == "Sub" else [])
    computed, const = (a, b) if b.const is not None else (b, a)
    if node.op in ("Sub", "Div", "Pow") and const is a:
        return None
    k = _scalar(const)
    if k is not None and np.broadcast_shapes(np.shape(const.const), computed.shape or ()) == tuple(computed.shape):
        return {"Add": ("power", 1.0, k, 1.0), "Sub": ("power", 1.0, -k, 1.0), "Mul": ("power", k, 0.0, 1.0),
                "Div": ("power", 1.0 / k if k else None, 0.0, 1.0), "Pow": ("power", 1.0, 0.0, k)}.get(node.op)
    vector = _channel_vector(node, const)
    if vector is not None and node.op in ("Mul", "Add"):
        return ("scale" if node.op == "Mul" else "bias", vector)
    return None


def _check_arith(node):
    if node.op == "Sum":
        shapes = {tuple(v.shape or ()) for v in node.inputs}
        return None if len(shapes) == 1 and all(v.const is None for v in node.inputs) else \
            "Caffe adds layers of one shape"
    how = _arith(node)
    if how and not (how[0] == "power" and how[1] is None):
        return None
    return "Caffe computes arithmetic between layers of one shape, with a scalar, or with one value per channel"


@R.exports("Add", "Sub", "Mul", "Div", "Max", "Pow", "Sum", check=_check_arith)
def write_arith(w, node):
    if node.op == "Sum":
        w.layer("Eltwise", node, list(node.inputs), {"eltwise_param": {"operation": "SUM"}})
        return
    how = _arith(node)
    computed = next(v for v in node.inputs if v.const is None)
    if how[0] == "eltwise":
        w.layer("Eltwise", node, list(node.inputs), {"eltwise_param": {"operation": how[1], "coeff": how[2]}})
    elif how[0] == "power":
        w.layer("Power", node, [computed], {"power_param": {"scale": how[1], "shift": how[2], "power": how[3]}})
    elif how[0] == "bias" and scale_before(node) is not None:  # one Scale layer with its bias
        scaling = scale_before(node)
        source = next(v for v in scaling.inputs if v.const is None)
        w.layer("Scale", node, [source], {"scale_param": {"bias_term": True}}, [_arith(scaling)[1], how[1]])
    else:
        kind = "Scale" if how[0] == "scale" else "Bias"
        params = {"scale_param": {"bias_term": False}} if kind == "Scale" else {}
        w.layer(kind, node, [computed], params, [how[1]])


def scale_before(node):
    """The per-channel Mul before a per-channel Add that only it reads: with the Add, a Scale with bias_term."""
    if node.op != "Add":
        return None
    computed = next((v for v in node.inputs if v.const is None), None)
    src = computed.producer if computed is not None else None
    if src is None or src.op != "Mul" or len(computed.uses()) != 1 or computed in node.graph.outputs:
        return None
    how = _arith(src)
    return src if how is not None and how[0] == "scale" else None


@R.exports("Sqrt")
def write_sqrt(w, node):
    w.layer("Power", node, [node.input(0)], {"power_param": {"power": 0.5}})


@R.exports("Neg")
def write_neg(w, node):
    w.layer("Power", node, [node.input(0)], {"power_param": {"scale": -1.0}})


def _check_lrn(node):
    return None if node.attrs.get("size", 1) % 2 == 1 and _image(node.input(0)) else \
        "Caffe's LRN takes an odd window over the channels of an image"


@R.exports("LRN", check=_check_lrn)
def write_lrn(w, node):
    w.layer("LRN", node, [node.input(0)], {"lrn_param": {
        "local_size": node.attrs["size"], "alpha": float(node.attrs.get("alpha", 1e-4)),
        "beta": float(node.attrs.get("beta", 0.75)), "k": float(node.attrs.get("bias", 1.0))}})


# -- activations --------------------------------------------------------------------------------------------
_SIMPLE = {"Relu": "ReLU", "Sigmoid": "Sigmoid", "Tanh": "TanH", "Abs": "AbsVal", "Softplus": "BNLL", "Exp": "Exp",
           "Log": "Log"}


@R.exports(*_SIMPLE)
def write_simple(w, node):
    w.layer(_SIMPLE[node.op], node, [node.input(0)], {})


def _bounds(node):
    """(low, high) of a Clip with constant bounds (None where it has none), or None."""
    values = []
    for i in (1, 2):
        v = node.input(i) if len(node.inputs) > i else None
        if v is not None and _scalar(v) is None:
            return None
        values.append(None if v is None else _scalar(v))
    low, high = values
    return (None if low is not None and np.isneginf(low) else low, None if high is not None and np.isposinf(high)
            else high)


@R.exports("Clip", check=lambda n: None if _bounds(n) is not None else "a Clip with computed bounds")
def write_clip(w, node):
    """Caffe 1.0 has no clipping layer: max(x, low) = low + relu(x - low) (a ReLU alone when low is 0), then
    min(y, high) = y - relu(y - high). Equal to Clip within one rounding of `high` (exact where nothing is cut)."""
    low, high = _bounds(node)
    x, name = node.input(0), node.name
    steps = []
    if low == 0:
        steps.append(("ReLU", {}))
    elif low is not None:
        steps += [("Power", {"power_param": {"shift": -low}}), ("ReLU", {}), ("Power", {"power_param": {"shift": low}})]
    for i, (kind, params) in enumerate(steps):
        top = node.outputs[0] if high is None and i == len(steps) - 1 else w.spare(node, f"low{i}")
        w.layer(kind, node, [x], params, tops=[top], name=f"{name}.low{i}")
        x = top
    if high is None:
        if not steps:
            w.alias(node.outputs[0], x)
        return
    over = w.spare(node, "over")
    w.layer("Power", node, [x], {"power_param": {"shift": -high}}, tops=[over], name=f"{name}.over")
    w.layer("ReLU", node, [over], {}, tops=[over], name=f"{name}.excess")
    w.layer("Eltwise", node, [x, over], {"eltwise_param": {"operation": "SUM", "coeff": [1.0, -1.0]}})


@R.exports("LeakyRelu")
def write_leaky(w, node):
    w.layer("ReLU", node, [node.input(0)], {"relu_param": {"negative_slope": float(node.attrs.get("alpha", 0.01))}})


@R.exports("Elu")
def write_elu(w, node):
    w.layer("ELU", node, [node.input(0)], {"elu_param": {"alpha": float(node.attrs.get("alpha", 1.0))}})


def _prelu_slopes(node):
    slope, x = _const(node.input(1)), node.input(0)
    if slope is None or x.shape is None or len(x.shape) < 2:
        return None
    if slope.size == 1:
        return np.float32(slope.reshape(()))
    return _channel_vector(node, node.input(1))


@R.exports("PRelu", check=lambda n: None if _prelu_slopes(n) is not None else
           "Caffe's PReLU has one slope, or one per channel")
def write_prelu(w, node):
    slopes = _prelu_slopes(node)
    shared = np.ndim(slopes) == 0
    w.layer("PReLU", node, [node.input(0)], {"prelu_param": {"channel_shared": shared}},
            [np.array(slopes, np.float32)])


# -- data movement ------------------------------------------------------------------------------------------
def _rank(v) -> int:
    return len(v.shape or ())


@R.exports("Concat")
def write_concat(w, node):
    w.layer("Concat", node, list(node.inputs), {"concat_param": {"axis": node.attrs["axis"] % _rank(node.outputs[0])}})


def _axis_of_softmax(node):
    return node.attrs.get("axis", -1) % _rank(node.input(0)) if _rank(node.input(0)) else None


@R.exports("Softmax", check=lambda n: None if _axis_of_softmax(n) is not None else "a softmax of a scalar")
def write_softmax(w, node):
    w.layer("Softmax", node, [node.input(0)], {"softmax_param": {"axis": _axis_of_softmax(node)}})


def _static(v) -> bool:
    return v.shape is not None and all(isinstance(d, int) for d in v.shape)


@R.exports("Flatten", "Reshape", "Squeeze", "Unsqueeze", check=lambda n: None if _static(n.outputs[0]) and
           _static(n.input(0)) else "Caffe reshapes to a known shape")
def write_reshape(w, node):
    x, y = node.input(0), node.outputs[0]
    if node.op == "Flatten" and node.attrs.get("axis", 1) == 1:
        w.layer("Flatten", node, [x], {})
    else:
        w.layer("Reshape", node, [x], {"reshape_param": {"shape": {"dim": list(y.shape)}}})


def _slice_parts(node):
    """[(axis, start, end)] of a Slice that takes one contiguous part of each axis it cuts (None otherwise)."""
    x = node.input(0)
    consts = [_const(v) for v in node.inputs[1:]]
    given = [v is not None for v in node.inputs[1:]]
    if not _static(x) or any(c is None for c, there in zip(consts, given) if there) or len(consts) < 2:
        return None
    starts, ends = consts[0].reshape(-1), consts[1].reshape(-1)
    axes = consts[2].reshape(-1) if len(consts) > 2 and consts[2] is not None else np.arange(starts.size)
    steps = consts[3].reshape(-1) if len(consts) > 3 and consts[3] is not None else np.ones(starts.size)
    if np.any(steps != 1):
        return None
    parts = []
    for start, end, axis in zip(starts, ends, axes):
        axis = int(axis) % len(x.shape)
        size = x.shape[axis]
        start, end = (int(np.clip(v + size if v < 0 else v, 0, size)) for v in (start, end))
        if start >= end:
            return None
        if (start, end) != (0, size):
            parts.append((axis, start, end))
    return parts or None


@R.exports("Slice", check=lambda n: None if _slice_parts(n) else "Caffe slices contiguous parts of axes")
def write_slice(w, node):
    """One Slice layer per axis cut, each keeping its middle part (the others are consumed by Silence)."""
    x, parts = node.input(0), _slice_parts(node)
    for i, (axis, start, end) in enumerate(parts):
        size = node.input(0).shape[axis]
        points = [p for p in (start, end) if 0 < p < size]
        last = i == len(parts) - 1
        middle = node.outputs[0] if last else w.spare(node, f"axis{axis}")
        tops = ([w.spare(node, f"before{axis}")] if start > 0 else []) + [middle] + \
            ([w.spare(node, f"after{axis}")] if end < size else [])
        w.layer("Slice", node, [x], {"slice_param": {"axis": axis, "slice_point": points}}, tops=tops,
                name=node.name if last else f"{node.name}.axis{axis}")
        x = middle


@R.exports("Tile", check=lambda n: None if _const(n.input(1)) is not None and
           int(np.sum(_const(n.input(1)) != 1)) <= 1 else "Caffe tiles along one axis")
def write_tile(w, node):
    repeats = _const(node.input(1)).reshape(-1)
    axis = int(np.argmax(repeats != 1)) if np.any(repeats != 1) else 0
    w.layer("Tile", node, [node.input(0)], {"tile_param": {"axis": axis, "tiles": int(repeats[axis])}})


@R.exports("Resize", check=lambda n: None if repeat_factor(n) else
           "Caffe 1.0 resizes only by repeating pixels an integer number of times")
def write_upsample(w, node):
    """Caffe 1.0 has no upsampling layer: a nearest-neighbour repeat is a per-channel Deconvolution with a kernel
    of ones, as wide as its stride."""
    factor, channels = repeat_factor(node), node.input(0).shape[1]
    w.layer("Deconvolution", node, [node.input(0)], {"convolution_param": {
        "num_output": channels, "group": channels, "kernel_size": [factor], "stride": [factor], "bias_term": False}},
        [np.ones((channels, 1, factor, factor), np.float32)])


def threshold_of(node) -> float | None:
    """The threshold t of Cast(Greater(x, t)) to float: Caffe's Threshold layer; None when the node is not one."""
    src = node.input(0).producer
    if node.op != "Cast" or node.attrs.get("to") != "float32" or src is None or src.op != "Greater" or \
            len(node.input(0).uses()) != 1 or src.input(0).const is not None:
        return None
    return _scalar(src.input(1))


@R.exports("Cast", check=lambda n: None if threshold_of(n) is not None else
           "Caffe casts only the comparison of its Threshold layer")
def write_threshold(w, node):
    x = node.input(0).producer.input(0)
    w.layer("Threshold", node, [x], {"threshold_param": {"threshold": threshold_of(node)}})


@R.exports("Identity", "Dropout")
def write_identity(w, node):
    w.alias(node.outputs[0], node.input(0))


R.refuses("Transpose", "Caffe 1.0 has no Permute layer (SSD's fork has; Caffe 1.0 cannot load it)")


def inner_nodes(g) -> set:
    """Nodes a layer written for another node computes too (what states Caffe's pooling around a pooling, the
    comparison of its Threshold, the product of a Scale with a bias)."""
    pads = {n for pool in g.nodes if pool.op in ("AveragePool", "MaxPool") and pooling_params(pool)
            for n in _prefix(pool)[0]}
    scales = {scale_before(n) for n in g.nodes if n.op == "Add"} - {None}
    return pads | scales | {n.input(0).producer for n in g.nodes if n.op == "Cast" and threshold_of(n) is not None}
