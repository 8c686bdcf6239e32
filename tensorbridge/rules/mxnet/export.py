"""IR ops written as MXNet 1.x symbol ops (the legacy `mx.sym` ops that Gluon's `export` writes).

Export rules take (writer, node) and add ops through the writer (backends/mxnet/writer.py): `w.op(name, node,
inputs, attrs)` with inputs as IR values (a constant becomes a parameter) and attributes as Python values
(written as MXNet's strings). Every pooling written is first proven equal to MXNet's own on a probe.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.shapes import is_static
from tensorbridge.ops.patterns import constant as _const
from tensorbridge.rules.core import two_inputs
from tensorbridge.rules.mxnet.base import R
from tensorbridge.rules.mxnet.nn import pool_reference, pooled_size
from tensorbridge.rules.probes import repeat_factor

ACTIVATION = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu", "Softsign": "softsign"}
UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative", "Reciprocal": "reciprocal",
         "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Sin": "sin", "Cos": "cos", "Sign": "sign"}
BROADCAST = {"Add": "broadcast_add", "Sub": "broadcast_sub", "Mul": "broadcast_mul", "Div": "broadcast_div",
             "Max": "broadcast_maximum", "Min": "broadcast_minimum", "Pow": "broadcast_power"}
SCALAR = {"Add": ("_plus_scalar", "_plus_scalar"), "Sub": ("_minus_scalar", "_rminus_scalar"),
          "Mul": ("_mul_scalar", "_mul_scalar"), "Div": ("_div_scalar", "_rdiv_scalar"),
          "Max": ("_maximum_scalar", "_maximum_scalar"), "Min": ("_minimum_scalar", "_minimum_scalar"),
          "Pow": ("_power_scalar", "_rpower_scalar")}
REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod"}
DTYPES = ("float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool")


def _known(v) -> bool:
    return v is not None and is_static(v.shape)


def _floats(node) -> bool:
    return all(v is None or v.dtype == np.float32 for v in [*node.inputs, *node.outputs])


# -- convolutions -------------------------------------------------------------------------------------------
def _check_conv(node):
    x = node.input(0)
    if not _known(x) or len(x.shape) not in (3, 4, 5) or _const(node.input(1)) is None or \
            (node.input(2) is not None and _const(node.input(2)) is None):
        return "MXNet convolves (N, C, spatial...) inputs of known shape with constant weights"
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return "padding given as auto_pad"
    pads = node.attrs.get("pads") or [0] * (2 * (len(x.shape) - 2))
    if pads[:len(pads) // 2] != pads[len(pads) // 2:]:
        return f"padding {pads}: MXNet pads both sides of an axis equally"
    if node.op == "ConvTranspose" and node.attrs.get("output_shape"):
        return "a transposed convolution with output_shape"
    return None


@R.exports("Conv", "ConvTranspose", check=_check_conv)
def write_conv(w, node):
    weight, bias = node.input(1), node.input(2)
    rank = len(node.input(0).shape) - 2
    group = node.attrs.get("group", 1)
    filters = _const(weight).shape[1] * group if node.op == "ConvTranspose" else _const(weight).shape[0]
    attrs = {"kernel": tuple(_const(weight).shape[2:]), "stride": tuple(node.attrs.get("strides") or [1] * rank),
             "dilate": tuple(node.attrs.get("dilations") or [1] * rank),
             "pad": tuple((node.attrs.get("pads") or [0] * 2 * rank)[:rank]), "num_filter": filters,
             "num_group": group, "no_bias": bias is None}
    if node.op == "ConvTranspose":
        attrs["adj"] = tuple(node.attrs.get("output_padding") or [0] * rank)
    w.op("Deconvolution" if node.op == "ConvTranspose" else "Convolution", node,
         [node.input(0), weight] + ([bias] if bias is not None else []), attrs)


# -- products -----------------------------------------------------------------------------------------------
def _check_dense(node):
    w, b = _const(node.input(1)), node.input(2)
    if w is None or w.ndim != 2 or (b is not None and _const(b) is None) or len(node.input(0).shape or ()) < 2:
        return "MXNet's FullyConnected multiplies by a constant matrix"
    return None


@R.exports("Dense", check=_check_dense)
def write_dense(w, node):
    matrix, bias = _const(node.input(1)), node.input(2)
    w.op("FullyConnected", node, [node.input(0), w.param(node, "weight", np.ascontiguousarray(matrix.T))]
         + ([bias] if bias is not None else []),
         {"num_hidden": matrix.shape[1], "no_bias": bias is None, "flatten": False})


def _check_matmul(node):
    a, b = node.input(0), node.input(1)
    ra, rb = len(a.shape or ()), len(b.shape or ())
    if _const(b) is not None and rb == 2 and ra >= 2:
        return None
    if ra == rb == 2 or (ra == rb >= 3 and a.shape[:-2] == b.shape[:-2]):
        return None
    return "MXNet multiplies matrices, batches of matrices of one batch size, or a tensor by a constant matrix"


@R.exports("MatMul", check=_check_matmul)
def write_matmul(w, node):
    a, b = node.input(0), node.input(1)
    if _const(b) is not None and len(b.shape) == 2:
        matrix = _const(b)
        w.op("FullyConnected", node, [a, w.param(node, "weight", np.ascontiguousarray(matrix.T))],
             {"num_hidden": matrix.shape[1], "no_bias": True, "flatten": False})
    else:
        w.op("dot" if len(a.shape) == 2 else "batch_dot", node, [a, b], {})


# -- normalisation ------------------------------------------------------------------------------------------
def _check_bn(node):
    if node.attrs.get("training_mode", 0) or any(_const(v) is None for v in node.inputs[1:5]):
        return "MXNet normalises with constant statistics at inference"
    if len(node.input(0).shape or ()) < 2:
        return "MXNet's BatchNorm normalises along axis 1 of an (N, C, ...) input"
    return None


@R.exports("BatchNormalization", check=_check_bn)
def write_bn(w, node):
    x, gamma, beta, mean, var = node.inputs[:5]
    w.op("BatchNorm", node, [x, gamma, beta, w.aux(mean), w.aux(var)],
         {"eps": float(node.attrs.get("epsilon", 1e-5)), "fix_gamma": False, "use_global_stats": True, "axis": 1})


def _check_ln(node):
    if node.attrs.get("axis", -1) % len(node.input(0).shape or (1,)) != len(node.input(0).shape or (1,)) - 1:
        return "MXNet's LayerNorm normalises over one axis (written for the last)"
    if _const(node.input(1)) is None or (node.input(2) is not None and _const(node.input(2)) is None):
        return "MXNet's LayerNorm takes constant gamma and beta"
    return None


@R.exports("LayerNormalization", check=_check_ln)
def write_ln(w, node):
    gamma = node.input(1)
    beta = node.input(2) if node.input(2) is not None else w.param(node, "beta", np.zeros_like(_const(gamma)))
    w.op("LayerNorm", node, [node.input(0), gamma, beta],
         {"axis": -1, "eps": float(node.attrs.get("epsilon", 1e-5))}, outputs=node.outputs[:1])


@R.exports("InstanceNormalization", check=lambda n: None if all(_const(v) is not None for v in n.inputs[1:3])
           else "MXNet's InstanceNorm takes constant gamma and beta")
def write_instance_norm(w, node):
    w.op("InstanceNorm", node, node.inputs[:3], {"eps": float(node.attrs.get("epsilon", 1e-5))})


@R.exports("LRN", check=lambda n: None if len(n.input(0).shape or ()) == 4 else "MXNet's LRN normalises images")
def write_lrn(w, node):
    a = node.attrs
    w.op("LRN", node, [node.input(0)], {"nsize": a["size"], "alpha": float(a.get("alpha", 1e-4)),
                                        "beta": float(a.get("beta", 0.75)), "knorm": float(a.get("bias", 1.0))})


# -- pooling ------------------------------------------------------------------------------------------------
def pooling_params(node):
    """(pool_type, kernel, stride, pad, convention, count_include_pad) of the MXNet Pooling that computes this 2-D
    pooling, proven on a probe; None when MXNet's pooling computes something else."""
    x, y = node.input(0), node.outputs[0]
    if not _known(x) or not _known(y) or len(x.shape) != 4 or any(d != 1 for d in node.attrs.get("dilations") or []):
        return None
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return None
    k = list(node.attrs["kernel_shape"])
    s = list(node.attrs.get("strides") or [1, 1])
    pads = list(node.attrs.get("pads") or [0] * 4)
    p = pads[:2]
    size = list(y.shape[2:])
    kind = "max" if node.op == "MaxPool" else "avg"
    include = bool(node.attrs.get("count_include_pad", 0))
    for convention in ("valid", "full"):
        if pooled_size(x.shape[2:], k, s, p, convention == "full") != size or any(pp >= kk for pp, kk in zip(p, k)):
            continue
        from tensorbridge.reference.interpreter import run_node

        probe = np.random.default_rng(0).standard_normal((1, 2, *x.shape[2:])).astype(np.float32)
        for count_include_pad in ((include, not include) if kind == "avg" else (True,)):
            want = pool_reference(probe.astype(np.float64), kind, k, s, p, convention == "full", count_include_pad)
            try:
                got = run_node(node, [probe])[0]
            except Exception:  # noqa: BLE001 - a pooling the probe cannot run is not MXNet's
                return None
            if got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6):
                return kind, k, s, p, convention, count_include_pad
    return None


