"""Image/vision ops: GridSample, AffineGrid, NonMaxSuppression, RoiAlign, CenterCropPad,
Col2Im, MaxUnpool. Channels-first, as in ONNX.
"""

from __future__ import annotations

import itertools

import numpy as np

from tensorbridge.ir.builder import Builder
from tensorbridge.ops.infer import const_ints, norm_axis
from tensorbridge.ops.layout_classes import IMPLICIT, TERMINATE
from tensorbridge.ops.schema import Attr, op, set_decomposition
from tensorbridge.ops.shape import slice_spans
from tensorbridge.reference.kernels.resize import _cubic

F = "vision"


def _reflect(x, lo, hi):
    span = hi - lo
    if span <= 0:
        return np.zeros_like(x)
    d = np.abs(x - lo)
    flips = np.floor(d / span)
    extra = d - flips * span
    return np.where(flips % 2 == 0, lo + extra, hi - extra)


def _bound(x, size, padding, align):
    """Apply border/reflection to a coordinate (zeros padding leaves it as is)."""
    if padding == "border":
        return np.clip(x, 0, size - 1)
    if padding == "reflection":
        x = _reflect(x, 0, size - 1) if align else _reflect(x, -0.5, size - 0.5)
        return np.clip(x, 0, size - 1)
    return x


def _taps(coord, size, mode, padding, align):
    """Per-axis tap indices, weights and in-bounds masks, each [..., T]."""
    if mode == "nearest":
        c = _bound(coord, size, padding, align)
        idx = np.rint(c)[..., None]
        w = np.ones_like(idx)
    elif mode == "linear":
        c = _bound(coord, size, padding, align)
        f = np.floor(c)
        idx = np.stack([f, f + 1], axis=-1)
        frac = (c - f)[..., None]
        w = np.concatenate([1 - frac, frac], axis=-1)
    else:  # cubic: taps are bounded one by one
        f = np.floor(coord)
        idx = f[..., None] + np.arange(-1, 3)
        w = _cubic(coord[..., None] - idx, -0.75)
        if padding != "zeros":
            idx = np.rint(_bound(idx, size, padding, align)) if padding == "border" else \
                np.floor(_bound(idx, size, padding, align) + 0.5)
    inside = (idx >= 0) & (idx <= size - 1)
    return np.clip(idx, 0, size - 1).astype(np.int64), w, inside


#: GridSample's opset-16 mode names, as opset 20 spells them
MODE_ALIASES = {"bilinear": "linear", "bicubic": "cubic"}


def _grid_sample_infer(inputs, attrs):
    x, grid = inputs
    if x.shape is None or grid.shape is None:
        return [(x.dtype, None)]
    return [(x.dtype, tuple(x.shape[:2]) + tuple(grid.shape[1:-1]))]


def _affine_grid_infer(inputs, attrs):
    size = const_ints(inputs[1])
    return [(inputs[0].dtype, None if size is None else (size[0], *size[2:], len(size) - 2))]


@op("GridSample", inputs="X grid", family=F, layout=IMPLICIT, infer=_grid_sample_infer,
    attrs={"align_corners": Attr("int", 0), "mode": Attr("str", "linear"), "padding_mode": Attr("str", "zeros")},
    doc="Sample X at normalised grid coordinates. Equivalents: F.grid_sample, tfa resampler.")
def grid_sample(X, grid, align_corners, mode, padding_mode):
    mode = MODE_ALIASES.get(mode, mode)
    n, c = X.shape[:2]
    sizes = X.shape[2:]
    r = len(sizes)
    out_sp = grid.shape[1:-1]
    g = grid.astype(np.float64)
    per_axis = []
    for ax in range(r):
        size = sizes[ax]
        gc = g[..., r - 1 - ax]  # grid's last entry is x (the last spatial axis)
        coord = (gc + 1) / 2 * (size - 1) if align_corners else ((gc + 1) * size - 1) / 2
        per_axis.append(_taps(coord, size, mode, padding_mode, align_corners))
    x = X.astype(np.float64)
    out = np.zeros((n, c) + tuple(out_sp))
    batch = np.arange(n).reshape((n,) + (1,) * len(out_sp))
    t_count = per_axis[0][0].shape[-1]
    for combo in itertools.product(range(t_count), repeat=r):
        idx = tuple(per_axis[a][0][..., t] for a, t in enumerate(combo))
        w = np.prod([per_axis[a][1][..., t] for a, t in enumerate(combo)], axis=0)
        ok = np.all([per_axis[a][2][..., t] for a, t in enumerate(combo)], axis=0)
        vals = np.moveaxis(x, 1, -1)[(batch,) + idx]  # [N, *out, C]
        vals = np.moveaxis(vals, -1, 1)
        out += vals * np.expand_dims(np.where(ok, w, 0.0), 1)
    return out.astype(X.dtype)


