"""Keras 3 -> IR: the `keras.ops.nn` and `keras.ops.image` calls that traced custom layers record (ops.conv with
a layer's kernel, ops.image.resize, ops.normalize, ops.moments, pooling and normalization by function).

Converters take (importer, operation, operands, keyword operands, keras node). Channels-last data keeps
`layout="NHWC"`; a call made with data_format="channels_first" is the IR's own layout.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import int64s
from tensorbridge.rules.keras.base import NHWC, int_list, keras_op, operand_value, result_dtype
from tensorbridge.rules.keras.ops_calls import population_variance


def _layout(op) -> dict:
    fmt = getattr(op, "data_format", None) or "channels_last"
    return {"layout": NHWC} if fmt == "channels_last" else {}


def _spatial(op, node) -> int:
    return len(node.input_tensors[0].shape) - 2


def _padding(op, attrs: dict) -> dict:
    padding = str(op.padding).lower()
    if padding == "same":
        attrs["auto_pad"] = "SAME_UPPER"
    elif padding != "valid":
        raise ModelError(f"{op.name}: padding {op.padding!r} is not supported")
    return attrs


def _filter(imp, kernel, perm, suffix):
    """A kernel operand in the IR's [out, in, *k] order (permuted now when it is a weight)."""
    if kernel.const is not None:
        return imp.const(np.ascontiguousarray(np.transpose(np.asarray(kernel.const), perm)), dtype=kernel.dtype)
    return imp.emit("Transpose", [kernel], {"perm": list(perm)}, suffix=suffix)


@keras_op("Conv", "DepthwiseConv", produces="Conv")
def read_op_conv(imp, op, args, kwargs, node):
    """ops.conv(x, kernel [*k, in/groups, out]) and ops.depthwise_conv(x, kernel [*k, in, multiplier])."""
    x, kernel = args[0], operand_value(imp, args[1], None)  # a kernel the layer computed: a constant
    rank = _spatial(op, node)
    k_shape = tuple(kernel.shape)
    attrs = _padding(op, {"strides": int_list(op.strides, rank), "dilations": int_list(op.dilation_rate, rank),
                          **_layout(op)})
    if type(op).__name__ == "DepthwiseConv":
        flat = imp.emit("Reshape", [kernel, int64s(imp, [*k_shape[:rank], -1])], suffix="flat")
        w = _filter(imp, flat, (rank, *range(rank)), "oihw")
        w = imp.emit("Unsqueeze", [w, int64s(imp, [1])], suffix="weight")
        attrs["group"] = int(k_shape[rank])
    else:
        w = _filter(imp, kernel, (rank + 1, rank, *range(rank)), "oihw")
        channels = node.input_tensors[0].shape[-1 if attrs.get("layout") else 1]
        if isinstance(channels, int) and channels != k_shape[rank]:
            attrs["group"] = channels // int(k_shape[rank])
    return imp.emit("Conv", [x, w], attrs)


@keras_op("ConvTranspose", produces="ConvTranspose")
def read_op_conv_transpose(imp, op, args, kwargs, node):
    """ops.conv_transpose(x, kernel [*k, out, in]); "same" padding gives stride x the input size."""
    x, kernel = args[0], operand_value(imp, args[1], None)
    rank = _spatial(op, node)
    strides = int_list(op.strides, rank)
    attrs = {"strides": strides, "dilations": int_list(op.dilation_rate, rank), **_layout(op)}
    if getattr(op, "output_padding", None) is not None:
        attrs["output_padding"] = int_list(op.output_padding, rank)
    if str(op.padding).lower() == "same":
        shape = tuple(node.input_tensors[0].shape)
        spatial = shape[1:-1] if attrs.get("layout") else shape[2:]
        if not all(isinstance(d, int) for d in spatial):
            raise ModelError(f"{op.name}: a 'same' transposed convolution needs static spatial sizes")
        extra = attrs.get("output_padding", [0] * rank)
        attrs.update(auto_pad="SAME_UPPER", output_shape=[d * s + e for d, s, e in zip(spatial, strides, extra)])
    return imp.emit("ConvTranspose", [x, _filter(imp, kernel, (rank + 1, rank, *range(rank)), "iohw")], attrs)


