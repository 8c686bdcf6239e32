"""ONNX import cases an opset-history row cannot express, each a named function.

Every handler has the signature (ctx, ir_op, inputs, attrs, output_names, node_name, meta)
and returns the IR values that stand for the ONNX node's outputs.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import Blocker, ModelError, UnsupportedError
from tensorbridge.ir import dtypes
from tensorbridge.ops.infer import norm_axis

#: attributes a special handler consumes on top of the IR op's own.
EXTRA_ATTRS = {
    "upsample": {"mode", "scales", "height_scale", "width_scale"},
    "resize_v10": set(),
    "legacy_broadcast": {"broadcast", "axis"},
    "cast_legacy": set(),
}


def constant(ctx, ir_op, inputs, attrs, outs, name, meta):
    (key, value), = attrs.items()
    if key in ("value", "value_float", "value_int"):
        arr = np.asarray(value, dtype={"value_float": np.float32, "value_int": np.int64}.get(key))
    elif key in ("value_floats", "value_ints"):
        arr = np.asarray(value, dtype=np.float32 if key == "value_floats" else np.int64)
    elif key in ("value_string", "value_strings"):
        arr = np.asarray(value, dtype=object)
    else:
        raise UnsupportedError([Blocker("Constant", name, f"attribute {key!r} is not supported")], "ONNX import")
    v = ctx.graph.add_constant(outs[0], arr)
    return [v]


def upsample(ctx, ir_op, inputs, attrs, outs, name, meta):
    mode = attrs.get("mode", "nearest")
    if len(inputs) > 1 and inputs[1] is not None:
        scales = inputs[1]
    elif "scales" in attrs:
        scales = ctx.const(f"{name}_scales", np.asarray(attrs["scales"], np.float32))
    else:  # opset 7 and older spelled 4-D scales as height/width
        scales = ctx.const(f"{name}_scales", np.asarray(
            [1, 1, attrs.get("height_scale", 1.0), attrs.get("width_scale", 1.0)], np.float32))
    return ctx.emit("Resize", [inputs[0], None, scales], _legacy_resize_attrs(mode), outs, name, meta)


def _legacy_resize_attrs(mode: str) -> dict:
    mode = "linear" if mode in ("linear", "bilinear") else mode
    return {"mode": mode, "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor"}


def resize_v10(ctx, ir_op, inputs, attrs, outs, name, meta):
    return ctx.emit("Resize", [inputs[0], None, inputs[1]], _legacy_resize_attrs(attrs.get("mode", "nearest")),
                    outs, name, meta)


def batchnorm_legacy_outputs(ctx, ir_op, inputs, attrs, outs, name, meta):
    # Old BatchNormalization had training-only outputs (saved mean/var); keep the first three.
    if any(outs[3:]):
        consumers = [o for o in outs[3:] if o]
        raise UnsupportedError([Blocker("BatchNormalization", name,
                                        f"legacy training outputs {consumers} are not supported")], "ONNX import")
    return ctx.emit("BatchNormalization", inputs, attrs, outs[:3], name, meta)


def legacy_broadcast(ctx, ir_op, inputs, attrs, outs, name, meta):
    """Opset < 7 binary ops: with `axis`, B aligns at that axis of A (not from the right)."""
    axis = attrs.pop("axis", None)
    attrs.pop("broadcast", None)
    a, b = inputs
    if axis is not None and b.shape is not None and a.shape is not None:
        trailing = len(a.shape) - norm_axis(axis, len(a.shape)) - len(b.shape)
        if trailing > 0:
            shape = list(b.shape) + [1] * trailing
            b = ctx.op("Reshape", b, ctx.const(f"{name}_bshape", np.asarray(shape, np.int64)),
                       name=f"{name}_align", meta=meta)
    elif axis is not None:
        raise UnsupportedError([Blocker(ir_op, name, "legacy broadcast with unknown ranks")], "ONNX import")
    return ctx.emit(ir_op, [a, b], attrs, outs, name, meta)


def cast_legacy(ctx, ir_op, inputs, attrs, outs, name, meta):
    to = attrs["to"]
    if isinstance(to, str):
        to = to.lower()
        to = {"float": "float32", "double": "float64"}.get(to, to)
    else:
        from tensorbridge.rules.onnx.base import ir_dtype
        to = ir_dtype(to)
    return ctx.emit("Cast", inputs, {"to": dtypes.name(dtypes.dtype(to))}, outs, name, meta)


def softmax_legacy(ctx, ir_op, inputs, attrs, outs, name, meta):
    """Before opset 13, softmax ran over the input flattened to 2-D at `axis`."""
    x = inputs[0]
    axis = attrs.get("axis", 1)
    if x.shape is None:
        raise UnsupportedError([Blocker(ir_op, name, "opset < 13 softmax needs a known input rank")],
                               "ONNX import")
    rank = len(x.shape)
    axis = norm_axis(axis, rank)
    if axis == rank - 1:
        return ctx.emit(ir_op, [x], {"axis": -1}, outs, name, meta)
    flat = ctx.op("Flatten", x, name=f"{name}_flatten", meta=meta, axis=axis)
    soft = ctx.op(ir_op, flat, name=f"{name}_2d", meta=meta, axis=-1)
    shape = ctx.op("Shape", x, name=f"{name}_shape", meta=meta)
    return ctx.emit("Reshape", [soft, shape], {}, outs, name, meta)


def group_norm_per_group(ctx, ir_op, inputs, attrs, outs, name, meta):
    """Opset 18 GroupNormalization took scale/bias per group; the IR takes them per channel."""
    x, scale, bias = inputs
    if scale.const is None or bias.const is None or x.shape is None or not isinstance(x.shape[1], int):
        raise UnsupportedError([Blocker(ir_op, name, "per-group scale/bias must be constants with known channels")],
                               "ONNX import")
    per = x.shape[1] // attrs["num_groups"]
    s = ctx.const(f"{name}_scale", np.repeat(scale.const, per))
    b = ctx.const(f"{name}_bias", np.repeat(bias.const, per))
    if per * attrs["num_groups"] != x.shape[1]:
        raise ModelError(f"{name}: channels not divisible by num_groups")
    return ctx.emit(ir_op, [x, s, b], attrs, outs, name, meta)


def split_equal_parts(ctx, ir_op, inputs, attrs, outs, name, meta):
    """Before opset 18, Split without sizes made as many equal parts as it had outputs."""
    if len(inputs) < 2 or inputs[1] is None:
        attrs["num_outputs"] = len(outs)
    return ctx.emit(ir_op, inputs, attrs, outs, name, meta)
