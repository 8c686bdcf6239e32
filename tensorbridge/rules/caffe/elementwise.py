"""Caffe's activations, arithmetic and the layers that only move data, read into the IR."""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.caffe.base import R, axis_of, image, layer

R.row("Sigmoid", "Sigmoid", kind="layer")
R.row("TanH", "Tanh", kind="layer")
R.row("AbsVal", "Abs", kind="layer")
R.row("BNLL", "Softplus", kind="layer")  # log(1 + exp(x))


@layer("ReLU", produces=("Relu", "LeakyRelu"))
def relu(imp, lay):
    slope = lay.relu_param.negative_slope
    return imp.b.op("LeakyRelu", imp.x, alpha=float(slope)) if slope else imp.b.op("Relu", imp.x)


@layer("ELU", produces="Elu")
def elu(imp, lay):
    return imp.b.op("Elu", imp.x, alpha=float(lay.elu_param.alpha))


def _affine(imp, x, scale: float, shift: float, last: bool = False):
    """shift + scale * x, leaving out what is the identity; `last`: its final op is the layer's output, named
    after the layer."""
    b = imp.b
    steps = [(op, v) for op, v, plain in (("Mul", scale, 1), ("Add", shift, 0)) if v != plain]
    for i, (op, v) in enumerate(steps):
        final = last and i == len(steps) - 1
        x = b.op(op, x, b.const(np.float32(v), imp.name(op.lower())), suffix="" if final else
                 {"Mul": "scale", "Add": "shift"}[op])
    return x


@layer("Power", produces=("Mul", "Add", "Pow", "Identity"))
def power(imp, lay):
    """(shift + scale * x) ^ power"""
    p = lay.power_param
    y = _affine(imp, imp.x, p.scale, p.shift, last=p.power == 1)
    if p.power != 1:
        y = imp.b.op("Pow", y, imp.b.const(np.float32(p.power)))
    return y if y is not imp.x else imp.b.op("Identity", y)


@layer("Exp", produces=("Mul", "Add", "Exp"))
def exp(imp, lay):
    """base ^ (shift + scale * x); base -1 is e"""
    p = lay.exp_param
    if p.base != -1 and p.base <= 0:
        raise ModelError(f"Exp with base {p.base} (must be positive, or -1 for e)")
    ln = 1.0 if p.base == -1 else math.log(p.base)
    return imp.b.op("Exp", _affine(imp, imp.x, p.scale * ln, p.shift * ln))


@layer("Log", produces=("Mul", "Add", "Log"))
def log(imp, lay):
    """log_base(shift + scale * x); base -1 is e"""
    p = lay.log_param
    if p.base != -1 and (p.base <= 0 or p.base == 1):
        raise ModelError(f"Log with base {p.base} (must be positive and not 1, or -1 for e)")
    y = imp.b.op("Log", _affine(imp, imp.x, p.scale, p.shift), suffix="ln" if p.base != -1 else "")
    return y if p.base == -1 else imp.b.op("Mul", y, imp.b.const(np.float32(1 / math.log(p.base))))


@layer("Threshold", produces=("Greater", "Cast"))
def threshold(imp, lay):
    above = imp.b.op("Greater", imp.x, imp.b.const(np.float32(lay.threshold_param.threshold)), suffix="above")
    return imp.b.op("Cast", above, to="float32")


PROD, SUM, MAX = 0, 1, 2


@layer("Eltwise", produces=("Add", "Mul", "Max", "Sum"))
def eltwise(imp, lay):
    p, b, xs = lay.eltwise_param, imp.b, imp.bottoms
    if len(xs) < 2:
        raise ModelError("Eltwise needs two bottoms or more")
    if len({tuple(x.shape or ()) for x in xs}) > 1:
        raise ModelError(f"Eltwise over bottoms of different shapes: {[list(x.shape or ()) for x in xs]}")
    coeffs = list(p.coeff)
    if coeffs and (p.operation != SUM or len(coeffs) != len(xs)):
        raise ModelError(f"{len(coeffs)} coefficients for {len(xs)} bottoms (only a sum takes one per bottom)")
    if p.operation == SUM and any(c != 1 for c in coeffs):
        xs = [x if c == 1 else b.op("Mul", x, b.const(np.float32(c)), suffix=f"coeff{i}")
              for i, (x, c) in enumerate(zip(xs, coeffs))]
    op = {PROD: "Mul", SUM: "Add", MAX: "Max"}[p.operation]
    if op == "Max":
        return b.op("Max", *xs)
    y = xs[0]
    for i, x in enumerate(xs[1:], 1):
        y = b.op(op, y, x, suffix="" if i == len(xs) - 1 else f"partial{i}")
    return y


