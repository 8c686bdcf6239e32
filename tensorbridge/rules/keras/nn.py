"""Keras 3 <-> IR: convolutions, dense layers, normalisation, softmax, pooling, resizing.

Each IR op's import converters (layers and `keras.ops` calls -> IR) and export writer (IR -> Keras
code) sit together.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand, same
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ops.infer import norm_axis
from tensorbridge.ops.nn import indices_read
from tensorbridge.rules.keras.base import (
    NHWC,
    R,
    activate,
    bias_weight,
    has_activation,
    int_list,
    keras_op,
    keras_padding,
    layer,
    padding_attrs,
    require_channels_last,
    require_nhwc,
    same_pads,
    to_numpy,
)


@layer("Conv1D", "Conv2D", "Conv3D", produces="Conv")
def read_conv(imp, layer, inputs, node):
    require_channels_last(layer)
    kernel = to_numpy(layer.kernel)  # [*k, in/groups, out]
    rank = kernel.ndim - 2
    w = imp.weight("kernel", np.transpose(kernel, (rank + 1, rank, *range(rank))))
    attrs = padding_attrs(layer, {"strides": int_list(layer.strides, rank),
                                  "dilations": int_list(layer.dilation_rate, rank),
                                  "group": int(getattr(layer, "groups", 1)), "layout": NHWC})
    b = bias_weight(imp, layer, w)
    y = imp.emit("Conv", [inputs[0], w] + ([b] if b is not None else []), attrs,
                 suffix="" if not has_activation(layer) else "conv")
    return activate(imp, layer, y)


def _depthwise(imp, layer, dk):
    """A [*k, in, mult] depthwise kernel as the IR's grouped Conv: its weight [in*mult, 1, *k], attrs and rank."""
    require_channels_last(layer)
    rank = dk.ndim - 2
    flat = dk.reshape(*dk.shape[:rank], -1)  # [*k, in*mult] (in-major, as Keras orders channels)
    w = imp.weight("depthwise_kernel", np.transpose(flat, (rank, *range(rank)))[:, None])
    attrs = padding_attrs(layer, {"strides": int_list(layer.strides, rank),
                                  "dilations": int_list(layer.dilation_rate, rank),
                                  "group": int(dk.shape[rank]), "layout": NHWC})
    return w, attrs, rank


@layer("DepthwiseConv2D", "DepthwiseConv1D", produces="Conv")
def read_depthwise_conv(imp, layer, inputs, node):
    w, attrs, _ = _depthwise(imp, layer, to_numpy(layer.kernel))
    b = bias_weight(imp, layer, w)
    y = imp.emit("Conv", [inputs[0], w] + ([b] if b is not None else []), attrs,
                 suffix="" if not has_activation(layer) else "conv")
    return activate(imp, layer, y)


@layer("SeparableConv2D", "SeparableConv1D", produces="Conv")
def read_separable_conv(imp, layer, inputs, node):
    dw, attrs, rank = _depthwise(imp, layer, to_numpy(layer.depthwise_kernel))
    y = imp.emit("Conv", [inputs[0], dw], attrs, suffix="depthwise")
    pk = to_numpy(layer.pointwise_kernel)  # [1.., in*mult, out]
    pw = imp.weight("pointwise_kernel", np.transpose(pk, (rank + 1, rank, *range(rank))))
    b = imp.weight("bias", to_numpy(layer.bias)) if layer.use_bias else None
    y = imp.emit("Conv", [y, pw] + ([b] if b is not None else []), {"layout": NHWC},
                 suffix="pointwise" if has_activation(layer) else "")
    return activate(imp, layer, y)


def _conv_check(node) -> str | None:
    if node.attrs.get("auto_pad") == "SAME_LOWER":
        return "SAME_LOWER padding"
    if any(s > 1 for s in node.attrs.get("strides") or []) and any(d > 1 for d in node.attrs.get("dilations") or []):
        return "strides and dilations both above 1 (Keras convolutions take one or the other)"
    x = node.inputs[0]
    if x.shape is not None and node.attrs.get("layout") == NHWC and not isinstance(x.shape[-1], int):
        return "a convolution of a tensor whose channel count is known only at run time (Keras layers are built " \
               "with it)"
    return None