@op("AffineGrid", inputs="theta size", outputs="grid", family=F, layout=TERMINATE, infer=_affine_grid_infer,
    attrs={"align_corners": Attr("int", 0)},
    doc="Sampling grid from affine matrices. Equivalents: F.affine_grid.")
def affine_grid(theta, size, align_corners):
    dims = [int(d) for d in size]
    n, sp = dims[0], dims[2:]

    def base(d):
        return np.linspace(-1, 1, d) if align_corners else (np.arange(d) * 2 + 1) / d - 1

    axes = [base(d) for d in sp]
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m for m in reversed(mesh)] + [np.ones_like(mesh[0])]  # x, y, (z), 1
    pts = np.stack(coords, axis=-1).reshape(-1, len(sp) + 1)
    grid = np.einsum("pk,njk->npj", pts, theta.astype(np.float64))
    return grid.reshape((n,) + tuple(sp) + (len(sp),)).astype(theta.dtype)


def _iou(a, b):
    lo = np.maximum(a[:2], b[:2])
    hi = np.minimum(a[2:], b[2:])
    inter = np.prod(np.clip(hi - lo, 0, None))
    union = np.prod(a[2:] - a[:2]) + np.prod(b[2:] - b[:2]) - inter
    return inter / union if union > 0 else 0.0


def _nms_infer(inputs, attrs):
    """[selected, 3] rows of (batch, class, box), as many as the data selects."""
    return [(np.dtype(np.int64), (None, 3))]


@op("NonMaxSuppression", inputs="boxes scores max_output_boxes_per_class? iou_threshold? score_threshold?",
    outputs="selected_indices", family=F, layout=TERMINATE, infer=_nms_infer, attrs={"center_point_box": Attr("int", 0)},
    doc="Greedy non-maximum suppression per batch and class. Equivalents: torchvision nms, tf.image.non_max_suppression, NON_MAX_SUPPRESSION_V5.")
def non_max_suppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=None,
                        score_threshold=None, *, center_point_box):
    limit = int(max_output_boxes_per_class.ravel()[0]) if max_output_boxes_per_class is not None and \
        max_output_boxes_per_class.size else 0
    iou_t = float(iou_threshold.ravel()[0]) if iou_threshold is not None and iou_threshold.size else 0.0
    score_t = float(score_threshold.ravel()[0]) if score_threshold is not None and score_threshold.size else None
    b = boxes.astype(np.float64)
    if center_point_box:
        xy, wh = b[..., :2], b[..., 2:]
        corners = np.concatenate([xy - wh / 2, xy + wh / 2], axis=-1)
        corners = corners[..., [1, 0, 3, 2]]  # to y1, x1, y2, x2
    else:
        corners = np.concatenate([np.minimum(b[..., :2], b[..., 2:]), np.maximum(b[..., :2], b[..., 2:])], axis=-1)
    selected = []
    for bi in range(scores.shape[0]):
        for ci in range(scores.shape[1]):
            s = scores[bi, ci]
            order = np.argsort(-s, kind="stable")
            if score_t is not None:
                order = [i for i in order if s[i] > score_t]
            keep: list[int] = []
            for i in order:
                if len(keep) >= limit:
                    break
                if all(_iou(corners[bi, i], corners[bi, k]) <= iou_t for k in keep):
                    keep.append(int(i))
            selected.extend([bi, ci, k] for k in keep)
    return np.array(selected, dtype=np.int64).reshape(-1, 3)


@op("CenterCropPad", inputs="input_data shape", outputs="output_data", family=F, layout=TERMINATE,
    attrs={"axes": Attr("ints", None)}, doc="Center crop or zero-pad to a shape. Equivalents: torchvision CenterCrop, keras CenterCrop.")
def center_crop_pad(input_data, shape, axes):
    axes = [norm_axis(a, input_data.ndim) for a in axes] if axes else list(range(input_data.ndim))
    out = input_data
    for ax, target in zip(axes, [int(s) for s in shape]):
        cur = out.shape[ax]
        if cur > target:
            start = (cur - target) // 2
            out = np.take(out, np.arange(start, start + target), axis=ax)
        elif cur < target:
            before = (target - cur) // 2
            width = [(0, 0)] * out.ndim
            width[ax] = (before, target - cur - before)
            out = np.pad(out, width)
    return out


def _decompose_center_crop_pad(graph, node):
    """A Slice of the centre of each axis larger than its target, then a zero Pad around each smaller one
    (the extra element of an odd difference at the end, as the reference). Needs the sizes."""
    x, shape = node.inputs
    if x.shape is None or shape.const is None or not all(isinstance(d, int) for d in x.shape):
        return False
    rank = len(x.shape)
    axes = [norm_axis(a, rank) for a in node.attrs.get("axes") or range(rank)]
    b = Builder.replacing(node)
    crops, pads = [], [0] * (2 * rank)
    for axis, target in zip(axes, (int(t) for t in np.asarray(shape.const).ravel())):
        size = x.shape[axis]
        if size > target:
            start = (size - target) // 2
            crops.append((axis, start, start + target))
        elif size < target:
            pads[axis], pads[axis + rank] = (target - size) // 2, target - size - (target - size) // 2
    y = x
    if crops:
        y = slice_spans(b, y, crops, suffix="crop")
    if any(pads):
        y = b.op("Pad", y, b.const(np.array(pads, np.int64), b.name("pads")), suffix="pad")
    graph.replace_node(node, [y if y is not x else b.op("Identity", x)])
    return True