@R.exports("MaxPool", "AveragePool", check=lambda n: None if len(n.outputs) == 1 and pooling_params(n) else
           "a pooling other than MXNet's (symmetric padding; output size rounded down or up)")
def write_pool(w, node):
    kind, k, s, p, convention, include = pooling_params(node)
    attrs = {"pool_type": kind, "kernel": tuple(k), "stride": tuple(s), "pad": tuple(p),
             "pooling_convention": convention, "global_pool": False}
    if kind == "avg":
        attrs["count_include_pad"] = include
    w.op("Pooling", node, [node.input(0)], attrs)


@R.exports("GlobalAveragePool", "GlobalMaxPool",
           check=lambda n: None if len(n.input(0).shape or ()) in (3, 4, 5) else "MXNet pools (N, C, spatial...)")
def write_global_pool(w, node):
    rank = len(node.input(0).shape) - 2
    w.op("Pooling", node, [node.input(0)], {"pool_type": "max" if "Max" in node.op else "avg", "global_pool": True,
                                            "kernel": (1,) * rank})


def _axes(node):
    axes = _const(node.input(1)) if len(node.inputs) > 1 and node.input(1) is not None else node.attrs.get("axes")
    return None if axes is None else [int(a) for a in np.ravel(axes)]


@R.exports(*REDUCE, check=lambda n: None if _axes(n) is not None or not (len(n.inputs) > 1 and n.input(1) is not None)
           else "axes computed at run time")
