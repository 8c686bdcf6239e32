"""What TensorFlow's ops mean, in IR ops: shared by the TensorFlow (GraphDef) and TFLite readers, whose
operators compute the same (tf.one_hot and ONE_HOT, tf.math.unsorted_segment_max and UNSORTED_SEGMENT_MAX).

Each function takes the reader (`imp.emit`, `imp.const`) and IR values and returns the IR value(s). Where
TensorFlow's meaning differs from the IR op of the same name (a negative one-hot index, an empty segment),
the difference is spelled out in IR ops here, once; so are their control flow (While / WHILE, If / IF).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ops.control import computed_in
from tensorbridge.passes.fold_constants import fold_value
from tensorbridge.rules.ir_spellings import as_int64, reduction_identity
from tensorbridge.rules.ir_spellings import int64s as _ints

#: past every index: a slice end meaning "to the end" (forward) or "past the start" (backward)
_BIG = 2**62


def constant(v, what: str) -> np.ndarray:
    """An operand that must be known when the model is read (computed now from constants and static shapes)."""
    data = fold_value(v)
    if data is None:
        raise ModelError(f"{what} must be a constant")
    return np.asarray(data)


def cast_to(imp, v, dtype):
    """`v` as `dtype` (an index output TensorFlow gives as int32 where the IR gives int64)."""
    return v if v.dtype == np.dtype(dtype) else imp.emit("Cast", [v], {"to": dtypes.name(np.dtype(dtype))})


def one_hot(imp, indices, depth, on, off, axis: int):
    """tf.one_hot: an index outside [0, depth), negative ones included, gives a row of `off` (the IR's OneHot,
    as ONNX's, counts a negative index from the end)."""
    idx = as_int64(imp, indices, "indices")
    depth = as_int64(imp, depth, "depth")
    depth1 = imp.emit("Reshape", [depth, _ints(imp, [1])], suffix="depth1") if depth.shape != (1,) else depth
    negative = imp.emit("Less", [idx, _ints(imp, 0)], suffix="negative")
    depth0 = imp.emit("Reshape", [depth1, _ints(imp, [])], suffix="depth0")
    idx = imp.emit("Where", [negative, depth0, idx], suffix="in_range")
    values = imp.emit("Concat", [imp.emit("Reshape", [v, _ints(imp, [1])], suffix=tag)
                                 for v, tag in ((off, "off"), (on, "on"))], {"axis": 0}, suffix="values")
    return imp.emit("OneHot", [idx, depth1, values], {"axis": axis})


def symmetric_pad(imp, x, pads: np.ndarray):
    """MirrorPad SYMMETRIC (the edge repeated: [a b c] padded by 2 -> [b a a b c c b]): each padded axis is the
    reversed slices of its first and last rows around it."""
    for axis, (before, after) in enumerate(np.asarray(pads, np.int64).reshape(-1, 2)):
        parts = []
        if before:
            parts.append(imp.emit("Slice", [x, _ints(imp, [before - 1]), _ints(imp, [-_BIG]),
                                            _ints(imp, [axis]), _ints(imp, [-1])],
                                  suffix=f"before{axis}"))
        parts.append(x)
        if after:
            parts.append(imp.emit("Slice", [x, _ints(imp, [-1]), _ints(imp, [-1 - int(after)]),
                                            _ints(imp, [axis]), _ints(imp, [-1])],
                                  suffix=f"after{axis}"))
        if len(parts) > 1:
            x = imp.emit("Concat", parts, {"axis": axis}, suffix=f"axis{axis}")
    return x


def slice_by_size(imp, x, begin, size):
    """tf.slice (Slice, SLICE): `size` elements from `begin`, -1 running to the end; begin and size may be computed
    (a loop's index)."""
    b, sz = as_int64(imp, begin, "begin"), as_int64(imp, size, "size")
    if b.const is not None and sz.const is not None:
        end = imp.const(np.where(sz.const == -1, _BIG, b.const + sz.const), np.int64)
    elif sz.const is not None and np.all(sz.const != -1):
        end = imp.emit("Add", [b, sz], suffix="end")
    else:
        to_end = imp.emit("Equal", [sz, imp.const(-1, np.int64)], suffix="to_end")
        end = imp.emit("Where", [to_end, imp.const(_BIG, np.int64), imp.emit("Add", [b, sz], suffix="end")])
    return imp.emit("Slice", [x, b, end])


def strided_slice(imp, x, begin, end, strides, *, begin_mask: int, end_mask: int, ellipsis_mask: int,
                  new_axis_mask: int, shrink_axis_mask: int):
    """tf.strided_slice (StridedSlice, STRIDED_SLICE) with constant bounds: `x[..., 1:3, tf.newaxis, 0]`. Entry i
    of the bounds is the ellipsis (the dims no other entry names), a new axis of size 1, or a dim's slice, taken
    whole where its begin/end mask bit is set and dropped where its shrink bit is. A Slice of the dims named,
    then a Squeeze of the dropped ones and an Unsqueeze of the new ones."""
    if any(fold_value(v) is None for v in (begin, end, strides)):
        return _computed_strided_slice(imp, x, begin, end, strides, begin_mask | end_mask | ellipsis_mask
                                       | new_axis_mask | shrink_axis_mask)
    b, e, s = (constant(v, "the slice bounds").astype(np.int64).ravel().tolist() for v in (begin, end, strides))
    def bit(mask: int, i: int) -> bool:
        return bool(mask >> i & 1)

    ellipses = [i for i in range(len(b)) if bit(ellipsis_mask, i)]
    named = [i for i in range(len(b)) if not bit(ellipsis_mask, i) and not bit(new_axis_mask, i)]
    if ellipses and x.shape is None:
        raise ModelError("a strided slice with an ellipsis needs its input's rank")
    rank = len(x.shape) if x.shape is not None else len(named)
    if len(ellipses) > 1 or len(named) > rank:
        raise ModelError(f"a strided slice of {len(named)} dims and {len(ellipses)} ellipses on a tensor of rank "
                         f"{rank}")
    axes, starts, ends, steps, dropped, new = [], [], [], [], [], []
    dim = out = 0  # the next input dim an entry names, the output dims so far
    for i in range(len(b)):
        if bit(ellipsis_mask, i):
            dim += rank - len(named)
            out += rank - len(named)
        elif bit(new_axis_mask, i):
            new.append(out)
            out += 1
        else:
            start = (0 if s[i] > 0 else _BIG) if bit(begin_mask, i) else b[i]
            stop = (_BIG if s[i] > 0 else -_BIG) if bit(end_mask, i) else e[i]
            if bit(shrink_axis_mask, i):
                start, stop, step = b[i], (b[i] + 1 if b[i] != -1 else _BIG), 1
                dropped.append(dim)
            else:
                step = s[i]
                out += 1
            axes.append(dim)
            starts.append(start)
            ends.append(stop)
            steps.append(step)
            dim += 1
    y = x
    if axes:
        y = imp.emit("Slice", [x, *(_ints(imp, v) for v in (starts, ends, axes, steps))],
                     suffix="slice" if dropped or new else "")
    if dropped:
        y = imp.emit("Squeeze", [y, _ints(imp, dropped)], suffix="squeezed" if new else "")
    if new:
        y = imp.emit("Unsqueeze", [y, _ints(imp, new)])
    return y if y is not x else imp.emit("Identity", [x])


def _computed_strided_slice(imp, x, begin, end, strides, masks: int):
    """A strided slice whose bounds are computed (a count of kept rows): a Slice of the leading dims the bounds
    name, as given; masks would need the bounds' values."""
    if masks or begin.shape is None or not isinstance(begin.shape[0], int):
        raise ModelError("a strided slice with computed bounds and begin/end/ellipsis/new-axis/shrink masks")
    axes = imp.const(np.arange(begin.shape[0]), np.int64)
    return imp.emit("Slice", [x, *(as_int64(imp, v, tag) for v, tag in ((begin, "begin"), (end, "end"))), axes,
                              as_int64(imp, strides, "strides")])


def scatter_nd(imp, indices, updates, shape):
    """tf.scatter_nd: updates summed into zeros of `shape` (repeated indices add up)."""
    zeros = imp.emit("ConstantOfShape", [as_int64(imp, shape, "shape")],
                     {"value": np.zeros(1, updates.dtype or np.float32)}, suffix="zeros")
    return imp.emit("ScatterND", [zeros, as_int64(imp, indices, "indices"), updates], {"reduction": "add"})


#: segment reduction -> the ScatterND reduction
_SEGMENT = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}


