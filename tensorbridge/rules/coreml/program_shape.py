"""ML Program (MIL) ops that move data, read into the IR."""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.coreml.base import mil
from tensorbridge.rules.coreml.export_shape import SCATTER_MODES
from tensorbridge.rules.coreml.program import _ints, _scalar

PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _shape(values) -> object:
    return np.array(values, np.int64)


@mil("reshape", produces="Reshape")
def reshape(imp, op):
    """To the shape it states, its 0s (the input's size, when the ranks agree) and -1 resolved."""
    shape_in = imp.known("x")
    target = _ints(imp, "shape")
    if 0 in target and len(target) == len(shape_in):
        target = [d if t == 0 else t for t, d in zip(target, shape_in)]
    elif 0 in target:
        raise ModelError(f"reshape to {target}: a 0 copies an axis only when the ranks agree")
    return imp.b.op("Reshape", imp.x, imp.b.const(_shape(target)))


@mil("flatten2d", produces="Flatten")
def flatten2d(imp, op):
    return imp.b.op("Flatten", imp.x, axis=int(_scalar(imp, "axis", 1)))


@mil("transpose", produces="Transpose")
def transpose(imp, op):
    return imp.b.op("Transpose", imp.x, perm=_ints(imp, "perm"))


@mil("squeeze", produces="Squeeze")
def squeeze(imp, op):
    shape = imp.known("x")
    axes = _ints(imp, "axes", [i for i, d in enumerate(shape) if d == 1])
    return imp.b.op("Squeeze", imp.x, imp.b.const(_shape(axes)))


@mil("expand_dims", produces="Unsqueeze")
def expand_dims(imp, op):
    return imp.b.op("Unsqueeze", imp.x, imp.b.const(_shape(_ints(imp, "axes"))))


@mil("concat", produces="Concat")
def concat(imp, op):
    if bool(imp.const("interleave", False)):
        raise ModelError("interleaved concatenation")
    return imp.b.op("Concat", *imp.tensors("values"), axis=int(_scalar(imp, "axis")))


@mil("stack", produces=("Unsqueeze", "Concat"))
def stack(imp, op):
    axis = int(_scalar(imp, "axis", 0))
    parts = [imp.b.op("Unsqueeze", v, imp.b.const(_shape([axis])), suffix=f"item{i}")
             for i, v in enumerate(imp.tensors("values"))]
    return imp.b.op("Concat", *parts, axis=axis)