def write_reduce(w, node):
    axes = _axes(node)
    rank = len(node.input(0).shape or ())
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            w.op("_copy", node, [node.input(0)], {})
            return
        axes = list(range(rank))
    w.op(REDUCE[node.op], node, [node.input(0)], {"axis": tuple(axes), "keepdims": bool(node.attrs.get("keepdims", 1))})


# -- activations and arithmetic -----------------------------------------------------------------------------
@R.exports(*ACTIVATION, check=lambda n: None if _floats(n) else "MXNet's Activation is written for float32")
def write_activation(w, node):
    w.op("Activation", node, [node.input(0)], {"act_type": ACTIVATION[node.op]})


@R.exports(*UNARY)
def write_unary(w, node):
    w.op(UNARY[node.op], node, [node.input(0)], {})


@R.exports("LeakyRelu", "Elu", "Gelu", "Selu", check=lambda n: None if (
        n.op != "Gelu" or n.attrs.get("approximate", "none") == "none") and (
        n.op != "Selu" or (abs(n.attrs.get("alpha", 1.67326319217681884765625) - 1.6732632) < 1e-6
                           and abs(n.attrs.get("gamma", 1.05070102214813232421875) - 1.0507010) < 1e-6))
        else "MXNet's GELU is the exact (erf) one; its SELU has the standard constants")