def segment_reduce(imp, data, segment_ids, num_segments, kind: str):
    """tf.math.(unsorted_)segment_{sum,prod,max,min}: rows of `data` reduced into their segment. `num_segments`
    None: the sorted ops, one more segment than the largest id, an empty one holding 0; the unsorted ops' empty
    segment holds the reduction's identity (the dtype's lowest for max, highest for min)."""
    reduction = _SEGMENT[kind]
    dt = np.dtype(data.dtype or np.float32)
    ids = as_int64(imp, segment_ids, "ids")
    if num_segments is None:
        top = imp.emit("ReduceMax", [ids], {"keepdims": 0}, suffix="top")
        count = imp.emit("Add", [top, _ints(imp, 1)], suffix="count")
    else:
        count = as_int64(imp, num_segments, "count")
    count = imp.emit("Reshape", [count, _ints(imp, [1])], suffix="count1")
    rank = len(ids.shape) if ids.shape is not None else 1
    rows = imp.emit("Slice", [imp.emit("Shape", [data], suffix="shape"), _ints(imp, [rank]),
                              _ints(imp, [_BIG])], suffix="rows")
    shape = imp.emit("Concat", [count, rows], {"axis": 0}, suffix="out_shape")
    init = imp.emit("ConstantOfShape", [shape], {"value": np.asarray([reduction_identity(reduction, dt)], dt)},
                    suffix="init")
    where = imp.emit("Unsqueeze", [ids, _ints(imp, [-1])], suffix="where")
    if num_segments is not None or kind in ("sum", "prod"):
        return imp.emit("ScatterND", [init, where, data], {"reduction": reduction})
    reduced = imp.emit("ScatterND", [init, where, data], {"reduction": reduction}, suffix="reduced")
    segments = imp.emit("Slice", [shape, _ints(imp, [0]), _ints(imp, [1])], suffix="segments")
    hit = imp.emit("ScatterND", [imp.emit("ConstantOfShape", [segments], {"value": np.zeros(1, bool)}, suffix="none"),
                                 where, imp.emit("ConstantOfShape", [imp.emit("Shape", [ids], suffix="id_shape")],
                                                 {"value": np.ones(1, bool)}, suffix="ones")], suffix="hit")
    hit = imp.emit("Reshape", [hit, imp.emit("Concat", [segments, _ints(imp, [1] * (len(data.shape) - rank))],
                                             {"axis": 0}, suffix="hit_shape")], suffix="hit_rows")
    return imp.emit("Where", [hit, reduced, imp.const(0, dtype=dt)])


