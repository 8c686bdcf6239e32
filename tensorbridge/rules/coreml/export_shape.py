"""IR ops that move data, written as Core ML MIL ops.

Core ML reshapes to shapes fixed when the model is written, so Reshape, Flatten, Squeeze and Unsqueeze all
become `reshape` to the output's known shape; slices become `slice_by_index` over every axis.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.rules.coreml.base import R, axes_of, check_const_inputs, const, known, positive
from tensorbridge.rules.coreml.export import _all, _float, _image

PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


def _static_output(node):
    return None if known(node.outputs[0]) else "Core ML reshapes to shapes known when the model is written"


@R.exports("Reshape", "Flatten", "Squeeze", "Unsqueeze", check=_static_output)
def write_reshape(w, node):
    _moved_as_int(w, node, lambda x, name: w.mb.reshape(x=x, shape=list(node.outputs[0].shape), name=name))


@R.exports("Transpose", check=lambda n: None if known(n.input(0)) else "Core ML transposes inputs of known rank")
def write_transpose(w, node):
    perm = node.attrs.get("perm") or list(range(len(node.input(0).shape)))[::-1]
    _moved_as_int(w, node, lambda x, name: w.mb.transpose(x=x, perm=list(perm), name=name))


@R.exports("Concat")
def write_concat(w, node):
    w.set(node.outputs[0], w.mb.concat(values=[w.x(v) for v in node.inputs], axis=node.attrs["axis"],
                                       name=w.name(node)))


def _check_split(node):
    if not known(node.input(0)) or not all(known(o) for o in node.outputs):
        return "Core ML splits inputs of known shape"
    return None


@R.exports("Split", check=_check_split)
def write_split(w, node):
    x = node.input(0)
    axis = node.attrs.get("axis", 0) % len(x.shape)
    sizes = [o.shape[axis] for o in node.outputs]
    parts = w.mb.split(x=w.x(x), split_sizes=sizes, axis=axis, name=w.name(node))
    for value, part in zip(node.outputs, parts if isinstance(parts, list | tuple) else [parts]):
        w.set(value, part)


def _slice_bounds(node):
    """(begin, end, stride, end_mask) over every axis of the input, from the constant starts/ends/axes/steps."""
    x = node.input(0)
    starts, ends = const(node.input(1)), const(node.input(2))
    rank = len(x.shape)
    axes = axes_of(node, 3) or list(range(len(starts)))
    steps = const(node.input(4)) if len(node.inputs) > 4 and node.input(4) is not None else np.ones(len(axes), int)
    begin, end, stride, end_mask = [0] * rank, list(x.shape), [1] * rank, [False] * rank
    for a, s, e, st in zip(positive(axes, rank), starts.reshape(-1), ends.reshape(-1), steps.reshape(-1)):
        lo, hi, step = slice(int(s), int(e), int(st)).indices(x.shape[a])
        begin[a], end[a], stride[a] = lo, hi, step
        end_mask[a] = step < 0 and hi < 0  # a reversed slice that runs through index 0
    return begin, end, stride, end_mask


@R.exports("Slice", check=_all(check_const_inputs(1, 2, 3, 4, what="slice bounds"),
                               lambda n: None if known(n.input(0)) else "Core ML slices inputs of known shape"))
def write_slice(w, node):
    begin, end, stride, end_mask = _slice_bounds(node)
    w.set(node.outputs[0], w.mb.slice_by_index(x=w.x(node.input(0)), begin=begin, end=[max(e, 0) for e in end],
                                               stride=stride, end_mask=end_mask, name=w.name(node)))


def _moved_as_int(w, node, move) -> None:
    """`move(x, name)` on the node's data input; Core ML moves no booleans, so those go as int32 and back."""
    x = node.input(0)
    if x.dtype != np.bool_:
        w.set(node.outputs[0], move(w.x(x), w.name(node)))
        return
    ints = w.mb.cast(x=w.x(x), dtype="int32", name=w.name(node, "int"))
    w.set(node.outputs[0], w.mb.cast(x=move(ints, w.name(node, "moved")), dtype="bool", name=w.name(node)))


