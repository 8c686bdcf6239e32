"""PyTorch -> IR: what mixture-of-experts layers call besides plain ATen: a grouped matrix product (transformers'
torch.library op `transformers::grouped_mm_fallback`, ATen's `_grouped_mm`) and the histogram that counts the
tokens routed to each expert (`aten.histc`).

Both are written with ops every target has: the grouped product as every expert's product masked to the rows of
its group, the histogram as a comparison of each element's bin with every bin.
"""
from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.torch.base import aten, library_op

_GROUPED = ("Shape", "Range", "Unsqueeze", "LessOrEqual", "Cast", "ReduceSum", "Equal", "MatMul", "Mul")


def _positions(imp, x, suffix: str):
    """0, 1, ..., n - 1 for the n entries of `x`'s first axis (n known at run time)."""
    int64 = dict(dtype=np.int64)
    count = imp.emit("Squeeze", [imp.emit("Shape", [x], {"start": 0, "end": 1}, suffix=f"{suffix}_count"),
                                 imp.const([0], **int64)], suffix=f"{suffix}_n")
    return imp.emit("Range", [imp.const(0, **int64), count, imp.const(1, **int64)], suffix=suffix)


def _grouped_product(imp, node, x, weight, offs):
    """Rows of `x` [S, K] in consecutive groups ending at the cumulative `offs` [E], each multiplied by its group's
    matrix of `weight` [E, K, N]; rows past the last offset are zeros (as the fallback leaves them)."""
    xv, wv = imp.value(x), imp.value(weight)
    if len(imp.meta(x).shape) != 2 or len(imp.meta(weight).shape) != 3:
        raise ModelError(f"{node.name}: a grouped matrix product of a 2-D input and 3-D weights is converted, not "
                         f"{len(imp.meta(x).shape)}-D by {len(imp.meta(weight).shape)}-D")
    experts = imp.meta(weight).shape[0]
    ends = imp.emit("Cast", [imp.value(offs)], {"to": "int64"}, suffix="ends")
    rows = _positions(imp, xv, "rows")
    column = imp.emit("Unsqueeze", [ends, imp.const([1], dtype=np.int64)], suffix="ends_col")
    row = imp.emit("Unsqueeze", [rows, imp.const([0], dtype=np.int64)], suffix="rows_row")
    reached = imp.emit("LessOrEqual", [column, row], suffix="reached")  # [E, S]: group g ends at or before row s
    group = imp.emit("ReduceSum", [imp.emit("Cast", [reached], {"to": "int64"}, suffix="reached_count"),
                                   imp.const([0], dtype=np.int64)], {"keepdims": 1}, suffix="group")
    ids = imp.const(np.arange(imp.dim(experts)).reshape(-1, 1), dtype=np.int64)
    member = imp.emit("Cast", [imp.emit("Equal", [group, ids], suffix="member")], {"to": str(xv.dtype)},
                      suffix="member_mask")
    products = imp.emit("MatMul", [imp.emit("Unsqueeze", [xv, imp.const([0], dtype=np.int64)], suffix="shared"), wv],
                        suffix="per_expert")
    masked = imp.emit("Mul", [products, imp.emit("Unsqueeze", [member, imp.const([2], dtype=np.int64)],
                                                 suffix="member_col")], suffix="masked")
    return imp.emit("ReduceSum", [masked, imp.const([0], dtype=np.int64)], {"keepdims": 0})


@library_op("transformers.grouped_mm_fallback", produces=_GROUPED)
def read_transformers_grouped_mm(imp, node, x, weight, offs):
    return _grouped_product(imp, node, x, weight, offs)


@aten("_grouped_mm", produces=_GROUPED)
def read_grouped_mm(imp, node, x, weight, offs=None, bias=None, out_dtype=None):
    if offs is None or bias is not None or out_dtype is not None:
        raise ModelError(f"{node.name}: _grouped_mm is converted with offsets, without a bias or an output dtype")
    return _grouped_product(imp, node, x, weight, offs)


@aten("histc", produces=("ReduceMin", "ReduceMax", "Floor", "Equal", "And", "ReduceSum"))
def read_histc(imp, node, x, bins=100, min=0, max=0):  # noqa: A002 (ATen's argument names)
    """Counts of `x`'s elements in `bins` equal bins over [min, max] (over the data's range when min == max, widened
    by one each way when that is empty); the maximum falls in the last bin; elements outside are not counted."""
    xv = imp.value(x)
    flat = imp.emit("Reshape", [xv, imp.const([-1], dtype=np.int64)], suffix="flat")
    if min == max:
        lo = imp.emit("ReduceMin", [flat], {"keepdims": 0}, suffix="data_min")
        hi = imp.emit("ReduceMax", [flat], {"keepdims": 0}, suffix="data_max")
        empty = imp.emit("Equal", [lo, hi], suffix="empty_range")
        one = imp.const(1.0, like=xv)
        lo = imp.emit("Where", [empty, imp.emit("Sub", [lo, one], suffix="widened_min"), lo], suffix="low")
        hi = imp.emit("Where", [empty, imp.emit("Add", [hi, one], suffix="widened_max"), hi], suffix="high")
    else:
        lo, hi = imp.const(float(min), like=xv), imp.const(float(max), like=xv)
    scaled = imp.emit("Div", [imp.emit("Mul", [imp.emit("Sub", [flat, lo], suffix="offset"),
                                                imp.const(float(bins), like=xv)], suffix="scaled"),
                              imp.emit("Sub", [hi, lo], suffix="width")], suffix="position")
    position = imp.emit("Cast", [imp.emit("Floor", [scaled], suffix="floor")], {"to": "int64"}, suffix="bin_raw")
    position = imp.emit("Min", [position, imp.const(bins - 1, dtype=np.int64)], suffix="bin")
    inside = imp.emit("And", [imp.emit("GreaterOrEqual", [flat, lo], suffix="above_min"),
                              imp.emit("LessOrEqual", [flat, hi], suffix="below_max")], suffix="inside")
    hits = imp.emit("And", [imp.emit("Equal", [imp.emit("Unsqueeze", [position, imp.const([1], dtype=np.int64)],
                                                        suffix="bin_col"),
                                               imp.const(np.arange(bins).reshape(1, -1), dtype=np.int64)],
                                     suffix="in_bin"),
                            imp.emit("Unsqueeze", [inside, imp.const([1], dtype=np.int64)], suffix="inside_col")],
                    suffix="hits")
    counts = imp.emit("Cast", [hits], {"to": str(xv.dtype)}, suffix="hit_counts")
    return imp.emit("ReduceSum", [counts, imp.const([0], dtype=np.int64)], {"keepdims": 0})