set_decomposition("CenterCropPad", _decompose_center_crop_pad)


@op("Col2Im", inputs="input image_shape block_shape", family=F, layout=IMPLICIT,
    attrs={"dilations": Attr("ints", None), "pads": Attr("ints", None), "strides": Attr("ints", None)},
    doc="Rearrange column blocks into an image (sums overlaps). Equivalents: nn.Fold.")
def col2im(input, image_shape, block_shape, dilations, pads, strides):
    img = [int(d) for d in image_shape]
    blk = [int(d) for d in block_shape]
    r = len(img)
    d = dilations or [1] * r
    s = strides or [1] * r
    p = pads or [0] * (2 * r)
    n, ck, _ = input.shape
    k = int(np.prod(blk))
    c = ck // k
    padded = [img[i] + p[i] + p[i + r] for i in range(r)]
    o = [(padded[i] - ((blk[i] - 1) * d[i] + 1)) // s[i] + 1 for i in range(r)]
    cols = input.reshape((n, c) + tuple(blk) + tuple(o))
    out = np.zeros((n, c) + tuple(padded), dtype=np.float64)
    for kk in np.ndindex(*blk):
        target = (slice(None), slice(None)) + tuple(
            slice(kk[i] * d[i], kk[i] * d[i] + (o[i] - 1) * s[i] + 1, s[i]) for i in range(r))
        out[target] += cols[(slice(None), slice(None)) + kk]
    crop = (slice(None), slice(None)) + tuple(slice(p[i], p[i] + img[i]) for i in range(r))
    return out[crop].astype(input.dtype)


@op("MaxUnpool", inputs="X I output_shape?", outputs="output", family=F, layout=IMPLICIT,
    attrs={"kernel_shape": Attr("ints"), "pads": Attr("ints", None), "strides": Attr("ints", None)},
    doc="Scatter pooled values back to their argmax positions. Equivalents: nn.MaxUnpool2d.")
def max_unpool(X, indices, output_shape=None, *, kernel_shape, pads, strides):
    r = X.ndim - 2
    s = strides or [1] * r
    p = pads or [0] * (2 * r)
    if output_shape is not None:
        shape = tuple(int(v) for v in output_shape)
    else:
        shape = X.shape[:2] + tuple((X.shape[2 + i] - 1) * s[i] + kernel_shape[i] - p[i] - p[i + r]
                                    for i in range(r))
    out = np.zeros(int(np.prod(shape)), dtype=X.dtype)
    out[indices.ravel()] = X.ravel()
    return out.reshape(shape)


@op("RoiAlign", inputs="X rois batch_indices", family=F, layout=IMPLICIT,
    attrs={"coordinate_transformation_mode": Attr("str", "half_pixel"), "mode": Attr("str", "avg"),
           "output_height": Attr("int", 1), "output_width": Attr("int", 1), "sampling_ratio": Attr("int", 0),
           "spatial_scale": Attr("float", 1.0)},
    doc="Region-of-interest align pooling. Equivalents: torchvision roi_align.")
def roi_align(X, rois, batch_indices, *, coordinate_transformation_mode, mode, output_height, output_width,
              sampling_ratio, spatial_scale):
    _, c, h, w = X.shape
    off = 0.5 if coordinate_transformation_mode == "half_pixel" else 0.0
    out = np.zeros((rois.shape[0], c, output_height, output_width), dtype=np.float64)
    x = X.astype(np.float64)
    for ri, roi in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = roi * spatial_scale - off
        rw, rh = x2 - x1, y2 - y1
        if not off:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / output_height, rw / output_width
        gh = sampling_ratio or int(np.ceil(rh / output_height))
        gw = sampling_ratio or int(np.ceil(rw / output_width))
        img = x[int(batch_indices[ri])]
        for ph in range(output_height):
            for pw in range(output_width):
                vals = []
                for iy in range(gh):
                    yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        vals.append(_bilinear(img, yy, xx, h, w, mode))
                if vals:
                    v = np.stack(vals)
                    out[ri, :, ph, pw] = v.max(axis=0) if mode == "max" else v.mean(axis=0)
    return out.astype(X.dtype)


def _bilinear(img, y, x, h, w, mode):
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    terms = [hy * hx * img[:, y0, x0], hy * lx * img[:, y0, x1], ly * hx * img[:, y1, x0], ly * lx * img[:, y1, x1]]
    return np.max(terms, axis=0) if mode == "max" else np.sum(terms, axis=0)
