"""TensorFlow GraphDef ops -> IR: reshapes, joins and splits, slices, gathers, padding, fills.

Converters take (importer, node_def, input values) and return the output value(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import as_int64, reverse, unstack
from tensorbridge.rules.tf.base import (
    NHWC,
    attr,
    const_data,
    dtype_attr,
    require_nhwc,
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
        if attr(n, "mode") != "REFLECT":
            return tf_semantics.symmetric_pad(imp, ins[0], p)
        mode = "reflect"
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
    masks = {f"{k}_mask": int(attr(n, f"{k}_mask", 0)) for k in ("begin", "end", "ellipsis", "new_axis", "shrink_axis")}
    return tf_semantics.strided_slice(imp, *ins, **masks)


@tf_op("Pack", produces="Concat")
def read_pack(imp, n, ins):
    axis = int(attr(n, "axis", 0))
    if axis < 0:
        axis += len(ins[0].shape) + 1
    parts = [imp.emit("Unsqueeze", [v, imp.const([axis])], suffix=f"item{i}") for i, v in enumerate(ins)]
    return imp.emit("Concat", parts, {"axis": axis})


@tf_op("GatherV2", produces=("Gather", "GatherND"))
def read_gatherv2(imp, n, ins):
    axis = int(const_data(ins[2], "the gather axis"))
    return tf_semantics.gather(imp, ins[0], ins[1], axis, int(attr(n, "batch_dims", 0)))


@tf_op("GatherNd", produces="GatherND")
def read_gathernd(imp, n, ins):
    return imp.emit("GatherND", [ins[0], as_int64(imp, ins[1], "indices")])


@tf_op("ScatterNd", produces="ScatterND")
def read_scatternd(imp, n, ins):
    return tf_semantics.scatter_nd(imp, *ins[:3])


#: TensorScatter* -> the ScatterND reduction (Sub adds the negated updates)
_TENSOR_SCATTER = {"TensorScatterUpdate": "none", "TensorScatterAdd": "add", "TensorScatterSub": "add",
                   "TensorScatterMax": "max", "TensorScatterMin": "min"}


@tf_op(*_TENSOR_SCATTER, produces="ScatterND")
def read_tensorscatter(imp, n, ins):
    x, indices, updates = ins[:3]
    if n.op == "TensorScatterSub":
        updates = imp.emit("Neg", [updates], suffix="negated")
    return imp.emit("ScatterND", [x, as_int64(imp, indices, "indices"), updates],
                    {"reduction": _TENSOR_SCATTER[n.op]})


@tf_op("BroadcastTo", produces="Expand")
def read_broadcastto(imp, n, ins):
    return imp.emit("Expand", [ins[0], as_int64(imp, ins[1], "shape")])


@tf_op("Range", produces="Range")
def read_range(imp, n, ins):
    return imp.emit("Range", ins[:3])


@tf_op("Slice", produces="Slice")
def read_slice(imp, n, ins):
    return tf_semantics.slice_by_size(imp, *ins[:3])


@tf_op("ReverseV2", produces="Slice")
def read_reversev2(imp, n, ins):
    return reverse(imp, ins[0], const_data(ins[1], "the reversed axes"))


@tf_op("ReverseSequence", produces="ReverseSequence")
def read_reversesequence(imp, n, ins):
    return imp.emit("ReverseSequence", [ins[0], as_int64(imp, ins[1], "lengths")],
                    {"batch_axis": int(attr(n, "batch_dim", 0)), "time_axis": int(attr(n, "seq_dim"))})


@tf_op("OneHot", produces="OneHot")
def read_onehot(imp, n, ins):
    return tf_semantics.one_hot(imp, *ins[:4], int(attr(n, "axis", -1)))


@tf_op("Unpack", produces="Split")
def read_unpack(imp, n, ins):
    return unstack(imp, ins[0], int(attr(n, "axis", 0)), int(attr(n, "num")))


@tf_op("Size", produces="Size")
def read_size(imp, n, ins):
    return tf_semantics.cast_to(imp, imp.emit("Size", ins[:1], suffix="i64"), dtype_attr(n, "out_type", np.int32))


@tf_op("Rank", produces=())
def read_rank(imp, n, ins):
    if ins[0].shape is None:
        raise ModelError(f"{n.name}: Rank needs its input's rank")
    return imp.const(len(ins[0].shape), np.int32)


@tf_op("Where", produces="NonZero")
def read_where(imp, n, ins):
    return tf_semantics.where_indices(imp, ins[0])


@tf_op("Unique", "UniqueWithCounts", produces="Unique")
def read_unique(imp, n, ins):
    return tf_semantics.unique(imp, ins[0], dtype_attr(n, "out_idx", np.int32), counts=n.op == "UniqueWithCounts")


@tf_op("SpaceToBatchND", produces=())
def read_spacetobatchnd(imp, n, ins):
    return tf_semantics.space_to_batch(imp, *ins[:3])


@tf_op("BatchToSpaceND", produces=())
def read_batchtospacend(imp, n, ins):
    return tf_semantics.batch_to_space(imp, *ins[:3])


@tf_op("DepthToSpace", "SpaceToDepth", produces=("DepthToSpace", "SpaceToDepth"))
def read_depthtospace(imp, n, ins):
    require_nhwc(n)
    attrs = {"blocksize": int(attr(n, "block_size")), "layout": NHWC}
    return imp.emit(n.op, ins[:1], {**attrs, "mode": "DCR"} if n.op == "DepthToSpace" else attrs)


@tf_op("MatrixBandPart", produces="Trilu")
def read_matrixbandpart(imp, n, ins):
    return tf_semantics.band_part(imp, *ins[:3])


@tf_op("MatrixDiag", "MatrixDiagV2", "MatrixDiagV3", produces=())
def read_matrixdiag(imp, n, ins):
    _main_diagonal_only(n, ins)
    return tf_semantics.matrix_diag(imp, ins[0])


@tf_op("MatrixSetDiag", "MatrixSetDiagV2", "MatrixSetDiagV3", produces="Where")
def read_matrixsetdiag(imp, n, ins):
    _main_diagonal_only(n, ins[1:])
    return tf_semantics.matrix_set_diag(imp, ins[0], ins[1])


def _main_diagonal_only(n, ins):
    """MatrixDiagV2/V3 name the diagonals (k) and the output's size: only the main one, square, is read."""
    if len(ins) > 1 and np.any(const_data(ins[1], "the diagonal index k") != 0):
        raise ModelError(f"{n.name}: only the main diagonal is read (k = 0)")
    for extra in ins[2:4] if n.op.startswith("MatrixDiag") else ():
        if int(const_data(extra, "the diagonal's matrix size")) != -1:
            raise ModelError(f"{n.name}: a diagonal matrix of a given size is not read")


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


@tf_op("XlaDynamicUpdateSlice", produces="ScatterND")
def read_dynamic_update_slice(imp, n, ins):
    return tf_semantics.dynamic_update_slice(imp, *ins[:3])