def write_leaky(w, node):
    kind = {"LeakyRelu": "leaky", "Elu": "elu", "Gelu": "gelu", "Selu": "selu"}[node.op]
    attrs = {"act_type": kind}
    if node.op in ("LeakyRelu", "Elu"):
        attrs["slope"] = float(node.attrs.get("alpha", 0.01 if node.op == "LeakyRelu" else 1.0))
    w.op("LeakyReLU", node, [node.input(0)], attrs)


def _prelu_slopes(node) -> np.ndarray | None:
    """The slopes as MXNet's prelu takes them: one, or one per channel (axis 1)."""
    x, c = node.input(0), _const(node.input(1))
    if c is None or x.shape is None or len(x.shape) < 2:
        return None
    if c.size == 1:
        return c.reshape(1).astype(np.float32)
    shape = (1,) * (len(x.shape) - c.ndim) + c.shape
    if shape[1] != x.shape[1] or shape[0] != 1 or any(d != 1 for d in shape[2:]):
        return None
    return c.reshape(-1).astype(np.float32)


@R.exports("PRelu", check=lambda n: None if _prelu_slopes(n) is not None else
           "MXNet's prelu takes one slope or one per channel")
def write_prelu(w, node):
    w.op("LeakyReLU", node, [node.input(0), w.param(node, "gamma", _prelu_slopes(node))], {"act_type": "prelu"})


@R.exports("HardSigmoid")
def write_hard_sigmoid(w, node):
    w.op("hard_sigmoid", node, [node.input(0)], {"alpha": float(node.attrs.get("alpha", 0.2)),
                                                 "beta": float(node.attrs.get("beta", 0.5))})


def _scalar(v) -> float | None:
    c = _const(v)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 and c.dtype.kind == "f" else None


@R.exports(*BROADCAST, check=two_inputs)
def write_binary(w, node):
    a, b = node.input(0), node.input(1)
    for side, (value, other) in enumerate(((b, a), (a, b))):
        number = _scalar(value)
        if number is not None and other.shape is not None and node.outputs[0].shape == other.shape:
            w.op(SCALAR[node.op][side], node, [other], {"scalar": number})
            return
    w.op(BROADCAST[node.op], node, [a, b], {})


@R.exports("Sum")
def write_sum(w, node):
    w.op("add_n", node, list(node.inputs), {"num_args": len(node.inputs)})


def _clip_bounds(node):
    def number(v):
        c = _const(v)
        return float(c.reshape(-1)[0]) if c is not None and c.size == 1 else None

    bounds = [number(node.input(i)) if len(node.inputs) > i and node.input(i) is not None else d
              for i, d in ((1, -np.inf), (2, np.inf))]
    return None if any(b is None for b in bounds) else bounds


@R.exports("Clip", check=lambda n: None if _clip_bounds(n) is not None else "MXNet clips to constant bounds")
def write_clip(w, node):
    low, high = _clip_bounds(node)
    w.op("clip", node, [node.input(0)], {"a_min": low, "a_max": high})


@R.exports("Softmax", "LogSoftmax")
def write_softmax(w, node):
    w.op("softmax" if node.op == "Softmax" else "log_softmax", node, [node.input(0)],
         {"axis": node.attrs.get("axis", -1)})


@R.exports("Cast", check=lambda n: None if str(np.dtype(n.attrs["to"])) in DTYPES else f"MXNet has no {n.attrs['to']}")
def write_cast(w, node):
    w.op("Cast", node, [node.input(0)], {"dtype": str(np.dtype(node.attrs["to"]))})


@R.exports("Identity", "Dropout")
def write_identity(w, node):
    w.op("_copy", node, [node.input(0)], {}, outputs=node.outputs[:1])


# -- data movement ------------------------------------------------------------------------------------------
def _static_output(node):
    return None if _known(node.outputs[0]) else "its output shape is not known when writing"