@R.exports("Gather")
def write_gather(w, node):
    _moved_as_int(w, node, lambda x, name: w.mb.gather(x=x, indices=w.x(node.input(1)),
                                                         axis=node.attrs.get("axis", 0), name=name))


@R.exports("GatherElements")
def write_gather_elements(w, node):
    _moved_as_int(w, node, lambda x, name: w.mb.gather_along_axis(x=x, indices=w.x(node.input(1)),
                                                                    axis=node.attrs.get("axis", 0), name=name))


@R.exports("GatherND", check=lambda n: "batch_dims" if n.attrs.get("batch_dims", 0) else None)
def write_gather_nd(w, node):
    _moved_as_int(w, node, lambda x, name: w.mb.gather_nd(x=x, indices=w.x(node.input(1)), name=name))


#: ScatterND's reductions -> scatter_nd's modes
SCATTER_MODES = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


@R.exports("ScatterND", check=lambda n: None if known(n.input(0)) and known(n.input(1))
           else "Core ML scatters into tensors of known shape")
def write_scatter_nd(w, node):
    """scatter_nd with the reduction's mode; negative indices counted from the end first (constant ones here,
    others by a select)."""
    data, idx, updates = node.inputs
    lead = np.array(data.shape[:idx.shape[-1]], np.int32)
    if idx.const is not None:
        indices = w.x(idx)
        indices = np.where(indices < 0, indices + lead, indices).astype(np.int32)
    else:
        at = w.x(idx)
        indices = w.mb.select(cond=w.mb.less(x=at, y=np.int32(0), name=w.name(node, "negative")),
                              a=w.mb.add(x=at, y=lead, name=w.name(node, "from_end")), b=at,
                              name=w.name(node, "indices"))
    w.set(node.outputs[0], w.mb.scatter_nd(data=w.x(data), indices=indices, updates=w.x(updates),
                                           mode=SCATTER_MODES[node.attrs.get("reduction", "none")],
                                           name=w.name(node)))


def _check_pad(node):
    pads = const(node.input(1))
    if pads is None or (len(node.inputs) > 2 and node.input(2) is not None and node.input(2).const is None):
        return "Core ML pads by constant amounts with a constant value"
    if len(node.inputs) > 3 and node.input(3) is not None:
        return "padding of chosen axes"
    if node.attrs.get("mode", "constant") not in PAD_MODES:
        return f"{node.attrs['mode']} padding"
    if (pads < 0).any():
        return "negative padding (cropping)"
    rank = len(pads) // 2
    if node.attrs.get("mode", "constant") != "constant" and any(pads[:rank - 2]) | any(pads[rank:2 * rank - 2]):
        return "reflect and edge padding of more than the last two axes"
    return None


@R.exports("Pad", check=_check_pad)
def write_pad(w, node):
    pads = const(node.input(1)).reshape(-1)
    rank = len(pads) // 2
    value = const(node.input(2)) if len(node.inputs) > 2 and node.input(2) is not None else np.zeros(())
    mode = node.attrs.get("mode", "constant")
    first = 0 if mode == "constant" else rank - 2  # reflect/replicate pad the last two axes
    pairs = [int(p) for i in range(first, rank) for p in (pads[i], pads[i + rank])]
    w.set(node.outputs[0], w.mb.pad(x=w.x(node.input(0)), pad=pairs, mode=PAD_MODES[mode],
                                    constant_val=np.float32(value.reshape(-1)[0]), name=w.name(node)))


@R.exports("Tile", check=check_const_inputs(1, what="repeats"))
def write_tile(w, node):
    reps = [int(r) for r in const(node.input(1))]
    _moved_as_int(w, node, lambda x, name: w.mb.tile(x=x, reps=reps, name=name))


