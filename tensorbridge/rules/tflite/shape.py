"""TFLite <-> IR: reshapes, transposes, joins and splits, slices, gathers, padding.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ops.infer import norm_axis
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import as_int64, reverse, unstack
from tensorbridge.rules.tflite.base import R, builtin, builtin_row, output_dtype
from tensorbridge.rules.tflite.kernel import (
    NotInteger,
    Rule,
)


@builtin("RESHAPE", produces="Reshape")
def read_reshape(imp, ins, opts):
    x = ins[0]
    if len(ins) > 1 and ins[1] is not None:
        shape = as_int64(imp, ins[1], "shape")
    else:
        shape = imp.const([int(d) for d in opts.NewShapeAsNumpy()], np.int64)
    return imp.emit("Reshape", [x, shape])


def write_reshape(ctx):
    return [ctx.x(0), ctx.index_const("shape", ctx.lw._shape(ctx.node.outputs[0]))], None


R.add_export(("Reshape",), Rule("RESHAPE", write_reshape, keeps_quant=True, int_version=1))
R.add_export(("Flatten",), Rule("RESHAPE", write_reshape, keeps_quant=True, int_version=1))
R.add_export(("Squeeze",), Rule("RESHAPE", write_reshape, keeps_quant=True, int_version=1))
R.add_export(("Unsqueeze",), Rule("RESHAPE", write_reshape, keeps_quant=True, int_version=1))


@builtin("SQUEEZE", produces="Squeeze")
def read_squeeze(imp, ins, opts):
    dims = [int(d) for d in opts.SqueezeDimsAsNumpy()] if opts is not None and opts.SqueezeDimsLength() else []
    return imp.emit("Squeeze", [ins[0]] + ([imp.const(dims, np.int64)] if dims else []))


@builtin("EXPAND_DIMS", produces="Unsqueeze")
def read_expand_dims(imp, ins, opts):
    axis = as_int64(imp, ins[1], "axis")
    if axis.shape == ():
        axis = imp.emit("Reshape", [axis, imp.const([1], np.int64)], suffix="axes")
    return imp.emit("Unsqueeze", [ins[0], axis])


@builtin("TRANSPOSE", produces="Transpose")
def read_transpose(imp, ins, opts):
    perm = ins[1]
    if perm.const is None:
        raise ModelError("TRANSPOSE needs a constant permutation")
    return imp.emit("Transpose", [ins[0]], {"perm": [int(p) for p in perm.const]})


def write_transpose(ctx):
    perm = ctx.node.attrs.get("perm") or list(reversed(range(len(ctx.node.inputs[0].shape))))
    return [ctx.x(0), ctx.index_const("perm", perm)], None


R.add_export(("Transpose",), Rule("TRANSPOSE", write_transpose, keeps_quant=True))


@builtin("CONCATENATION", produces="Concat")
def read_concatenation(imp, ins, opts):
    y = imp.emit("Concat", ins, {"axis": int(opts.Axis())})
    return imp.fused(y, opts.FusedActivationFunction())


@builtin("PACK", produces="Concat")
def read_pack(imp, ins, opts):
    axis = int(opts.Axis())
    rank = len(ins[0].shape) + 1 if ins[0].shape is not None else None
    if axis < 0 and rank is None:
        raise ModelError("PACK with a negative axis needs the input rank")
    axis = norm_axis(axis, rank) if axis < 0 else axis
    parts = [imp.emit("Unsqueeze", [v, imp.const([axis], np.int64)], suffix=f"item{i}") for i, v in enumerate(ins)]
    return imp.emit("Concat", parts, {"axis": axis})


def write_concat(ctx):
    rank = len(ctx.node.outputs[0].shape)
    inputs = [ctx.x(i) for i in range(len(ctx.node.inputs))]
    return inputs, ("ConcatenationOptions", {"Axis": ctx.node.attrs["axis"] % rank,
                                             "FusedActivationFunction": ctx.activation()})


R.add_export(("Concat",), Rule("CONCATENATION", write_concat, data=None, uniform=True))


@builtin("UNPACK", produces="Split")
def read_unpack(imp, ins, opts):
    return unstack(imp, ins[0], int(opts.Axis()), int(opts.Num()))


@builtin("SPLIT", produces="Split")
def read_split(imp, ins, opts):
    axis, x = ins
    n = int(opts.NumSplits())
    a = int(np.asarray(axis.const).ravel()[0])
    out = imp.emit("Split", [x], {"axis": a, "num_outputs": n}, outputs=n)
    return out if isinstance(out, list) else [out]


@builtin("SPLIT_V", produces="Split")
def read_split_v(imp, ins, opts):
    x, sizes, axis = ins
    n = int(opts.NumSplits())
    a = int(np.asarray(axis.const).ravel()[0])
    out = imp.emit("Split", [x, imp.const(np.asarray(sizes.const).astype(np.int64), np.int64)], {"axis": a},
                   outputs=n)
    return out if isinstance(out, list) else [out]


@builtin("STRIDED_SLICE", produces="Slice")
def read_strided_slice(imp, ins, opts):
    return tf_semantics.strided_slice(
        imp, *ins[:4], begin_mask=opts.BeginMask(), end_mask=opts.EndMask(), ellipsis_mask=opts.EllipsisMask(),
        new_axis_mask=opts.NewAxisMask(), shrink_axis_mask=opts.ShrinkAxisMask())


@builtin("SLICE", produces="Slice")
def read_slice(imp, ins, opts):
    return tf_semantics.slice_by_size(imp, *ins[:3])


@builtin("GATHER", produces=("Gather", "GatherND"))
def read_gather(imp, ins, opts):
    return tf_semantics.gather(imp, *ins, int(opts.Axis()) if opts is not None else 0,
                               int(opts.BatchDims()) if opts is not None else 0)


@builtin("GATHER_ND", produces="GatherND")
def read_gather_nd(imp, ins, opts):
    return imp.emit("GatherND", [ins[0], as_int64(imp, ins[1], "indices")])


@builtin("EMBEDDING_LOOKUP", produces="Gather")
def read_embedding_lookup(imp, ins, opts):
    ids, table = ins
    return imp.emit("Gather", [table, ids], {"axis": 0})


@builtin("SCATTER_ND", produces="ScatterND")
def read_scatter_nd(imp, ins, opts):
    return tf_semantics.scatter_nd(imp, *ins)


@builtin("ONE_HOT", produces="OneHot")
def read_one_hot(imp, ins, opts):
    indices, depth, on, off = ins
    return tf_semantics.one_hot(imp, indices, depth, on, off, int(opts.Axis()) if opts is not None else -1)


@builtin("RANGE", produces="Range")
def read_range(imp, ins, opts):
    return imp.emit("Range", ins)


@builtin("REVERSE_V2", produces="Slice")
def read_reverse_v2(imp, ins, opts):
    return reverse(imp, ins[0], tf_semantics.constant(ins[1], "REVERSE_V2's axes"))


@builtin("REVERSE_SEQUENCE", produces="ReverseSequence")
def read_reverse_sequence(imp, ins, opts):
    x, lengths = ins
    return imp.emit("ReverseSequence", [x, as_int64(imp, lengths, "lengths")],
                    {"batch_axis": int(opts.BatchDim()), "time_axis": int(opts.SeqDim())})


@builtin("RANK", produces=())
def read_rank(imp, ins, opts):
    if ins[0].shape is None:
        raise ModelError("RANK needs its input's rank")
    return imp.const(len(ins[0].shape), output_dtype(imp))


@builtin("WHERE", produces="NonZero")
def read_where(imp, ins, opts):
    return tf_semantics.where_indices(imp, ins[0])


@builtin("UNIQUE", produces="Unique")
def read_unique(imp, ins, opts):
    return tf_semantics.unique(imp, ins[0], output_dtype(imp, 1))


@builtin("SPACE_TO_BATCH_ND", produces=())
def read_space_to_batch_nd(imp, ins, opts):
    return tf_semantics.space_to_batch(imp, *ins)


@builtin("BATCH_TO_SPACE_ND", produces=())
def read_batch_to_space_nd(imp, ins, opts):
    return tf_semantics.batch_to_space(imp, *ins)


@builtin("MATRIX_DIAG", produces=())
def read_matrix_diag(imp, ins, opts):
    return tf_semantics.matrix_diag(imp, ins[0])


@builtin("MATRIX_SET_DIAG", produces="Where")
def read_matrix_set_diag(imp, ins, opts):
    return tf_semantics.matrix_set_diag(imp, *ins)


@builtin("SHAPE", produces="Shape")
def read_shape(imp, ins, opts):
    y = imp.emit("Shape", [ins[0]], suffix="i64")
    return imp.emit("Cast", [y], {"to": "int32"})


@builtin("FILL", produces="ConstantOfShape")
def read_fill(imp, ins, opts):
    dims, value = ins
    dims = as_int64(imp, dims, "dims")
    if value.const is None:
        raise ModelError("FILL needs a constant value")
    return imp.emit("ConstantOfShape", [dims], {"value": np.asarray(value.const).reshape(1)})


@builtin("PAD", "PADV2", "MIRROR_PAD", produces="Pad")
def read_pad(imp, ins, opts):
    x, paddings = ins[0], ins[1]
    if paddings.const is None:
        raise ModelError("PAD needs constant paddings")
    p = np.asarray(paddings.const).astype(np.int64)
    pads = list(p[:, 0]) + list(p[:, 1])
    mode = "constant"
    if imp.op_name == "MIRROR_PAD":
        if opts.Mode() == 1:  # SYMMETRIC
            return tf_semantics.symmetric_pad(imp, x, p)
        mode = "reflect"
    args = [x, imp.const(pads, np.int64)]
    if imp.op_name == "PADV2" and len(ins) > 2:
        args.append(ins[2])
    return imp.emit("Pad", args, {"mode": mode})


def write_pad(ctx):
    node = ctx.node
    if node.attrs.get("mode", "constant") != "constant" or node.input(3) is not None:
        raise NotInteger("only constant Pad over all axes is written")
    pads = ctx.const(1)
    value = ctx.const(2)
    if pads is None or value is not None and float(np.asarray(value).ravel()[0]) != 0.0:
        raise NotInteger("Pad is written with constant pads and a zero fill")
    rank = len(node.inputs[0].shape)
    pads = np.asarray(pads, np.int64).ravel()
    return [ctx.x(0), ctx.index_const("paddings", np.stack([pads[:rank], pads[rank:]], 1))], None


R.add_export(("Pad",), Rule("PAD", write_pad, keeps_quant=True))


# -- rows: builtin operators that are one IR op ---------------------------------------------------
builtin_row("TILE", "Tile")
builtin_row("BROADCAST_TO", "Expand")
builtin_row("DENSIFY", "Identity")  # its sparse input is made dense when the importer reads it


@builtin("DYNAMIC_UPDATE_SLICE", produces="ScatterND")
def read_dynamic_update_slice(imp, ins, opts):
    return tf_semantics.dynamic_update_slice(imp, *ins[:3])