@R.exports("Reshape", "Flatten", "Squeeze", "Unsqueeze", check=_static_output)
def write_reshape(w, node):
    """MXNet's own op where it says the same (Flatten to (N, rest), one new axis, axes of size 1 dropped),
    else a Reshape to the output's shape."""
    x, y = node.input(0), node.outputs[0]
    rank = len(x.shape or ())
    axes = _axes(node) if node.op in ("Squeeze", "Unsqueeze") else None
    if node.op == "Flatten" and node.attrs.get("axis", 1) == 1 and rank >= 2:
        w.op("Flatten", node, [x], {})
    elif node.op == "Unsqueeze" and axes is not None and len(axes) == 1:
        w.op("expand_dims", node, [x], {"axis": axes[0] % len(y.shape)})
    elif node.op == "Squeeze" and axes and len(y.shape) > 0:
        w.op("squeeze", node, [x], {"axis": tuple(a % rank for a in axes)})
    else:
        w.op("Reshape", node, [x], {"shape": tuple(y.shape)})


@R.exports("Transpose")
def write_transpose(w, node):
    perm = node.attrs.get("perm") or list(range(len(node.input(0).shape)))[::-1]
    w.op("transpose", node, [node.input(0)], {"axes": tuple(perm)})


@R.exports("Concat")
def write_concat(w, node):
    w.op("Concat", node, list(node.inputs), {"dim": node.attrs["axis"], "num_args": len(node.inputs)})


def _split_sizes(node) -> list[int] | None:
    x = node.input(0)
    if not all(_known(v) for v in (x, *node.outputs)):
        return None
    axis = node.attrs.get("axis", 0) % len(x.shape)
    return [v.shape[axis] for v in node.outputs]


@R.exports("Split", check=lambda n: None if _split_sizes(n) else "parts of unknown size")
def write_split(w, node):
    sizes = _split_sizes(node)
    axis = node.attrs.get("axis", 0) % len(node.input(0).shape)
    if len(set(sizes)) == 1:
        w.op("SliceChannel", node, [node.input(0)], {"num_outputs": len(sizes), "axis": axis, "squeeze_axis": False})
        return
    start = 0
    for i, (size, out) in enumerate(zip(sizes, node.outputs)):
        w.op("slice_axis", node, [node.input(0)], {"axis": axis, "begin": start, "end": start + size},
             outputs=[out], name=f"{node.name}.part{i}")
        start += size


def _slice_args(node):
    x = node.input(0)
    consts = [_const(node.input(i)) if len(node.inputs) > i else None for i in range(1, 5)]
    if x.shape is None or consts[0] is None or consts[1] is None or \
            any(consts[i] is None and len(node.inputs) > i + 1 and node.input(i + 1) is not None for i in (2, 3)):
        return None
    rank = len(x.shape)
    axes = [int(a) % rank for a in (consts[2] if consts[2] is not None else range(len(consts[0])))]
    steps = [int(s) for s in (consts[3] if consts[3] is not None else [1] * len(axes))]
    begin, end, step = [None] * rank, [None] * rank, [None] * rank
    big = 1 << 62
    for axis, b, e, st in zip(axes, consts[0], consts[1], steps):
        begin[axis] = None if (st > 0 and b <= -big) or (st < 0 and b >= big) else int(b)
        end[axis] = None if abs(int(e)) >= big else int(e)
        step[axis] = st
    return begin, end, step


@R.exports("Slice", check=lambda n: None if _slice_args(n) else "slice bounds computed at run time")
def write_slice(w, node):
    begin, end, step = _slice_args(node)
    w.op("slice", node, [node.input(0)], {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})


def _pad_widths(node):
    x, pads = node.input(0), _const(node.input(1))
    if x.shape is None or len(x.shape) not in (4, 5) or pads is None or \
            (len(node.inputs) > 3 and node.input(3) is not None):
        return None
    value = node.input(2) if len(node.inputs) > 2 else None
    if value is not None and _const(value) is None:
        return None
    rank = len(x.shape)
    pads = [int(p) for p in pads]
    if any(p < 0 for p in pads) or any(pads[i] or pads[i + rank] for i in (0, 1)):
        return None
    mode = node.attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        return None
    return mode, tuple(v for i in range(rank) for v in (pads[i], pads[i + rank]))


@R.exports("Pad", check=lambda n: None if _pad_widths(n) else
           "MXNet pads the spatial axes of 4-D or 5-D tensors by constant amounts")