@R.exports("Conv", check=_conv_check)
def write_conv(em, node):
    require_nhwc(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    if w.const is None:
        return _write_computed_conv(em, node)
    wa = const_operand(w)  # [O, I/g, *k]
    nsp = wa.ndim - 2
    if nsp not in (1, 2, 3):
        raise Unsupported(f"{nsp}-D convolution")
    group = node.attrs.get("group", 1)
    cin = wa.shape[1] * group
    xe, padding = keras_padding(em, node, em.tensor(x), nsp, wa.shape[2:])
    strides = same(node.attrs.get("strides") or [1] * nsp)
    dilations = same(node.attrs.get("dilations") or [1] * nsp)
    kernel = same(wa.shape[2:])
    bias = [const_operand(b)] if b is not None else []
    perm = (*range(2, 2 + nsp), 1, 0)
    if group > 1 and group == cin and wa.shape[1] == 1 and nsp in (1, 2):
        mult = wa.shape[0] // cin
        dk = wa.reshape(cin, mult, *wa.shape[2:]).transpose(*range(2, 2 + nsp), 0, 1)
        call = em.layer(node, f"layers.DepthwiseConv{nsp}D", [kernel], {
            "strides": strides, "padding": padding, "depth_multiplier": mult, "dilation_rate": dilations,
            "use_bias": b is not None}, [dk, *bias], xe)
    else:
        call = em.layer(node, f"layers.Conv{nsp}D", [wa.shape[0], kernel], {
            "strides": strides, "padding": padding, "dilation_rate": dilations, "groups": group,
            "use_bias": b is not None}, [wa.transpose(perm), *bias], xe)
    em.out(node, call)


def _write_computed_conv(em, node):
    """A kernel computed in the model (CondConv's per-sample mixture) is no layer weight: ops.conv on the kernel
    moved to Keras's order [*k, in, out], or ops.depthwise_conv ([*k, in, multiplier]) for one per channel."""
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    shape = w.shape
    if shape is None or not all(isinstance(d, int) for d in shape) or len(shape) not in (3, 4):
        raise Unsupported("a computed convolution kernel without a static 1-D or 2-D shape")
    nsp, group = len(shape) - 2, node.attrs.get("group", 1)
    xe, padding = keras_padding(em, node, em.tensor(x), nsp, shape[2:])
    options = {"strides": same(node.attrs.get("strides") or [1] * nsp), "padding": padding,
               "dilation_rate": same(node.attrs.get("dilations") or [1] * nsp)}
    if group == 1:
        kernel = P.call("ops.transpose", em.tensor(w), (*range(2, 2 + nsp), 1, 0))
        y = P.call("ops.conv", xe, kernel, **options)
    elif shape[1] == 1:
        per_channel = P.call("ops.reshape", em.tensor(w), (group, shape[0] // group, *shape[2:]))
        kernel = P.call("ops.transpose", per_channel, (*range(2, 2 + nsp), 0, 1))
        y = P.call("ops.depthwise_conv", xe, kernel, **options)
    else:
        raise Unsupported(f"a grouped convolution ({group} groups) of a computed kernel (Keras's ops.conv takes "
                          "one group)")
    em.out(node, P.call("ops.add", y, em.tensor(b)) if b is not None else y)


@layer("Conv2DTranspose", "Conv1DTranspose", produces="ConvTranspose")
def read_conv_transpose(imp, layer, inputs, node):
    require_channels_last(layer)
    kernel = to_numpy(layer.kernel)  # [*k, out, in]
    rank = kernel.ndim - 2
    w = imp.weight("kernel", np.transpose(kernel, (rank + 1, rank, *range(rank))))
    strides = int_list(layer.strides, rank)
    attrs = {"strides": strides, "dilations": int_list(layer.dilation_rate, rank), "layout": NHWC}
    if getattr(layer, "output_padding", None):
        attrs["output_padding"] = int_list(layer.output_padding, rank)
    if layer.padding == "same":
        x = inputs[0]
        if x.shape is None or not all(isinstance(d, int) for d in x.shape[1:-1]):
            raise ModelError(f"{layer.name}: 'same' transposed convolution needs static spatial dims")
        extra = attrs.get("output_padding", [0] * rank)
        attrs["output_shape"] = [d * s + e for d, s, e in zip(x.shape[1:-1], strides, extra)]
        attrs["auto_pad"] = "SAME_UPPER"
    b = bias_weight(imp, layer, w)
    y = imp.emit("ConvTranspose", [inputs[0], w] + ([b] if b is not None else []), attrs,
                 suffix="" if not has_activation(layer) else "conv")
    return activate(imp, layer, y)


def _conv_transpose_check(node) -> str | None:
    from tensorbridge.ops.nn import pads_implied  # imported here: the catalogue's families load first

    if node.attrs.get("group", 1) != 1:
        return "grouped ConvTranspose (Conv2DTranspose has no groups)"
    if pads_implied(node):
        return "ConvTranspose with output_shape/auto_pad"
    return None


@R.exports("ConvTranspose", check=_conv_transpose_check)
def write_conv_transpose(em, node):
    require_nhwc(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = const_operand(w)  # [I, O/g, *k]
    nsp = wa.ndim - 2
    if node.attrs.get("group", 1) != 1 or nsp not in (1, 2, 3):
        raise Unsupported("grouped or >3-D ConvTranspose")
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    bias = [const_operand(b)] if b is not None else []
    out_pad = node.attrs.get("output_padding")
    kwargs = {"strides": same(node.attrs.get("strides") or [1] * nsp), "padding": "valid",
              "dilation_rate": same(node.attrs.get("dilations") or [1] * nsp), "use_bias": b is not None}
    if out_pad and any(out_pad):
        kwargs["output_padding"] = same(out_pad)
    perm = (*range(2, 2 + nsp), 1, 0)
    y = em.layer(node, f"layers.Conv{nsp}DTranspose", [wa.shape[1], same(wa.shape[2:])], kwargs,
                 [wa.transpose(perm), *bias], em.tensor(x))
    if any(pads):
        index = [P.slice_()] + [P.slice_(pads[i] or None, -pads[i + nsp] if pads[i + nsp] else None)
                                for i in range(nsp)]
        y = P.subscript(y, ast.Tuple(index, ast.Load()))
    em.out(node, y)


@layer("Dense", produces="Dense")
def read_dense(imp, layer, inputs, node):
    w = imp.weight("kernel", to_numpy(layer.kernel))
    b = bias_weight(imp, layer, w)
    y = imp.emit("Dense", [inputs[0], w] + ([b] if b is not None else []),
                 suffix="" if not has_activation(layer) else "dense")
    return activate(imp, layer, y)


def _last_dim_known(x) -> bool:
    """Whether a Keras layer can be built on `x` (it is built with the input's last dim)."""
    return x.shape is not None and len(x.shape) > 0 and isinstance(x.shape[-1], int)


@R.exports("Dense")
def write_dense(em, node):
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = const_operand(w)
    if not _last_dim_known(x):  # a product with the weight held as a constant, which needs no built layer
        y = P.call("ops.matmul", em.tensor(x), em.tensor(w))
        return em.out(node, P.binop(y, "+", em.tensor(b)) if b is not None else y)
    bias = [const_operand(b)] if b is not None else []
    em.out(node, em.layer(node, "layers.Dense", [wa.shape[1]], {"use_bias": b is not None}, [wa, *bias],
                          em.tensor(x)))


@R.exports("MatMul")
def write_matmul(em, node):
    a, b = node.inputs
    if b.const is not None and np.asarray(b.const).ndim == 2 and a.const is None and dtypes.is_float(b.const.dtype) \
            and _last_dim_known(a):
        wa = np.asarray(b.const)
        return em.out(node, em.shared_layer(b, node, "layers.Dense", [wa.shape[1]], {"use_bias": False}, [wa],
                                            em.tensor(a)))
    em.out(node, P.call("ops.matmul", em.tensor(a), em.tensor(b)))


def _dense_like(node) -> str | None:
    at = node.attrs
    if at.get("transA") or at.get("alpha", 1.0) != 1.0 or at.get("beta", 1.0) != 1.0 or node.inputs[1].const is None:
        return "general Gemm (only Dense-like Gemm)"  # decomposed
    c = node.input(2)
    if c is not None and (c.const is None or np.asarray(c.const).ndim > 1 and np.asarray(c.const).shape[0] != 1):
        return "a Gemm adding a matrix (a Dense layer adds one bias vector)"  # decomposed
    return None


@R.exports("Gemm", check=_dense_like)
def write_gemm(em, node):
    a, b = node.inputs[0], node.inputs[1]
    c = node.input(2)
    at = node.attrs
    wa = np.asarray(b.const)
    w = wa.T if at.get("transB") else wa
    bias = [np.broadcast_to(const_operand(c).reshape(-1), (w.shape[1],)).copy()] if c is not None else []
    em.out(node, em.layer(node, "layers.Dense", [w.shape[1]], {"use_bias": c is not None}, [w, *bias],
                          em.tensor(a)))


@layer("BatchNormalization", produces="BatchNormalization")
def read_batch_norm(imp, layer, inputs, node):
    x = inputs[0]
    rank = len(x.shape) if x.shape is not None else 4
    axis = layer.axis if isinstance(layer.axis, int) else layer.axis[0]
    if axis not in (-1, rank - 1):
        raise ModelError(f"{layer.name}: BatchNormalization over axis {axis} is not supported")
    n = to_numpy(layer.moving_mean).shape[0]
    gamma = to_numpy(layer.gamma) if layer.scale else np.ones(n, np.float32)
    beta = to_numpy(layer.beta) if layer.center else np.zeros(n, np.float32)
    return imp.emit("BatchNormalization", [x, imp.weight("gamma", gamma), imp.weight("beta", beta),
                                           imp.weight("moving_mean", to_numpy(layer.moving_mean)),
                                           imp.weight("moving_variance", to_numpy(layer.moving_variance))],
                    {"epsilon": float(layer.epsilon), "momentum": float(layer.momentum), "layout": NHWC})


@R.exports("BatchNormalization",
           check=lambda node: "training-mode BatchNormalization" if node.attrs.get("training_mode") else None)
def write_batch_norm(em, node):
    require_nhwc(node)
    x, scale, bias, mean, var = node.inputs
    kwargs = {"axis": -1, "epsilon": node.attrs.get("epsilon", 1e-5), "momentum": node.attrs.get("momentum", 0.9)}
    weights = [const_operand(scale), const_operand(bias), const_operand(mean), const_operand(var)]
    em.out(node, em.layer(node, "layers.BatchNormalization", [], kwargs, weights, em.tensor(x)))


def _trailing_axes(layer, rank: int) -> list[int]:
    """A normalisation layer's axes, which the IR ops hold only as the trailing ones from `axis` on."""
    axes = sorted(a % rank for a in ([layer.axis] if isinstance(layer.axis, int) else layer.axis))
    if axes != list(range(axes[0], rank)):
        raise ModelError(f"{layer.name}: {type(layer).__name__} over non-trailing axes {axes}")
    return axes


def _trailing_axis_kwarg(node, x) -> tuple[int, list[int] | int]:
    """The IR op's first normalised axis, and the layer's `axis` argument for the axes from it on."""
    if x.shape is None:
        raise Unsupported(f"{node.op} needs the input rank")
    axis = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    axes = list(range(axis, len(x.shape)))
    return axis, axes if len(axes) > 1 else -1


@layer("LayerNormalization", produces="LayerNormalization")
def read_layer_norm(imp, layer, inputs, node):
    x = inputs[0]
    axes = _trailing_axes(layer, len(x.shape))
    shape = [x.shape[a] for a in axes]
    gamma = to_numpy(layer.gamma) if layer.scale else np.ones(shape, np.float32)
    ins = [x, imp.weight("gamma", gamma)] + ([imp.weight("beta", to_numpy(layer.beta))] if layer.center else [])
    return imp.emit("LayerNormalization", ins, {"axis": axes[0], "epsilon": float(layer.epsilon)})


@R.exports("LayerNormalization")
def write_layer_norm(em, node):
    x, scale = node.inputs[0], node.inputs[1]
    b = node.input(2)
    axis, axis_kwarg = _trailing_axis_kwarg(node, x)
    shape = tuple(x.shape[axis:])
    gamma = np.broadcast_to(const_operand(scale), shape).copy()
    weights = [gamma] + ([np.broadcast_to(const_operand(b), shape).copy()] if b is not None else [])
    em.out(node, em.layer(node, "layers.LayerNormalization", [], {
        "axis": axis_kwarg, "epsilon": node.attrs.get("epsilon", 1e-5), "center": b is not None}, weights,
        em.tensor(x)))


@layer("RMSNormalization", produces="RMSNormalization")
def read_rms_norm(imp, layer, inputs, node):
    x = inputs[0]
    axes = _trailing_axes(layer, len(x.shape))
    return imp.emit("RMSNormalization", [x, imp.weight("scale", to_numpy(layer.scale))],
                    {"axis": axes[0], "epsilon": float(layer.epsilon)})


@R.exports("RMSNormalization")
def write_rms_norm(em, node):
    x, scale = node.inputs
    axis, axis_kwarg = _trailing_axis_kwarg(node, x)
    weight = np.broadcast_to(const_operand(scale), tuple(x.shape[axis:])).copy()
    em.out(node, em.layer(node, "layers.RMSNormalization", [], {
        "axis": axis_kwarg, "epsilon": node.attrs.get("epsilon", 1e-5)}, [weight], em.tensor(x)))


@layer("GroupNormalization", produces="GroupNormalization")
def read_group_norm(imp, layer, inputs, node):
    x = inputs[0]
    c = x.shape[-1]
    gamma = to_numpy(layer.gamma) if layer.scale else np.ones(c, np.float32)
    beta = to_numpy(layer.beta) if layer.center else np.zeros(c, np.float32)
    return imp.emit("GroupNormalization", [x, imp.weight("gamma", gamma), imp.weight("beta", beta)],
                    {"num_groups": int(layer.groups), "epsilon": float(layer.epsilon), "layout": NHWC})


@R.exports("GroupNormalization")
def write_group_norm(em, node):
    require_nhwc(node)
    x, scale, bias = node.inputs
    em.out(node, em.layer(node, "layers.GroupNormalization", [], {
        "groups": node.attrs["num_groups"], "axis": -1, "epsilon": node.attrs.get("epsilon", 1e-5)},
                          [const_operand(scale), const_operand(bias)], em.tensor(x)))


@layer("Softmax", produces=("Softmax", "Where", "Greater"))
def read_softmax(imp, layer, inputs, node):
    """Softmax, with a mask (attention's: true or above 0.5 where kept) as Keras applies it: the hidden scores
    set to -1e9 (-3e4 in float16) before, and their weights to 0 after."""
    axis = layer.axis[0] if isinstance(layer.axis, (list, tuple)) and len(layer.axis) == 1 else layer.axis
    if not isinstance(axis, int):
        raise ModelError(f"{layer.name}: Softmax over several axes is not supported")
    args, kwargs = node.arguments.args, node.arguments.kwargs
    x = imp.operands(args[0])
    mask = kwargs.get("mask", args[1] if len(args) > 1 else None)
    if mask is None:
        return imp.emit("Softmax", [x], {"axis": axis})
    mask = imp.operands(mask)
    if mask.dtype != np.bool_:
        mask = imp.emit("Greater", [mask, imp.const(0.5, mask.dtype)], suffix="kept")
    hidden = imp.const(-3e4 if x.dtype == np.float16 else -1e9, x.dtype)
    weights = imp.emit("Softmax", [imp.emit("Where", [mask, x, hidden], suffix="masked")], {"axis": axis},
                       suffix="weights")
    return imp.emit("Where", [mask, weights, imp.const(0.0, x.dtype)])


@keras_op("Softmax", "LogSoftmax", produces=("Softmax", "LogSoftmax"))
def read_op_softmax(imp, op, args, kwargs, node):
    return imp.emit(type(op).__name__, [args[0]], {"axis": int(op.axis)})


@R.exports("Softmax", "LogSoftmax")
def write_softmax(em, node):
    fn = "ops.softmax" if node.op == "Softmax" else "ops.log_softmax"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), axis=node.attrs.get("axis", -1)))


@layer("MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
       produces=("MaxPool", "AveragePool"))
def read_pool(imp, layer, inputs, node):
    require_channels_last(layer)
    kind = type(layer).__name__
    rank = int(kind[-2])
    k = int_list(layer.pool_size, rank)
    attrs = padding_attrs(layer, {"kernel_shape": k, "strides": int_list(layer.strides or k, rank), "layout": NHWC})
    return imp.emit("MaxPool" if kind.startswith("Max") else "AveragePool", [inputs[0]], attrs)


def pool_blocker(node) -> str | None:
    """Why Keras's pooling layers cannot compute this MaxPool/AveragePool as it is (None: they can)."""
    nsp = len(node.attrs["kernel_shape"])
    if any(d != 1 for d in node.attrs.get("dilations") or [1]):
        return "dilated pooling"
    if indices_read(node):
        return "MaxPool indices"
    if node.attrs.get("auto_pad", "NOTSET") == "SAME_LOWER":
        return "SAME_LOWER padding"
    if node.op == "AveragePool" and node.attrs.get("auto_pad", "NOTSET") == "SAME_UPPER" and \
            node.attrs.get("count_include_pad", 0):
        return "AveragePool that counts its SAME padding (Keras's 'same' leaves it out)"
    if node.attrs.get("ceil_mode") and not _ceil_is_floor(node, nsp):
        return "ceil_mode that adds a window"
    padded = node.attrs.get("auto_pad", "NOTSET") == "NOTSET" and any(node.attrs.get("pads") or [])
    if node.op == "AveragePool" and padded and not node.attrs.get("count_include_pad", 0) and \
            list(node.attrs["pads"]) != same_pads(node, nsp, node.attrs["kernel_shape"]):
        return "AveragePool with padding it does not count, other than Keras's 'same'"
    return None


def _ceil_is_floor(node, nsp: int) -> bool:
    """Whether rounding the window count up gives no more windows than rounding down, for this input."""
    shape, out = node.inputs[0].shape, node.outputs[0].shape
    if shape is None or out is None or len(shape) < nsp + 2:
        return False
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    strides = node.attrs.get("strides") or [1] * nsp
    for i, (size, k, s) in enumerate(zip(shape[1 : 1 + nsp], node.attrs["kernel_shape"], strides)):
        if not isinstance(size, int) or (size + pads[i] + pads[i + nsp] - k) // s + 1 != out[1 + i]:
            return False
    return True


@R.exports("MaxPool", "AveragePool", check=pool_blocker)
def write_pool(em, node):
    require_nhwc(node)
    reason = pool_blocker(node)
    if reason is not None:
        raise Unsupported(reason)
    k = node.attrs["kernel_shape"]
    nsp = len(k)
    is_max = node.op == "MaxPool"
    counted = node.attrs.get("count_include_pad", 0)
    xe, padding = keras_padding(em, node, em.tensor(node.inputs[0]), nsp, k, float("-inf") if is_max else None,
                                same_ok=is_max or not counted)
    ctor = f"layers.{'Max' if is_max else 'Average'}Pooling{nsp}D"
    em.out(node, em.layer(node, ctor, [], {"pool_size": same(k),
                                           "strides": same(node.attrs.get("strides") or [1] * nsp),
                                           "padding": padding}, [], xe))


@layer("GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalMaxPooling1D",
       "GlobalMaxPooling2D", "GlobalMaxPooling3D", produces=("GlobalAveragePool", "GlobalMaxPool"))
def read_global_pool(imp, layer, inputs, node):
    require_channels_last(layer)
    kind = type(layer).__name__
    op = "GlobalMaxPool" if "Max" in kind else "GlobalAveragePool"
    y = imp.emit(op, [inputs[0]], {"layout": NHWC}, suffix="" if layer.keepdims else "pool")
    if layer.keepdims:
        return y
    rank = int(kind[-2])
    return imp.emit("Squeeze", [y, imp.const(list(range(1, rank + 1)), np.int64)])


@R.exports("GlobalAveragePool", "GlobalMaxPool")
def write_global_pool(em, node):
    require_nhwc(node)
    x = node.inputs[0]
    nsp = len(x.shape) - 2 if x.shape is not None else 2
    kind = "Average" if node.op == "GlobalAveragePool" else "Max"
    em.out(node, em.layer(node, f"layers.Global{kind}Pooling{nsp}D", [], {"keepdims": True}, [], em.tensor(x)))


@layer("UpSampling2D", produces="Resize")
def read_upsampling(imp, layer, inputs, node):
    require_channels_last(layer)
    sh, sw = int_list(layer.size, 2)
    if layer.interpolation == "nearest":
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    elif layer.interpolation == "bilinear":
        attrs = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    else:
        raise ModelError(f"{layer.name}: UpSampling2D interpolation {layer.interpolation!r} is not supported")
    attrs["layout"] = NHWC
    return imp.emit("Resize", [inputs[0], None, imp.const([1.0, sh, sw, 1.0])], attrs)


def _upsampling(node) -> tuple[tuple[int, int] | None, str, str]:
    """(UpSampling2D size, interpolation, reason when UpSampling2D cannot compute the Resize)."""
    x, a, scales, sizes = node.inputs[0], node.attrs, node.input(2), node.input(3)
    if x.shape is None or len(x.shape) != 4 or a.get("axes"):
        return None, "", "Resize of other than all axes of a 4-D tensor"
    if sizes is not None and sizes.const is not None and all(isinstance(d, int) for d in x.shape):
        sc = [out / size for out, size in zip(np.asarray(sizes.const).tolist(), x.shape)]
    elif scales is not None and scales.const is not None:
        sc = [float(s) for s in np.asarray(scales.const)]
    else:
        return None, "", "Resize to sizes known only at run time"
    if sc[0] != 1 or sc[3] != 1 or any(s != int(s) for s in sc[1:3]):
        return None, "", "Resize by non-integer scales"
    mode, ctm = a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel")
    if a.get("antialias") or a.get("exclude_outside"):
        return None, "", "Resize with antialias or exclude_outside"
    if mode == "nearest" and ctm == "asymmetric" and a.get("nearest_mode") == "floor":
        return (int(sc[1]), int(sc[2])), "nearest", ""
    if mode == "linear" and ctm in ("half_pixel", "pytorch_half_pixel"):
        return (int(sc[1]), int(sc[2])), "bilinear", ""
    return None, "", f"Resize mode={mode} coordinate_transformation_mode={ctm}"


def _resizing(node) -> tuple[tuple[int, int], str] | None:
    """(height and width, interpolation) when layers.Resizing computes the Resize: TensorFlow's bilinear or
    nearest kernel with half-pixel centres, to a constant size of the two spatial axes; else None."""
    x, a, sizes = node.inputs[0], node.attrs, node.input(3)
    if x.shape is None or len(x.shape) != 4 or sizes is None or sizes.const is None or a.get("antialias") or \
            a.get("exclude_outside") or a.get("coordinate_transformation_mode", "half_pixel") != "half_pixel":
        return None
    size = [int(d) for d in np.asarray(sizes.const).ravel()]
    if a.get("axes"):
        by_axis = dict(zip((ax % 4 for ax in a["axes"]), size))
        if sorted(by_axis) != [1, 2]:
            return None
        hw = (by_axis[1], by_axis[2])
    elif len(size) == 4 and size[0] == x.shape[0] and size[3] == x.shape[3]:
        hw = (size[1], size[2])
    else:
        return None
    if a.get("mode", "nearest") == "linear":
        return hw, "bilinear"
    if a.get("mode", "nearest") == "nearest" and a.get("nearest_mode") == "round_prefer_ceil":
        return hw, "nearest"
    return None


def _resize_blocker(node) -> str | None:
    return None if _resizing(node) is not None else (_upsampling(node)[2] or None)


@R.exports("Resize", check=_resize_blocker)
def write_resize(em, node):
    require_nhwc(node)
    size, interpolation, reason = _upsampling(node)
    if size is None:
        resizing = _resizing(node)
        if resizing is None:
            raise Unsupported(reason)
        (h, w), interpolation = resizing
        return em.out(node, em.layer(node, "layers.Resizing", [h, w], {"interpolation": interpolation}, [],
                                     em.tensor(node.inputs[0])))
    out = node.outputs[0].shape
    sizes_open = not all(isinstance(d, int) for d in node.inputs[0].shape[1:3])
    if em.for_tflite and sizes_open and interpolation == "nearest" and out is not None and isinstance(out[3], int):
        return em.in_own_layer(node, lambda em, node: _nearest_resize(em, node, size))
    em.out(node, em.layer(node, "layers.UpSampling2D", [], {"size": size, "interpolation": interpolation},
                          [], em.tensor(node.inputs[0])))


def _nearest_resize(em, node, size: tuple[int, int]):
    """UpSampling2D's nearest repeat by integer factors, its result reshaped to its own sizes and the channel count:
    TensorFlow's TFLite converter then keeps the count, which its convolutions need (UpSampling2D's loses it)."""
    x = em.tensor(node.inputs[0])
    for axis, factor in zip((1, 2), size):
        x = P.call("ops.repeat", x, factor, axis=axis)
    held = em.out(node, x)
    dims = ast.Tuple([P.lit(-1), *(P.subscript(P.call("ops.shape", P.name(held)), axis) for axis in (1, 2)),
                      P.lit(node.outputs[0].shape[3])], ast.Load())
    em.out(node, P.call("ops.reshape", P.name(held), dims))