def _check_expand(node):
    if not known(node.input(0)) or not known(node.outputs[0]):
        return "Core ML expands inputs of known shape to a known shape"
    return None


@R.exports("Expand", check=_check_expand)
def write_expand(w, node):
    """A reshape to the output's rank (ones in front), then a tile of the axes that grow."""
    x, out = node.input(0), node.outputs[0].shape
    shape = (1,) * (len(out) - len(x.shape)) + tuple(x.shape)
    y = w.x(x)
    if shape != tuple(x.shape):
        y = w.mb.reshape(x=y, shape=list(shape), name=w.name(node, "rank"))
    reps = [o // s for o, s in zip(out, shape)]
    w.set(node.outputs[0], w.mb.tile(x=y, reps=reps, name=w.name(node)) if any(r != 1 for r in reps)
          else w.mb.identity(x=y, name=w.name(node)))


@R.exports("DepthToSpace", "SpaceToDepth", check=_all(_image(4, 4), _float, lambda n: None
                                                      if n.attrs.get("mode", "DCR") == "DCR"
                                                      else "channel order CRD (pixel shuffle)"))
def write_depth_space(w, node):
    op = w.mb.depth_to_space if node.op == "DepthToSpace" else w.mb.space_to_depth
    w.set(node.outputs[0], op(x=w.x(node.input(0)), block_size=node.attrs["blocksize"], name=w.name(node)))


@R.exports("Shape", check=lambda n: "a part of the shape" if n.attrs.get("start", 0) or
           n.attrs.get("end") is not None else None)
def write_shape(w, node):
    w.set(node.outputs[0], w.mb.shape(x=w.x(node.input(0)), name=w.name(node)))


def _check_resize(node):
    a, x = node.attrs, node.input(0)
    if not known(x) or len(x.shape) != 4 or not known(node.outputs[0]) or a.get("layout", "NCHW") != "NCHW":
        return "Core ML resizes (N, C, H, W) inputs of known shape"
    if x.shape[:2] != node.outputs[0].shape[:2] or a.get("antialias"):
        return "resizing other than of the two spatial axes"
    mode, ctm = a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel")
    scale = [o / i for o, i in zip(node.outputs[0].shape[2:], x.shape[2:])]
    given = const(node.input(2)) if len(node.inputs) > 2 and node.input(2) is not None else None
    if given is not None and given.size and [float(s) for s in given.reshape(-1)[-2:]] != scale:
        return "scales that are not the ratio of output to input size (Core ML resamples by that ratio)"
    if mode == "nearest" and ctm == "asymmetric" and a.get("nearest_mode") == "floor" and \
            all(float(s).is_integer() for s in scale):
        return None
    if mode == "linear" and ctm in ("align_corners", "half_pixel", "pytorch_half_pixel") and \
            (ctm == "align_corners" or all(o > 1 for o in node.outputs[0].shape[2:])):
        return None
    return f"{mode} resizing with {ctm} coordinates"


@R.exports("Resize", check=_check_resize)
def write_resize(w, node):
    """Nearest to integer scales, or bilinear to the output size (Core ML's `resize_bilinear`: its
    STRICT_ALIGN_CORNERS is align_corners, UNALIGN_CORNERS half-pixel centres)."""
    x, out = node.input(0), node.outputs[0].shape
    if node.attrs.get("mode", "nearest") == "nearest":
        w.set(node.outputs[0], w.mb.upsample_nearest_neighbor(
            x=w.x(x), scale_factor_height=out[2] // x.shape[2], scale_factor_width=out[3] // x.shape[3],
            name=w.name(node)))
        return
    corners = node.attrs.get("coordinate_transformation_mode") == "align_corners"
    w.set(node.outputs[0], w.mb.resize_bilinear(
        x=w.x(x), target_size_height=out[2], target_size_width=out[3],
        sampling_mode="STRICT_ALIGN_CORNERS" if corners else "UNALIGN_CORNERS", name=w.name(node)))