def write_pad(w, node):
    mode, widths = _pad_widths(node)
    value = _const(node.input(2)) if len(node.inputs) > 2 and node.input(2) is not None else None
    w.op("Pad", node, [node.input(0)], {"mode": mode, "pad_width": widths,
                                        "constant_value": float(value.reshape(-1)[0]) if value is not None else 0.0})


@R.exports("Gather", check=lambda n: None if n.input(1).dtype.kind in "iu" else "indices that are not integers")
def write_gather(w, node):
    w.op("take", node, [node.input(0), node.input(1)], {"axis": node.attrs.get("axis", 0), "mode": "wrap"})


@R.exports("Mod", check=lambda n: None if n.attrs.get("fmod", 0) == 0 and n.outputs[0].dtype.kind in "iu" else
           "MXNet's modulo of integers only (the sign of the divisor)")
def write_mod(w, node):
    w.op("broadcast_mod", node, list(node.inputs), {})


@R.exports("Resize", check=lambda n: None if repeat_factor(n) or _bilinear_size(n) else
           "MXNet resizes by repeating pixels an integer number of times (UpSampling) or bilinearly to a size "
           "(BilinearResize2D)")
def write_resize(w, node):
    if repeat_factor(node):
        w.op("UpSampling", node, [node.input(0)], {"scale": repeat_factor(node), "sample_type": "nearest",
                                                   "num_args": 1})
        return
    height, width = _bilinear_size(node)
    corners = node.attrs.get("coordinate_transformation_mode") == "align_corners"
    w.op("_contrib_BilinearResize2D", node, [node.input(0)], {"height": height, "width": width,
                                                              "align_corners": corners})


# -- comparisons, selection, repetition ---------------------------------------------------------------------
COMPARE = {"Greater": "broadcast_greater", "Less": "broadcast_lesser", "Equal": "broadcast_equal",
           "GreaterOrEqual": "broadcast_greater_equal", "LessOrEqual": "broadcast_lesser_equal"}


@R.exports(*COMPARE, check=lambda n: None if n.input(0).dtype == n.input(1).dtype else "operands of two dtypes")
def write_compare(w, node):
    """MXNet's comparisons give 0/1 in the operands' dtype: cast to bool."""
    step = w.op(COMPARE[node.op], node, list(node.inputs), {}, outputs=[], name=f"{node.name}.compare")
    w.op("Cast", node, [step], {"dtype": "bool"})


@R.exports("ArgMax", "ArgMin", check=lambda n: None if not n.attrs.get("select_last_index", 0) else
           "MXNet's argmax picks the first of equal values")
def write_argmax(w, node):
    """MXNet's argmax gives float indices: cast to the IR's int64."""
    step = w.op(node.op.lower(), node, [node.input(0)], {"axis": node.attrs.get("axis", 0),
                                                        "keepdims": bool(node.attrs.get("keepdims", 1))},
                outputs=[], name=f"{node.name}.index")
    w.op("Cast", node, [step], {"dtype": "int64"})


def _same_shapes(node):
    shapes = [v.shape for v in (*node.inputs, *node.outputs)]
    return None if all(s is not None and s == shapes[-1] for s in shapes) else "operands of different shapes"


@R.exports("Where", check=_static_output)
def write_where(w, node):
    """MXNet's where takes operands of one shape and a condition of the values' dtype: broadcast and cast first."""
    cond, x, y = node.inputs
    shape = tuple(node.outputs[0].shape)
    step = w.op("Cast", node, [cond], {"dtype": str(np.dtype(x.dtype))}, outputs=[], name=f"{node.name}.condition")
    operands = []
    for value, tag in ((step, "condition"), (x, "x"), (y, "y")):
        given = tuple((cond if tag == "condition" else value).shape)
        if given != shape:
            if len(given) < len(shape):  # MXNet broadcasts between tensors of one rank
                lifted = (1,) * (len(shape) - len(given)) + given
                value = w.op("Reshape", node, [value], {"shape": lifted}, outputs=[], name=f"{node.name}.{tag}_rank")
            value = w.op("broadcast_to", node, [value], {"shape": shape}, outputs=[], name=f"{node.name}.{tag}_full")
        operands.append(value)
    w.op("where", node, operands, {})


