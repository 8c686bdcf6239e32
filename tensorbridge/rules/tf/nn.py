"""TensorFlow GraphDef ops -> IR: convolutions, matmuls, batch norm, pooling, softmax.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
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


@tf_op("BatchMatMulV2", produces="MatMul")
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
    attrs = padding_attrs(n, {"kernel_shape": [k[1], k[2]], "strides": [s[1], s[2]], "layout": NHWC})
    return imp.emit(op, [ins[0]], attrs)


@tf_op("MaxPool", produces="MaxPool")
def read_maxpool(imp, n, ins):
    return _pool(imp, n, ins, "MaxPool")


@tf_op("AvgPool", produces="AveragePool")
def read_avgpool(imp, n, ins):
    return _pool(imp, n, ins, "AveragePool")


@tf_op("Softmax", produces="Softmax")
def read_softmax(imp, n, ins):
    return imp.emit("Softmax", [ins[0]], {"axis": -1})


@tf_op("LogSoftmax", produces="LogSoftmax")
def read_logsoftmax(imp, n, ins):
    return imp.emit("LogSoftmax", [ins[0]], {"axis": -1})
