"""TensorFlow GraphDef ops -> IR: convolutions, matmuls, batch norm, pooling, softmax.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.tf.base import (
    NHWC,
    attr,
    const_data,
    filter_weight,
    padding_attrs,
    require_nhwc,
    tf_op,
)


@tf_op("Conv2D", produces="Conv")
def read_conv2d(imp, n, ins):
    require_nhwc(n)
    s, d = attr(n, "strides"), attr(n, "dilations", [1, 1, 1, 1])
    w = filter_weight(imp, ins[1], (3, 2, 0, 1), "oihw")  # HWIO -> OIHW
    cin = ins[0].shape[-1] if ins[0].shape is not None else None
    attrs = padding_attrs(n, {"strides": [s[1], s[2]], "dilations": [d[1], d[2]], "layout": NHWC})
    if isinstance(cin, int) and cin != w.shape[1]:
        attrs["group"] = cin // w.shape[1]
    return imp.emit("Conv", [ins[0], w], attrs)


@tf_op("DepthwiseConv2dNative", produces="Conv")
def read_depthwiseconv2dnative(imp, n, ins):
    require_nhwc(n)
    s, d = attr(n, "strides"), attr(n, "dilations", [1, 1, 1, 1])
    dk = const_data(ins[1], "the depthwise filter")  # [H, W, C, M]
    c = dk.shape[2]
    w = imp.graph.add_constant(f"{ins[1].name}.oihw", np.ascontiguousarray(
        dk.reshape(dk.shape[0], dk.shape[1], -1).transpose(2, 0, 1)[:, None]))
    attrs = padding_attrs(n, {"strides": [s[1], s[2]], "dilations": [d[1], d[2]], "group": int(c), "layout": NHWC})
    return imp.emit("Conv", [ins[0], w], attrs)


@tf_op("MatMul", produces=("Dense", "MatMul"))
def read_matmul(imp, n, ins):
    a, b = ins
    if attr(n, "transpose_a", False):
        a = imp.emit("Transpose", [a], {"perm": [1, 0]}, suffix="a_t")
    if b.const is not None and b.const.ndim == 2:
        w = np.asarray(b.const).T if attr(n, "transpose_b", False) else np.asarray(b.const)
        kernel = imp.graph.add_constant(f"{b.name}.kernel", np.ascontiguousarray(w))
        bias = _bias_of(imp, n)
        return imp.emit("Dense", [a, kernel] + ([bias] if bias is not None else []))
    if attr(n, "transpose_b", False):
        b = imp.emit("Transpose", [b], {"perm": [1, 0]}, suffix="b_t")
    return imp.emit("MatMul", [a, b])


def _bias_of(imp, n):
    """The constant of a BiasAdd that only consumes this MatMul, fused into the Dense (recovery)."""
    users = [u for u in imp.nodes.values() if any(i.split(":")[0] == n.name for i in u.input)]
    if len(users) != 1 or users[0].op != "BiasAdd":
        return None
    bias_ref = users[0].input[1]
    bias = imp.values.get(bias_ref if ":" in bias_ref else f"{bias_ref}:0")
    if bias is None or bias.const is None:
        return None
    imp.fused_bias = getattr(imp, "fused_bias", set()) | {users[0].name}
    return bias


@tf_op("Conv3D", produces="Conv")
def read_conv3d(imp, n, ins):
    require_nhwc(n)
    s, d = attr(n, "strides"), attr(n, "dilations", [1] * 5)
    w = filter_weight(imp, ins[1], (4, 3, 0, 1, 2), "oidhw")  # DHWIO -> OIDHW
    attrs = padding_attrs(n, {"strides": s[1:4], "dilations": d[1:4], "layout": NHWC})
    cin = ins[0].shape[-1] if ins[0].shape is not None else None
    if isinstance(cin, int) and cin != w.shape[1]:
        attrs["group"] = cin // w.shape[1]
    return imp.emit("Conv", [ins[0], w], attrs)


@tf_op("Conv2DBackpropInput", "Conv3DBackpropInputV2", produces="ConvTranspose")
def read_conv_backprop_input(imp, n, ins):
    """tf.nn.conv2d_transpose / conv3d_transpose: (output shape, filter [*k, out, in], input)."""
    require_nhwc(n)
    size, x = const_data(ins[0], "the output shape").astype(np.int64), ins[2]
    spatial = len(size) - 2
    s, d = attr(n, "strides"), attr(n, "dilations", [1] * (spatial + 2))
    if any(v != 1 for v in d[1:-1]):
        raise ModelError(f"{n.name}: a transposed convolution with dilation is not supported")
    perm = (spatial + 1, spatial) + tuple(range(spatial))  # [*k, out, in] -> [in, out, *k]
    w = filter_weight(imp, ins[1], perm, "io" + "dhw"[-spatial:])
    attrs = {"strides": s[1:-1], "layout": NHWC}
    if attr(n, "padding") == "EXPLICIT":
        raise ModelError(f"{n.name}: a transposed convolution with explicit padding is not supported")
    out = [int(v) for v in size[1:-1]]
    if attr(n, "padding") == "SAME":
        attrs.update(auto_pad="SAME_UPPER", output_shape=out)
    else:  # VALID: the natural size, or rows past it that no input reaches (at the end)
        natural = [(i - 1) * st + k for i, st, k in zip(x.shape[1:-1], s[1:-1], w.shape[2:])]
        if not all(isinstance(v, int) for v in natural):
            raise ModelError(f"{n.name}: a VALID transposed convolution needs static spatial sizes")
        attrs["output_padding"] = [o - v for o, v in zip(out, natural)]
    return imp.emit("ConvTranspose", [x, w], attrs)


@tf_op("BatchMatMulV2", "BatchMatMulV3", produces="MatMul")
def read_batchmatmulv2(imp, n, ins):
    a, b = ins
    for flag, idx in (("adj_x", 0), ("adj_y", 1)):
        if attr(n, flag, False):
            v = ins[idx]
            r = len(v.shape)
            t = imp.emit("Transpose", [v], {"perm": list(range(r - 2)) + [r - 1, r - 2]}, suffix=flag)
            a, b = (t, b) if idx == 0 else (a, t)
    return imp.emit("MatMul", [a, b])


@tf_op("FusedBatchNormV3", "FusedBatchNorm", produces="BatchNormalization")
def read_fusedbatchnormv3(imp, n, ins):
    if attr(n, "is_training", False):
        raise ModelError(f"{n.name}: FusedBatchNorm in training mode")
    require_nhwc(n)
    y = imp.emit("BatchNormalization", ins[:5], {"epsilon": float(attr(n, "epsilon", 1e-3)), "layout": NHWC})
    return [y]


def _pool(imp, n, ins, op):
    require_nhwc(n)
    k, s = attr(n, "ksize"), attr(n, "strides")
    attrs = padding_attrs(n, {"kernel_shape": k[1:-1], "strides": s[1:-1], "layout": NHWC})
    return imp.emit(op, [ins[0]], attrs)


@tf_op("MaxPool", "MaxPool3D", produces="MaxPool")
def read_maxpool(imp, n, ins):
    return _pool(imp, n, ins, "MaxPool")


@tf_op("AvgPool", "AvgPool3D", produces="AveragePool")
def read_avgpool(imp, n, ins):
    return _pool(imp, n, ins, "AveragePool")


@tf_op("ResizeBilinear", "ResizeNearestNeighbor", produces="Resize")
def read_resize(imp, n, ins):
    attrs = tf_semantics.resize_attrs(n.op == "ResizeBilinear", bool(attr(n, "align_corners", False)),
                                      bool(attr(n, "half_pixel_centers", False)))
    return tf_semantics.resize(imp, ins[0], ins[1], {**attrs, "layout": NHWC})


@tf_op("LRN", produces="LRN")
def read_lrn(imp, n, ins):
    """tf.nn.local_response_normalization sums alpha * x^2 over 2r+1 channels; the IR's LRN divides alpha by
    the window's size."""
    r = int(attr(n, "depth_radius", 5))
    return imp.emit("LRN", ins[:1], {"size": 2 * r + 1, "alpha": float(attr(n, "alpha", 1.0)) * (2 * r + 1),
                                     "beta": float(attr(n, "beta", 0.5)), "bias": float(attr(n, "bias", 1.0)),
                                     "layout": NHWC})


@tf_op("Softmax", produces="Softmax")
def read_softmax(imp, n, ins):
    return imp.emit("Softmax", [ins[0]], {"axis": -1})


@tf_op("LogSoftmax", produces="LogSoftmax")
def read_logsoftmax(imp, n, ins):
    return imp.emit("LogSoftmax", [ins[0]], {"axis": -1})


@tf_op("NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
       produces="NonMaxSuppression")
def read_non_max_suppression(imp, n, ins):
    padded = bool(attr(n, "pad_to_max_output_size", False))
    v4, v5 = n.op == "NonMaxSuppressionV4", n.op == "NonMaxSuppressionV5"
    return tf_semantics.non_max_suppression(imp, *ins[:5], ins[5] if v5 else None, padded=padded, with_scores=v5,
                                            counted=v4 or v5)


@tf_op("CombinedNonMaxSuppression", produces="NonMaxSuppression")
def read_combined_non_max_suppression(imp, n, ins):
    return tf_semantics.combined_non_max_suppression(
        imp, *ins[:6], pad_per_class=bool(attr(n, "pad_per_class", False)),
        clip_boxes=bool(attr(n, "clip_boxes", True)))