def _gemm(node):
    """(weights (outputs, inputs), bias or None) of a Gemm that is a product with a constant matrix."""
    a = node.attrs
    matrix = _const(node.input(1))
    c = node.input(2) if len(node.inputs) > 2 else None
    if matrix is None or matrix.ndim != 2 or a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or \
            (c is not None and (_const(c) is None or a.get("beta", 1.0) != 1.0 or _const(c).ndim > 1)):
        return None
    weights = matrix if a.get("transB", 0) else matrix.T
    bias = None if c is None else np.broadcast_to(_const(c), (weights.shape[0],)).astype(matrix.dtype)
    return weights, bias


@R.exports("Gemm", check=lambda n: None if _gemm(n) else "MXNet's FullyConnected multiplies by a constant matrix")
def write_gemm(w, node):
    weights, bias = _gemm(node)
    w.op("FullyConnected", node, [node.input(0), w.param(node, "weight", np.ascontiguousarray(weights))]
         + ([w.param(node, "bias", bias)] if bias is not None else []),
         {"num_hidden": weights.shape[0], "no_bias": bias is None, "flatten": False})


LOGICAL = {"And": "broadcast_logical_and", "Or": "broadcast_logical_or", "Xor": "broadcast_logical_xor"}


@R.exports(*LOGICAL)
def write_logical(w, node):
    """On float 0/1 (MXNet's logical ops give the operands' dtype), cast back to bool."""
    operands = [w.op("Cast", node, [v], {"dtype": "float32"}, outputs=[], name=f"{node.name}.operand{i}")
                for i, v in enumerate(node.inputs)]
    step = w.op(LOGICAL[node.op], node, operands, {}, outputs=[], name=f"{node.name}.logical")
    w.op("Cast", node, [step], {"dtype": "bool"})


@R.exports("Not")
def write_not(w, node):
    operand = w.op("Cast", node, [node.input(0)], {"dtype": "float32"}, outputs=[], name=f"{node.name}.operand")
    step = w.op("logical_not", node, [operand], {}, outputs=[], name=f"{node.name}.logical")
    w.op("Cast", node, [step], {"dtype": "bool"})


@R.exports("Tile", check=lambda n: None if _const(n.input(1)) is not None else "repeats computed at run time")
def write_tile(w, node):
    w.op("tile", node, [node.input(0)], {"reps": tuple(int(r) for r in _const(node.input(1)))})


@R.exports("Expand", check=_static_output)
def write_expand(w, node):
    w.op("broadcast_to", node, [node.input(0)], {"shape": tuple(node.outputs[0].shape)})


def _gather_nd_indices(node) -> np.ndarray | None:
    """ONNX's indices (..., M) as MXNet's gather_nd takes them (M, ...): constant, non-negative, no batch axes."""
    indices = _const(node.input(1))
    if indices is None or node.attrs.get("batch_dims", 0) or indices.ndim < 1 or np.any(indices < 0):
        return None
    return np.ascontiguousarray(np.moveaxis(indices, -1, 0))


@R.exports("GatherND", check=lambda n: None if _gather_nd_indices(n) is not None else
           "MXNet's gather_nd is written for constant, non-negative indices without batch axes")
def write_gather_nd(w, node):
    w.op("gather_nd", node, [node.input(0), w.param(node, "indices", _gather_nd_indices(node))], {})


def _bilinear_size(node) -> tuple[int, int] | None:
    """(height, width) of a Resize that MXNet's BilinearResize2D computes: linear, 2-D, corners aligned or pixel
    centres as PyTorch samples them (half_pixel is the same when no output side is 1), no antialiasing."""
    a = node.attrs
    x, y = node.input(0), node.outputs[0]
    if a.get("mode") != "linear" or a.get("antialias", 0) or a.get("exclude_outside", 0) or not _known(x) or \
            not _known(y) or len(x.shape) != 4 or x.shape[:2] != y.shape[:2] or a.get("layout", "NCHW") != "NCHW":
        return None
    how = a.get("coordinate_transformation_mode", "half_pixel")
    if how == "align_corners" or how == "pytorch_half_pixel" or (how == "half_pixel" and min(y.shape[2:]) > 1):
        return y.shape[2], y.shape[3]
    return None