def space_to_batch(imp, x, block, paddings):
    """tf.space_to_batch_nd over the spatial axes after the batch axis (channels last): pad, then move each
    block offset into the batch, offset-major as TensorFlow orders it."""
    block = [int(b) for b in constant(block, "the block shape").ravel()]
    pads = constant(paddings, "the paddings").astype(np.int64).reshape(-1, 2)
    m = len(block)
    shape = _static_dims(x, 1, m + 1, "SpaceToBatchND")
    rest = _static_dims(x, m + 1, len(x.shape), "SpaceToBatchND")
    padded = [d + int(a) + int(b) for d, (a, b) in zip(shape, pads)]
    if any(d % b for d, b in zip(padded, block)):
        raise ModelError(f"SpaceToBatchND: padded sizes {padded} are not multiples of the block {block}")
    rank = len(x.shape)
    full = [0] * (2 * rank)
    for i, (a, b) in enumerate(pads):
        full[1 + i], full[rank + 1 + i] = int(a), int(b)
    x = imp.emit("Pad", [x, _ints(imp, full)], suffix="pad") if any(full) else x
    split = [-1] + [v for d, b in zip(padded, block) for v in (d // b, b)] + rest
    x = imp.emit("Reshape", [x, _ints(imp, split)], suffix="blocks")
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    x = imp.emit("Transpose", [x], {"perm": perm}, suffix="offsets_first")
    return imp.emit("Reshape", [x, _ints(imp, [-1] + [d // b for d, b in zip(padded, block)] + rest)])


def batch_to_space(imp, x, block, crops):
    """tf.batch_to_space_nd: the inverse of space_to_batch, then the crops cut off."""
    block = [int(b) for b in constant(block, "the block shape").ravel()]
    crops = constant(crops, "the crops").astype(np.int64).reshape(-1, 2)
    m = len(block)
    shape = _static_dims(x, 1, m + 1, "BatchToSpaceND")
    rest = _static_dims(x, m + 1, len(x.shape), "BatchToSpaceND")
    x = imp.emit("Reshape", [x, _ints(imp, block + [-1] + shape + rest)], suffix="offsets")
    perm = [m] + [v for i in range(m) for v in (m + 1 + i, i)] + list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    x = imp.emit("Transpose", [x], {"perm": perm}, suffix="interleave")
    x = imp.emit("Reshape", [x, _ints(imp, [-1] + [d * b for d, b in zip(shape, block)] + rest)],
                 suffix="merged")
    if not crops.any():
        return x
    ends = [d * b - int(c) for d, b, c in zip(shape, block, crops[:, 1])]
    return imp.emit("Slice", [x, _ints(imp, crops[:, 0].tolist()), _ints(imp, ends),
                              _ints(imp, list(range(1, m + 1)))])


def _static_dims(x, start: int, stop: int, what: str) -> list[int]:
    dims = list(x.shape[start:stop]) if x.shape is not None else [None]
    if not all(isinstance(d, int) for d in dims):
        raise ModelError(f"{what} needs static sizes after the batch axis, got {x.shape}")
    return dims


def band_part(imp, x, num_lower, num_upper):
    """tf.linalg.band_part: keep `num_lower` diagonals below and `num_upper` above (negative: all of them)."""
    lower = int(constant(num_lower, "num_lower"))
    upper = int(constant(num_upper, "num_upper"))
    if upper >= 0:
        x = imp.emit("Trilu", [x, _ints(imp, upper)], {"upper": 0}, suffix="upper_band")
    if lower >= 0:
        x = imp.emit("Trilu", [x, _ints(imp, -lower)], {"upper": 1}, suffix="lower_band")
    return x if lower >= 0 or upper >= 0 else imp.emit("Identity", [x])


def matrix_diag(imp, diag):
    """tf.linalg.diag (MATRIX_DIAG): [..., n] -> [..., n, n] with the vector on the diagonal."""
    n = _static_dims(diag, len(diag.shape) - 1, len(diag.shape), "MatrixDiag")[0]
    col = imp.emit("Unsqueeze", [diag, _ints(imp, [-1])], suffix="column")
    return imp.emit("Mul", [col, imp.const(np.eye(n), dtype=diag.dtype or np.float32)])


def matrix_set_diag(imp, x, diag):
    """tf.linalg.set_diag (MATRIX_SET_DIAG): `x` [..., m, n] with its main diagonal replaced by `diag`."""
    m, n = _static_dims(x, len(x.shape) - 2, len(x.shape), "MatrixSetDiag")
    k = min(m, n)
    row = imp.emit("Unsqueeze", [diag, _ints(imp, [-2])], suffix="row")  # [..., 1, k]
    if k < n:
        pads = [0] * (2 * len(row.shape))
        pads[-1] = n - k
        row = imp.emit("Pad", [row, _ints(imp, pads)], suffix="row_n")
    on_diagonal = imp.const(np.eye(m, n, dtype=bool), dtype=bool)
    return imp.emit("Where", [on_diagonal, row, x])


def top_k(imp, x, k, index_dtype):
    """tf.math.top_k: the k largest along the last axis, sorted, indices in `index_dtype`."""
    k = imp.emit("Reshape", [as_int64(imp, k, "k"), _ints(imp, [1])], suffix="k1")
    values, indices = imp.emit("TopK", [x, k], {"axis": -1, "largest": 1, "sorted": 1}, outputs=2)
    return [values, cast_to(imp, indices, index_dtype)]


def unique(imp, x, index_dtype, counts: bool = False):
    """tf.unique(_with_counts): values in order of first appearance, each element's index into them (and how
    often each appears)."""
    y, _, inverse, count = imp.emit("Unique", [x], {"sorted": 0}, outputs=4)
    out = [y, cast_to(imp, inverse, index_dtype)]
    return out + [cast_to(imp, count, index_dtype)] if counts else out


def non_max_suppression(imp, boxes, scores, max_size, iou, score_threshold=None, sigma=None, *,
                        padded: bool = False, with_scores: bool = False, counted: bool = False) -> list:
    """tf.image.non_max_suppression (NonMaxSuppressionV2-V5, TFLite's NON_MAX_SUPPRESSION_V4/V5): greedy
    selection among one set of [y1, x1, y2, x2] boxes by descending score, as int32 indices; `with_scores`: the
    selected scores too; `padded`: both filled with zeros up to `max_size`; `counted`: then the number of valid
    ones. Soft-NMS (a sigma other than 0) is not the IR's NonMaxSuppression and is refused."""
    if sigma is not None and float(constant(sigma, "soft_nms_sigma").ravel()[0]) != 0.0:
        raise ModelError("NonMaxSuppression with soft_nms_sigma other than 0 (Soft-NMS rescores the boxes; the IR's "
                         "NonMaxSuppression removes them)")
    limit = imp.emit("Reshape", [as_int64(imp, max_size, "max_output_size"), _ints(imp, [1])], suffix="limit")
    operands = [imp.emit("Unsqueeze", [boxes, _ints(imp, [0])], suffix="batch"),
                imp.emit("Reshape", [scores, _ints(imp, [1, 1, -1])], suffix="classes"), limit, iou]
    selected = imp.emit("NonMaxSuppression", operands + ([score_threshold] if score_threshold is not None else []))
    indices = imp.emit("Gather", [selected, _ints(imp, 2)], {"axis": 1}, suffix="boxes")
    out = [cast_to(imp, indices, np.int32)]
    if with_scores:
        out.append(imp.emit("Gather", [scores, indices], {"axis": 0}, suffix="scores"))
    count = imp.emit("Shape", [indices], suffix="count")
    if padded:
        out = [pad_rows(imp, v, limit) for v in out]
    if counted:
        out.append(cast_to(imp, imp.emit("Reshape", [count, _ints(imp, [])], suffix="valid"), np.int32))
    return out


def combined_non_max_suppression(imp, boxes, scores, per_class, total, iou, score_threshold, *, pad_per_class: bool,
                                 clip_boxes: bool) -> list:
    """tf.image.combined_non_max_suppression: per image and class, greedy NMS over the class's boxes (one box set
    shared by the classes, q = 1, or one per class) keeping up to `per_class`; then the `total` best scores of the
    image across classes, best first, padded with zeros; the kept boxes clipped to [0, 1] when asked. Returns
    boxes [batch, total, 4], scores, classes (float) and the valid count per image (int32)."""
    images, n, q, _ = _static_dims(boxes, 0, 4, "CombinedNonMaxSuppression")
    classes = _static_dims(scores, 2, 3, "CombinedNonMaxSuppression")[0]
    limit = int(constant(total, "max_total_size"))
    if pad_per_class:
        limit = min(limit, int(constant(per_class, "max_output_size_per_class")) * classes)
    # each (image, class) pair a batch of its own, with the class's boxes (the shared ones where q = 1)
    spread = imp.emit("Expand", [boxes, _ints(imp, [images, n, classes, 4])], suffix="class_boxes")
    pair_boxes = imp.emit("Reshape", [imp.emit("Transpose", [spread], {"perm": [0, 2, 1, 3]}, suffix="by_pair"),
                                      _ints(imp, [images * classes, n, 4])], suffix="pair_boxes")
    pair_scores = imp.emit("Reshape", [imp.emit("Transpose", [scores], {"perm": [0, 2, 1]}, suffix="by_class"),
                                       _ints(imp, [images * classes, 1, n])], suffix="pair_scores")
    limit_per_class = imp.emit("Reshape", [as_int64(imp, per_class, "max_output_size_per_class"),
                                           _ints(imp, [1])], suffix="per_class")
    rows = imp.emit("NonMaxSuppression", [pair_boxes, pair_scores, limit_per_class, iou, score_threshold],
                    suffix="selected")  # (pair, 0, box)
    found = imp.emit("GatherND", [pair_scores, rows], suffix="found")
    pair = imp.emit("Gather", [rows, _ints(imp, 0)], {"axis": 1}, suffix="pair")
    image = imp.emit("Div", [pair, _ints(imp, classes)], suffix="image")
    # per image: its rows' scores (the other images' -inf), the best `limit` of them
    mine = imp.emit("Equal", [imp.emit("Unsqueeze", [image, _ints(imp, [0])], suffix="row_image"),
                              _ints(imp, np.arange(images).reshape(images, 1))], suffix="mine")
    ranked = imp.emit("Where", [mine, imp.emit("Unsqueeze", [found, _ints(imp, [0])], suffix="row_scores"),
                                imp.const(np.float32(-np.inf), np.float32)], suffix="ranked")
    k = imp.emit("Min", [imp.emit("Shape", [found], suffix="found_count"), _ints(imp, [limit])], suffix="k")
    best, order = imp.emit("TopK", [ranked, k], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2, suffix="best")
    kept = imp.emit("Greater", [best, imp.const(np.float32(-np.inf), np.float32)], suffix="kept")
    chosen = imp.emit("Gather", [rows, order], {"axis": 0}, suffix="chosen")  # [images, k, 3]
    label = imp.emit("Mod", [imp.emit("Gather", [chosen, _ints(imp, 0)], {"axis": 2}, suffix="chosen_pair"),
                             _ints(imp, classes)], suffix="label")
    box = imp.emit("Gather", [chosen, _ints(imp, 2)], {"axis": 2}, suffix="chosen_box")
    image_of = imp.emit("Expand", [_ints(imp, np.arange(images).reshape(images, 1)),
                                   imp.emit("Shape", [order], suffix="k_shape")], suffix="image_of")
    which = label if q > 1 else imp.emit("Mul", [label, _ints(imp, 0)], suffix="shared")
    at = [imp.emit("Unsqueeze", [v, _ints(imp, [2])], suffix="at") for v in (image_of, box, which)]
    corners = imp.emit("GatherND", [boxes, imp.emit("Concat", at, {"axis": 2}, suffix="corner_at")],
                       suffix="corners")
    if clip_boxes:
        corners = imp.emit("Clip", [corners, imp.const(np.float32(0), np.float32),
                                    imp.const(np.float32(1), np.float32)], suffix="clipped")
    zero = imp.const(np.float32(0), np.float32)
    outs = [imp.emit("Where", [imp.emit("Unsqueeze", [kept, _ints(imp, [2])], suffix="kept_box"), corners, zero],
                     suffix="nmsed_boxes"),
            imp.emit("Where", [kept, best, zero], suffix="nmsed_scores"),
            imp.emit("Where", [kept, imp.emit("Cast", [label], {"to": "float32"}, suffix="label_f32"), zero],
                     suffix="nmsed_classes")]
    valid = imp.emit("ReduceSum", [imp.emit("Cast", [kept], {"to": "int32"}, suffix="kept_count"),
                                   _ints(imp, [1])], {"keepdims": 0}, suffix="valid")
    return [pad_rows(imp, v, limit, axis=1) for v in outs] + [valid]


def pad_rows(imp, v, rows, axis: int = 0):
    """`v` (as many rows along `axis` as the data selects) with rows of zeros after them up to `rows` (an int or
    a [1] int64 value)."""
    rows = _ints(imp, [rows]) if isinstance(rows, int) else rows
    count = imp.emit("Shape", [v], {"start": axis, "end": axis + 1}, suffix="rows")
    after = imp.emit("Sub", [rows, count], suffix="missing")
    rank = len(v.shape) if v.shape is not None else 1
    pads = imp.emit("Concat", [_ints(imp, [0] * (rank + axis)), after, _ints(imp, [0] * (rank - axis - 1))],
                    {"axis": 0}, suffix="pads")
    return imp.emit("Pad", [v, pads], suffix="padded")


def dynamic_update_slice(imp, operand, update, starts):
    """XLA's DynamicUpdateSlice (TFLite's DYNAMIC_UPDATE_SLICE, a KV cache's write): `update` written into
    `operand` from `starts`, each start first clamped to [0, operand size - update size] so the update fits.
    Needs the two shapes."""
    sizes = [_static_dims(v, 0, len(v.shape) if v.shape is not None else 1, "DynamicUpdateSlice")
             for v in (operand, update)]
    starts = imp.emit("Max", [imp.emit("Min", [as_int64(imp, starts, "starts"), _ints(
        imp, [a - b for a, b in zip(*sizes)])], suffix="fits"), _ints(imp, [0])], suffix="starts")
    grid = np.moveaxis(np.indices(sizes[1], dtype=np.int64), 0, -1)  # each update element's own index
    starts = imp.emit("Reshape", [starts, _ints(imp, [1] * len(sizes[1]) + [-1])], suffix="every_element")
    indices = imp.emit("Add", [starts, _ints(imp, grid)], suffix="indices")
    return imp.emit("ScatterND", [operand, indices, update])


def where_indices(imp, condition):
    """tf.where(condition) with one operand: the [n, rank] int64 coordinates of the true entries."""
    return imp.emit("Transpose", [imp.emit("NonZero", [condition], suffix="coords")], {"perm": [1, 0]})


def gather(imp, params, indices, axis: int, batch_dims: int):
    """tf.gather with batch_dims: the leading batch axes paired, read as GatherND when the gathered axis follows
    them (how TensorFlow's converter writes take_along_axis)."""
    if not batch_dims:
        return imp.emit("Gather", [params, indices], {"axis": axis})
    rank = len(params.shape) if params.shape is not None else None
    if rank is None or axis % rank != batch_dims % rank:
        raise ModelError(f"a gather with batch_dims={batch_dims} is read only along axis {batch_dims}, not {axis}")
    where = imp.emit("Unsqueeze", [as_int64(imp, indices, "indices"), _ints(imp, [-1])], suffix="where")
    return imp.emit("GatherND", [params, where], {"batch_dims": batch_dims % rank})


def resize_attrs(bilinear: bool, align_corners: bool, half_pixel_centers: bool) -> dict:
    """The IR Resize attributes of tf.image.resize's kernels (ResizeBilinear / RESIZE_BILINEAR, and the nearest
    neighbour ones) given their two flags."""
    if bilinear:
        ctm = "align_corners" if align_corners else ("half_pixel" if half_pixel_centers else "asymmetric")
        return {"mode": "linear", "coordinate_transformation_mode": ctm}
    if align_corners:
        return {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
                "nearest_mode": "round_prefer_ceil"}
    if half_pixel_centers:
        return {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_ceil"}
    return {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}


def resize(imp, x, size, attrs: dict):
    """Resize of a channels-last image to the constant [height, width] `size` (over the two spatial axes when the
    batch or channel count is unknown: a scale would not give the size exactly)."""
    h, w = (int(d) for d in constant(size, "the output size").ravel())
    n, c = x.shape[0], x.shape[3]
    if isinstance(n, int) and isinstance(c, int):
        return imp.emit("Resize", [x, None, None, _ints(imp, [n, h, w, c])], attrs)
    return imp.emit("Resize", [x, None, None, _ints(imp, [h, w])], {**attrs, "axes": [1, 2]})


def _computed(graph, values) -> list:
    """Every value of `values` as one `graph` computes itself (its outputs)."""
    return [computed_in(graph, v, f"{graph.name}.out{i}") for i, v in enumerate(values)]


def while_loop(imp, name: str, ins, carried_types, run_cond, run_body):
    """TensorFlow's While and TFLite's WHILE: an IR Loop whose body runs the body, then the condition on its
    results; the first test runs the condition once before the loop. `run_cond(graph, bound)` and
    `run_body(graph, bound)` import the condition and the body into `graph` and return their results;
    `carried_types` are the body inputs' (dtype, shape). Returns the Loop's outputs and the body's results."""
    first, = run_cond(imp.graph, list(ins))
    body = imp.graph.subgraph(f"{name}.body")
    body.add_input(f"{name}.iteration", np.dtype(np.int64), ())
    body.add_input(f"{name}.cond", np.dtype(np.bool_), ())
    carried = [body.add_input(f"{name}.carried{i}", dt, shape) for i, (dt, shape) in enumerate(carried_types)]
    results = _computed(body, run_body(body, carried))
    again, = _computed(body, run_cond(body, results))
    body.outputs = [again] + results
    outs = imp.emit("Loop", [None, first, *ins], {"body": body}, outputs=len(ins))
    return (outs if isinstance(outs, list) else [outs]), results


def if_else(imp, name: str, what: str, cond, args, run_then, run_else) -> list:
    """TensorFlow's If and TFLite's IF: the branches, imported by `run_then(graph, args)` / `run_else(graph, args)`
    into graphs of their own reading the operands `args`, become the If's."""
    branches = {}
    for key, run in (("then_branch", run_then), ("else_branch", run_else)):
        g = imp.graph.subgraph(f"{name}.{key.split('_')[0]}")
        g.outputs = _computed(g, run(g, list(args)))
        branches[key] = g
    count = len(branches["then_branch"].outputs)
    if len(branches["else_branch"].outputs) != count:
        raise ModelError(f"{what}: its branches return {count} and {len(branches['else_branch'].outputs)} values")
    outs = imp.emit("If", [cond], branches, outputs=count)
    return outs if isinstance(outs, list) else [outs]