@mil("split", produces="Split")
def split(imp, op):
    shape = imp.known("x")
    axis = int(_scalar(imp, "axis")) % len(shape)
    sizes = imp.const("split_sizes", None)
    if sizes is None:
        parts = int(_scalar(imp, "num_splits"))
        if shape[axis] % parts:
            raise ModelError(f"{parts} equal parts of an axis of {shape[axis]}")
        sizes = [shape[axis] // parts] * parts
    else:
        imp.const("num_splits", None)
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    return list(imp.b.emit("Split", [imp.x, imp.b.const(_shape(sizes))], {"axis": axis}, outputs=len(sizes)))


@mil("slice_by_index", produces=("Slice", "Squeeze"))
def slice_by_index(imp, op):
    shape = imp.known("x")
    rank = len(shape)
    begin, end = _ints(imp, "begin"), _ints(imp, "end")
    stride = _ints(imp, "stride", [1] * rank)
    masks = {k: [bool(v) for v in np.asarray(imp.const(k, [False] * rank)).reshape(-1)]
             for k in ("begin_mask", "end_mask", "squeeze_mask")}
    starts, ends = [], []
    for a in range(rank):
        forward = stride[a] > 0
        starts.append((0 if forward else -1) if masks["begin_mask"][a] else begin[a])
        if masks["squeeze_mask"][a]:
            ends.append(begin[a] + 1 if begin[a] != -1 else shape[a])
        else:
            ends.append((shape[a] if forward else -(2**62)) if masks["end_mask"][a] else end[a])
    b = imp.b
    sliced = b.op("Slice", imp.x, b.const(_shape(starts)), b.const(_shape(ends)), b.const(_shape(range(rank))),
                  b.const(_shape(stride)), suffix="slice" if any(masks["squeeze_mask"]) else "")
    squeezed = [a for a in range(rank) if masks["squeeze_mask"][a]]
    return b.op("Squeeze", sliced, b.const(_shape(squeezed))) if squeezed else sliced


@mil("slice_by_size", produces="Slice")
def slice_by_size(imp, op):
    shape = imp.known("x")
    begin, size = _ints(imp, "begin"), _ints(imp, "size")
    ends = [d if s == -1 else b + s for b, s, d in zip(begin, size, shape)]
    b = imp.b
    return b.op("Slice", imp.x, b.const(_shape(begin)), b.const(_shape(ends)))


@mil("gather", produces="Gather")
def gather(imp, op):
    if int(_scalar(imp, "batch_dims", 0)):
        raise ModelError("a gather with batch_dims")
    imp.const("validate_indices", False)
    return imp.b.op("Gather", imp.x, imp.tensor("indices"), axis=int(_scalar(imp, "axis", 0)))


@mil("gather_along_axis", produces="GatherElements")
def gather_along_axis(imp, op):
    imp.const("validate_indices", False)
    return imp.b.op("GatherElements", imp.x, imp.tensor("indices"), axis=int(_scalar(imp, "axis", 0)))


@mil("gather_nd", produces="GatherND")
def gather_nd(imp, op):
    if int(_scalar(imp, "batch_dims", 0)):
        raise ModelError("a gather_nd with batch_dims")
    imp.const("validate_indices", False)
    return imp.b.op("GatherND", imp.x, imp.tensor("indices"))


@mil("scatter_nd", produces="ScatterND")
def scatter_nd(imp, op):
    modes = {mode: reduction for reduction, mode in SCATTER_MODES.items()}
    mode = str(imp.const("mode", "add"))
    if mode not in modes:
        raise ModelError(f"a scatter_nd of mode {mode!r}")
    imp.const("validate_indices", False)
    return imp.b.op("ScatterND", imp.tensor("data"), imp.tensor("indices"), imp.tensor("updates"),
                    reduction=modes[mode])


@mil("pad", produces="Pad")
def pad(imp, op):
    rank = len(imp.known("x"))
    pairs = _ints(imp, "pad")
    mode = str(imp.const("mode", "constant"))
    if mode not in PAD_MODES or len(pairs) % 2 or len(pairs) // 2 > rank:
        raise ModelError(f"{mode} padding of {len(pairs) // 2} axes")
    lead = [0] * (rank - len(pairs) // 2)  # the pairs pad the last axes
    pads = lead + pairs[0::2] + lead + pairs[1::2]
    value = imp.b.const(np.array(_scalar(imp, "constant_val", 0.0), imp.x.dtype))
    return imp.b.op("Pad", imp.x, imp.b.const(_shape(pads)), value, mode=PAD_MODES[mode])


@mil("tile", produces="Tile")
def tile(imp, op):
    return imp.b.op("Tile", imp.x, imp.b.const(_shape(_ints(imp, "reps"))))


@mil("depth_to_space", "space_to_depth", produces=("DepthToSpace", "SpaceToDepth"))
def depth_space(imp, op):
    ir = "DepthToSpace" if op.type == "depth_to_space" else "SpaceToDepth"
    attrs = {"blocksize": int(_scalar(imp, "block_size"))}
    if ir == "DepthToSpace":
        attrs["mode"] = "DCR"
    return imp.b.op(ir, imp.x, **attrs)


@mil("pixel_shuffle", produces="DepthToSpace")
def pixel_shuffle(imp, op):
    return imp.b.op("DepthToSpace", imp.x, blocksize=int(_scalar(imp, "upscale_factor")), mode="CRD")


@mil("shape", produces=("Shape", "Cast"))
def shape(imp, op):
    return imp.b.op("Cast", imp.b.op("Shape", imp.x, suffix="int64"), to=np.dtype(np.int32))


@mil("range_1d", produces="Range")
def range_1d(imp, op):
    return imp.b.op("Range", imp.tensor("start"), imp.tensor("end"), imp.tensor("step"))


# -- resampling: bilinear grids as coremltools states them ----------------------------------------------------
def _resized(imp, sizes, **attrs):
    shape = imp.known("x")
    b = imp.b
    full = _shape(list(shape[:-2]) + [int(s) for s in sizes])
    return b.op("Resize", imp.x, None, None, b.const(full), **attrs)


@mil("upsample_nearest_neighbor", produces="Resize")
def upsample_nearest(imp, op):
    """Each output pixel takes the input pixel at floor(i / scale)."""
    shape = imp.known("x")
    scales = [_scalar(imp, "scale_factor_height", 1), _scalar(imp, "scale_factor_width", 1)]
    b = imp.b
    full = np.array([1.0] * (len(shape) - 2) + scales, np.float32)
    return b.op("Resize", imp.x, None, b.const(full), mode="nearest", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor")


@mil("upsample_bilinear", produces="Resize")
def upsample_bilinear(imp, op):
    """The grid is recomputed from the output size: aligned corners, half-pixel centres or (iOS 16) neither,
    clamped to the image."""
    shape = imp.known("x")
    scales = [_scalar(imp, "scale_factor_height", 1), _scalar(imp, "scale_factor_width", 1)]
    corners = bool(imp.const("align_corners", True))
    centres = bool(imp.const("half_pixel_centers", not corners))
    sizes = [int(np.floor(d * s)) for d, s in zip(shape[-2:], scales)]
    grid = "align_corners" if corners else "half_pixel" if centres else "asymmetric"
    return _resized(imp, sizes, mode="linear", coordinate_transformation_mode=grid)


SAMPLING = {"STRICT_ALIGN_CORNERS": "align_corners", "UNALIGN_CORNERS": "half_pixel", "DEFAULT": "asymmetric"}


@mil("resize_bilinear", produces="Resize")
def resize_bilinear(imp, op):
    mode = str(imp.const("sampling_mode", "DEFAULT"))
    sizes = [int(_scalar(imp, "target_size_height", 1)), int(_scalar(imp, "target_size_width", 1))]
    if mode == "ALIGN_CORNERS" and min(sizes) > 1:
        mode = "STRICT_ALIGN_CORNERS"  # they differ only for an output of one pixel
    if mode not in SAMPLING:
        raise ModelError(f"bilinear sampling mode {mode}")
    return _resized(imp, sizes, mode="linear", coordinate_transformation_mode=SAMPLING[mode])