@keras_op("MaxPool", "AveragePool", produces=("MaxPool", "AveragePool"))
def read_op_pool(imp, op, args, kwargs, node):
    rank = _spatial(op, node)
    k = int_list(op.pool_size, rank)
    attrs = _padding(op, {"kernel_shape": k, "strides": int_list(op.strides or k, rank), **_layout(op)})
    return imp.emit(type(op).__name__, [args[0]], attrs)


@keras_op("AdaptiveAveragePool", "AdaptiveMaxPool", produces=("AveragePool", "MaxPool"))
def read_op_adaptive_pool(imp, op, args, kwargs, node):
    """Adaptive pooling to an output size that divides the input: windows of input / output, not overlapping."""
    shape = tuple(node.input_tensors[0].shape)
    layout = _layout(op)
    spatial = shape[1:-1] if layout else shape[2:]
    out = int_list(op.output_size, len(spatial))
    if not all(isinstance(d, int) and d % o == 0 for d, o in zip(spatial, out)):
        raise ModelError(f"{op.name}: adaptive pooling to {out} from {list(spatial)} (not a divisor) is not supported")
    k = [d // o for d, o in zip(spatial, out)]
    kind = "MaxPool" if type(op).__name__ == "AdaptiveMaxPool" else "AveragePool"
    return imp.emit(kind, [args[0]], {"kernel_shape": k, "strides": k, **layout})


@keras_op("Resize", produces="Resize")
def read_op_resize(imp, op, args, kwargs, node):
    """ops.image.resize: TensorFlow's bilinear and nearest kernels with half-pixel centres, no antialiasing."""
    if op.interpolation not in ("bilinear", "nearest") or op.antialias or op.crop_to_aspect_ratio or \
            op.pad_to_aspect_ratio:
        raise ModelError(f"{op.name}: image.resize with interpolation={op.interpolation!r}, antialias, or an aspect "
                         "ratio kept is not supported")
    if not _layout(op):
        raise ModelError(f"{op.name}: image.resize of channels-first images is not supported")
    attrs = tf_semantics.resize_attrs(op.interpolation == "bilinear", False, True)
    return tf_semantics.resize(imp, args[0], int64s(imp, list(op.size)), {**attrs, "layout": NHWC})


@keras_op("Normalize", produces=("ReduceL2", "ReduceL1"))
def read_op_normalize(imp, op, args, kwargs, node):
    """ops.normalize (UnitNormalization's call): x / max(||x||_p, epsilon) along an axis."""
    x = args[0]
    if int(op.order) not in (1, 2):
        raise ModelError(f"{op.name}: normalize with order={op.order} is not supported")
    axis = int64s(imp, [int(op.axis)])
    norm = imp.emit("ReduceL2" if int(op.order) == 2 else "ReduceL1", [x, axis], {"keepdims": 1}, suffix="norm")
    if op.epsilon is None:
        import keras

        eps = keras.config.epsilon()
    else:
        eps = op.epsilon
    floor = imp.emit("Max", [norm, imp.const(eps, dtype=result_dtype(node))], suffix="floored")
    return imp.emit("Div", [x, floor])


@keras_op("Moments", produces="ReduceMean")
def read_op_moments(imp, op, args, kwargs, node):
    """ops.moments: (mean, population variance) over the axes."""
    axes = int64s(imp, [int(a) for a in np.atleast_1d(op.axes)])
    mean, var = population_variance(imp, args[0], axes, bool(op.keepdims), "variance")
    if not op.keepdims:
        mean = imp.emit("Squeeze", [mean, axes], suffix="mean_out")
    return [mean, var]


@keras_op("DepthToSpace", "SpaceToDepth", produces=("DepthToSpace", "SpaceToDepth"))
def read_op_depth_space(imp, op, args, kwargs, node):
    attrs = {"blocksize": int(op.block_size), **_layout(op)}
    if type(op).__name__ == "DepthToSpace":
        attrs["mode"] = "DCR"
    return imp.emit(type(op).__name__, [args[0]], attrs)
