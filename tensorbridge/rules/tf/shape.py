"""TensorFlow GraphDef ops -> IR: reshapes, joins and splits, slices, gathers, padding, fills.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.tf.base import (
    as_int64,
    attr,
    const_data,
    tf_op,
)


@tf_op("Reshape", produces="Reshape")
def read_reshape(imp, n, ins):
    return imp.emit("Reshape", [ins[0], as_int64(imp, ins[1], "shape")])


@tf_op("Squeeze", produces="Squeeze")
def read_squeeze(imp, n, ins):
    dims = attr(n, "squeeze_dims", []) or []
    return imp.emit("Squeeze", [ins[0]] + ([imp.const(dims)] if dims else []))


@tf_op("ExpandDims", produces="Unsqueeze")
def read_expanddims(imp, n, ins):
    axis = const_data(ins[1], "the axis").astype(np.int64).reshape(-1)
    return imp.emit("Unsqueeze", [ins[0], imp.const(axis)])


@tf_op("ConcatV2", produces="Concat")
def read_concatv2(imp, n, ins):
    axis = int(const_data(ins[-1], "the concat axis"))
    return imp.emit("Concat", ins[:-1], {"axis": axis})


@tf_op("Pad", "PadV2", "MirrorPad", produces="Pad")
def read_pad(imp, n, ins):
    p = const_data(ins[1], "paddings").astype(np.int64)
    args = [ins[0], imp.const(list(p[:, 0]) + list(p[:, 1]))]
    if n.op == "PadV2":
        args.append(ins[2])
    mode = "constant"
    if n.op == "MirrorPad":
        mode = "reflect" if attr(n, "mode") == "REFLECT" else "symmetric"
        if mode == "symmetric":
            raise ModelError(f"{n.name}: MirrorPad SYMMETRIC is not supported")
    return imp.emit("Pad", args, {"mode": mode})


@tf_op("Transpose", produces="Transpose")
def read_transpose(imp, n, ins):
    return imp.emit("Transpose", [ins[0]], {"perm": [int(p) for p in const_data(ins[1], "the permutation")]})


@tf_op("Shape", produces="Shape")
def read_shape(imp, n, ins):
    import tensorflow as tf

    y = imp.emit("Shape", [ins[0]], suffix="i64")
    out = tf.as_dtype(n.attr["out_type"].type).as_numpy_dtype if "out_type" in n.attr else np.int32
    return imp.emit("Cast", [y], {"to": np.dtype(out).name})


@tf_op("StridedSlice", produces="Slice")
def read_stridedslice(imp, n, ins):
    x, begin, end, strides = ins
    b, e, s = (list(const_data(v, "slice bounds").astype(np.int64)) for v in (begin, end, strides))
    if attr(n, "ellipsis_mask", 0) or attr(n, "new_axis_mask", 0):
        raise ModelError(f"{n.name}: StridedSlice with ellipsis/new-axis masks is not supported")
    big = 2**62
    for i in range(len(b)):
        if attr(n, "begin_mask", 0) >> i & 1:
            b[i] = 0 if s[i] > 0 else big
        if attr(n, "end_mask", 0) >> i & 1:
            e[i] = big if s[i] > 0 else -big
    shrink = [i for i in range(len(b)) if attr(n, "shrink_axis_mask", 0) >> i & 1]
    for i in shrink:
        e[i], s[i] = (b[i] + 1 if b[i] != -1 else big), 1
    y = imp.emit("Slice", [x, imp.const(b), imp.const(e), imp.const(list(range(len(b)))), imp.const(s)],
                 suffix="slice" if shrink else "")
    return imp.emit("Squeeze", [y, imp.const(shrink)]) if shrink else y


@tf_op("Pack", produces="Concat")
def read_pack(imp, n, ins):
    axis = int(attr(n, "axis", 0))
    if axis < 0:
        axis += len(ins[0].shape) + 1
    parts = [imp.emit("Unsqueeze", [v, imp.const([axis])], suffix=f"item{i}") for i, v in enumerate(ins)]
    return imp.emit("Concat", parts, {"axis": axis})


@tf_op("GatherV2", produces="Gather")
def read_gatherv2(imp, n, ins):
    axis = int(const_data(ins[2], "the gather axis"))
    return imp.emit("Gather", ins[:2], {"axis": axis})


@tf_op("Tile", produces="Tile")
def read_tile(imp, n, ins):
    return imp.emit("Tile", [ins[0], as_int64(imp, ins[1], "multiples")])


@tf_op("Fill", produces="ConstantOfShape")
def read_fill(imp, n, ins):
    return imp.emit("ConstantOfShape", [as_int64(imp, ins[0], "dims")],
                    {"value": const_data(ins[1], "the fill value").reshape(1)})


@tf_op("Split", produces="Split")
def read_split(imp, n, ins):
    axis, x = int(const_data(ins[0], "the split axis")), ins[1]
    k = int(attr(n, "num_split"))
    out = imp.emit("Split", [x], {"axis": axis, "num_outputs": k}, outputs=k)
    return out if isinstance(out, list) else [out]


@tf_op("SplitV", produces="Split")
def read_splitv(imp, n, ins):
    x, sizes, axis = ins
    k = int(attr(n, "num_split"))
    out = imp.emit("Split", [x, imp.const(const_data(sizes, "split sizes").astype(np.int64))],
                   {"axis": int(const_data(axis, "the split axis"))}, outputs=k)
    return out if isinstance(out, list) else [out]