@layer("Concat", produces="Concat")
def concat(imp, lay):
    p = lay.concat_param
    axis = p.concat_dim if p.HasField("concat_dim") else p.axis
    return imp.b.op("Concat", *imp.bottoms, axis=axis_of(imp.x, axis))


@layer("Slice", produces="Slice")
def slice_(imp, lay):
    p, x, b = lay.slice_param, imp.x, imp.b
    axis = axis_of(x, p.slice_dim if p.HasField("slice_dim") else p.axis)
    size, tops = x.shape[axis], len(lay.top)
    if not isinstance(size, int):
        raise ModelError(f"Slice along an axis of unknown size ({x.shape})")
    points = list(p.slice_point)
    if not points:
        if size % tops:
            raise ModelError(f"Slice cannot split {size} into {tops} equal parts")
        points = [size // tops * i for i in range(1, tops)]
    if len(points) != tops - 1 or points != sorted(points) or (points and not 0 < points[0] <= points[-1] < size):
        raise ModelError(f"slice points {points} do not cut {size} into {tops} parts")
    bounds = [0, *points, size]
    return [b.op("Slice", x, *(b.const(np.array([v], np.int64)) for v in (start, end, axis)), suffix=f"part{i}")
            for i, (start, end) in enumerate(zip(bounds, bounds[1:]))]


@layer("Split", produces=())
def split(imp, lay):
    return [imp.x] * len(lay.top)


@layer("Dropout", produces=())
def dropout(imp, lay):
    return imp.x  # inference: Caffe's dropout passes its input on (it scales at training time)


def _known(x, what: str) -> list[int]:
    if x.shape is None or not all(isinstance(d, int) for d in x.shape):
        raise ModelError(f"{what} needs an input of known shape, not {x.shape}")
    return list(x.shape)


@layer("Flatten", produces=("Flatten", "Reshape"))
def flatten(imp, lay):
    p, x = lay.flatten_param, imp.x
    shape = _known(x, "Flatten")
    start, end = axis_of(x, p.axis), axis_of(x, p.end_axis)
    if start == 1 and end == len(shape) - 1:
        return imp.b.op("Flatten", x, axis=1)
    new = shape[:start] + [int(np.prod(shape[start:end + 1]))] + shape[end + 1:]
    return imp.b.op("Reshape", x, imp.b.const(np.array(new, np.int64)))


@layer("Reshape", produces="Reshape")
def reshape(imp, lay):
    """Caffe's shape: 0 copies the input's dimension, -1 is inferred; `axis`/`num_axes` pick the part replaced."""
    p, x = lay.reshape_param, imp.x
    shape = _known(x, "Reshape")
    start = p.axis if p.axis >= 0 else len(shape) + 1 + p.axis
    end = len(shape) if p.num_axes == -1 else start + p.num_axes
    if not 0 <= start <= end <= len(shape):
        raise ModelError(f"axis {p.axis} / num_axes {p.num_axes} do not fit a rank-{len(shape)} input")
    dims = [shape[start + i] if d == 0 else d for i, d in enumerate(p.shape.dim)]
    new = shape[:start] + dims + shape[end:]
    if new.count(-1) > 1 or any(d < -1 for d in new):
        raise ModelError(f"shape {list(p.shape.dim)} is not a Caffe reshape")
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        if not known or int(np.prod(shape)) % known:
            raise ModelError(f"shape {list(p.shape.dim)} does not fit {shape}")
        new[new.index(-1)] = int(np.prod(shape)) // known
    if int(np.prod(new)) != int(np.prod(shape)):
        raise ModelError(f"shape {list(p.shape.dim)} does not fit {shape}")
    return imp.b.op("Reshape", x, imp.b.const(np.array(new, np.int64)))


@layer("Softmax", produces="Softmax")
def softmax(imp, lay):
    return imp.b.op("Softmax", imp.x, axis=axis_of(imp.x, lay.softmax_param.axis))


@layer("Crop", produces="Slice")
def crop(imp, lay):
    """The first bottom cut to the second's shape from `axis` on, starting at `offset` (one for all axes, or one
    per axis)."""
    if len(imp.bottoms) != 2:
        raise ModelError("Crop needs two bottoms (the tensor and one of the target shape)")
    p, (x, like) = lay.crop_param, imp.bottoms
    shape, target = _known(x, "Crop"), _known(like, "Crop")
    axis = axis_of(x, p.axis)
    axes = list(range(axis, len(shape)))
    offsets = list(p.offset) or [0]
    offsets = offsets * len(axes) if len(offsets) == 1 else offsets
    if len(offsets) != len(axes) or any(o + target[a] > shape[a] for o, a in zip(offsets, axes)):
        raise ModelError(f"offsets {list(p.offset)} cannot cut {shape} to {target} from axis {axis}")
    b = imp.b
    ends = [o + target[a] for o, a in zip(offsets, axes)]
    return b.op("Slice", x, *(b.const(np.array(v, np.int64)) for v in (offsets, ends, axes)))


@layer("Permute", produces="Transpose")
def permute(imp, lay):
    rank = len(_known(imp.x, "Permute"))
    order = list(lay.permute_param.order)
    order += [a for a in range(rank) if a not in order]
    if sorted(order) != list(range(rank)):
        raise ModelError(f"order {list(lay.permute_param.order)} is not a permutation of {rank} axes")
    return imp.b.op("Transpose", imp.x, perm=order)


@layer("Tile", produces="Tile")
def tile(imp, lay):
    p = lay.tile_param
    repeats = [1] * len(_known(imp.x, "Tile"))
    repeats[axis_of(imp.x, p.axis)] = p.tiles
    return imp.b.op("Tile", imp.x, imp.b.const(np.array(repeats, np.int64)))


@layer("Upsample", produces="Resize")
def upsample(imp, lay):
    """The nearest-neighbour Upsample of YOLO ports of Caffe (one bottom); SegNet's max-unpooling form (two) is
    not read."""
    if len(imp.bottoms) != 1:
        raise ModelError("Upsample with two bottoms (SegNet's max-unpooling by indices) is not read")
    p = lay.upsample_param
    _, _, h, w = image(imp.x, "Upsample")
    sh = p.scale_h if p.HasField("scale_h") else p.upsample_h // h if p.HasField("upsample_h") else p.scale
    sw = p.scale_w if p.HasField("scale_w") else p.upsample_w // w if p.HasField("upsample_w") else p.scale
    if sh < 1 or sw < 1 or (p.HasField("upsample_h") and p.upsample_h != h * sh) or \
            (p.HasField("upsample_w") and p.upsample_w != w * sw):
        raise ModelError("Upsample to a size that is not a whole multiple of the input's")
    scales = imp.b.const(np.array([1, 1, sh, sw], np.float32))
    return imp.b.op("Resize", imp.x, None, scales, mode="nearest", coordinate_transformation_mode="asymmetric",
                    nearest_mode="floor")


@layer("Interp", produces="Resize")
def interp(imp, lay):
    """DeepLab/PSPNet's bilinear Interp, which aligns the corner pixels of input and output."""
    p = lay.interp_param
    _, _, h, w = image(imp.x, "Interp")
    if p.pad_beg or p.pad_end:
        raise ModelError("Interp with pad_beg/pad_end (cropping before resizing) is not read")
    if len(imp.bottoms) == 2:
        oh, ow = image(imp.bottoms[1], "Interp's size reference")[2:]
    elif p.HasField("height") and p.HasField("width"):
        oh, ow = p.height, p.width
    elif p.HasField("zoom_factor") or p.HasField("shrink_factor"):
        oh, ow = h, w
        if p.HasField("shrink_factor"):
            oh, ow = (oh - 1) // p.shrink_factor + 1, (ow - 1) // p.shrink_factor + 1
        if p.HasField("zoom_factor"):
            oh, ow = oh + (oh - 1) * (p.zoom_factor - 1), ow + (ow - 1) * (p.zoom_factor - 1)
    else:
        raise ModelError("Interp names no output size (height/width, zoom_factor or shrink_factor)")
    sizes = imp.b.const(np.array([*imp.x.shape[:2], oh, ow], np.int64))
    return imp.b.op("Resize", imp.x, None, None, sizes, mode="linear", coordinate_transformation_mode="align_corners")
