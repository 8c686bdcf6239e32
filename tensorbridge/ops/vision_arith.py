"""Vision and cache ops as gathers, scatters and matmuls, for targets without them (static sizes).

MaxUnpool scatters into a flat zero tensor; Col2Im gathers, for every kernel position, the column
value landing on each pixel and sums them; AffineGrid is one MatMul of the constant base grid with the
transposed matrices; GridSample computes each axis's taps and weights from the grid with elementwise
ops and gathers the input's flattened spatial axes (RoiAlign likewise, its sample points computed per box from
the box's corners); TensorScatter picks, per cache position, the update written there (or keeps the cache) with
GatherElements and Where.
"""

from __future__ import annotations

import itertools

import numpy as np

from tensorbridge.ir import shapes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.infer import norm_axis
from tensorbridge.ops.schema import set_decomposition
from tensorbridge.ops.vision import MODE_ALIASES, affine_grid


def _static(*values) -> bool:
    return all(shapes.is_static(v.shape) for v in values)


def _decompose_max_unpool(graph, node) -> bool:
    x, indices, out_shape = node.inputs[0], node.inputs[1], node.input(2)
    y = node.outputs[0]
    if not _static(x, y) or (out_shape is not None and out_shape.const is None):
        return False
    b = Builder.replacing(node)
    flat = b.op("ScatterElements", b.named(np.zeros(int(np.prod(y.shape)), x.dtype), "zeros"),
                b.op("Reshape", indices, b.named([-1], "flat"), suffix="flat_indices"),
                b.op("Reshape", x, b.named([-1], "flat_values"), suffix="flat_values"), axis=0, suffix="scatter")
    graph.replace_node(node, [b.op("Reshape", flat, b.named(y.shape, "shape"), suffix="unflat")])
    return True


def _col2im_sources(image, block, dilations, pads, strides):
    """Per kernel position and output pixel: the flat column index (k * L + l) landing there, and whether any."""
    rank = len(image)
    padded = [image[i] + pads[i] + pads[i + rank] for i in range(rank)]
    blocks = [(padded[i] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in range(rank)]
    count = int(np.prod(blocks))
    pixels = np.stack(np.meshgrid(*(np.arange(n) for n in image), indexing="ij"), -1).reshape(-1, rank)
    index = np.zeros((int(np.prod(block)), len(pixels)), np.int64)
    valid = np.zeros(index.shape, bool)
    for k, offset in enumerate(itertools.product(*(range(n) for n in block))):
        start = pixels + np.array(pads[:rank]) - np.array(offset) * np.array(dilations)
        place, rest = np.divmod(start, strides)
        ok = (rest == 0).all(1) & (place >= 0).all(1) & (place < np.array(blocks)).all(1)
        flat = np.ravel_multi_index(tuple(np.clip(place, 0, np.array(blocks) - 1).T), blocks)
        index[k], valid[k] = k * count + flat, ok
    return index, valid


def _decompose_col2im(graph, node) -> bool:
    x, image, block = node.inputs
    if not _static(x) or image.const is None or block.const is None:
        return False
    image, block = [int(d) for d in np.ravel(image.const)], [int(d) for d in np.ravel(block.const)]
    rank = len(image)
    index, valid = _col2im_sources(image, block, node.attrs.get("dilations") or [1] * rank,
                                   node.attrs.get("pads") or [0] * (2 * rank), node.attrs.get("strides") or [1] * rank)
    n, ck, blocks = x.shape
    channels = ck // int(np.prod(block))
    b = Builder.replacing(node)
    cols = b.op("Reshape", x, b.named([n, channels, -1], "columns_shape"), suffix="columns")
    taps = b.op("Gather", cols, b.named(index, "sources"), axis=2, suffix="taps")
    kept = b.op("Mul", taps, b.named(valid, "landing", x.dtype), suffix="landing_taps")
    total = b.op("ReduceSum", kept, b.named([2], "kernel_axis"), keepdims=0, suffix="overlaps")
    graph.replace_node(node, [b.op("Reshape", total, b.named([n, channels] + image, "image_shape"), suffix="image")])
    return True


def _decompose_affine_grid(graph, node) -> bool:
    theta, size = node.inputs
    if size.const is None or theta.shape is None:
        return False
    dims = [int(d) for d in np.ravel(size.const)]
    rank = len(dims) - 2
    # the base grid: the op applied to the identity matrix gives each point's coordinates
    eye = np.eye(rank, rank + 1)[None]
    base = affine_grid(eye, [1, 1] + dims[2:], node.attrs.get("align_corners", 0)).reshape(-1, rank)
    points = np.concatenate([base, np.ones((len(base), 1))], axis=1).astype(theta.dtype)
    b = Builder.replacing(node)
    rows = b.op("Transpose", theta, perm=[0, 2, 1], suffix="columns")
    grid = b.op("MatMul", b.named(points, "base_grid"), rows, suffix="grid")
    graph.replace_node(node, [b.op("Reshape", grid, b.named([-1] + dims[2:] + [rank], "grid_shape"),
                                   suffix="grid_shaped")])
    return True


def _decompose_tensor_scatter(graph, node) -> bool:
    """present[b, p] = update[b, rel] where rel = p - write_index[b] (mod the cache length when circular) lies in
    [0, update length), else past[b, p]."""
    past, update, where = node.inputs[0], node.inputs[1], node.input(2)
    if not _static(past, update):
        return False
    rank = len(past.shape)
    axis = norm_axis(node.attrs.get("axis", -2), rank)
    length, written = past.shape[axis], update.shape[axis]
    b = Builder.replacing(node)
    positions = b.named(np.arange(length)[None], "positions", np.int64)
    rel = positions if where is None else b.op("Sub", positions, b.op(
        "Unsqueeze", b.op("Cast", where, to="int64", suffix="starts"), b.named([1], "batch_column"),
        suffix="start_column"), suffix="relative")
    if node.attrs.get("mode") == "circular":
        rel = b.op("Mod", rel, b.named(length, "cache_length", np.int64), suffix="wrapped")
    along = [past.shape[0] if where is not None else 1] + [1] * (rank - 1)
    along[axis] = length
    rel = b.op("Reshape", rel, b.named(along, "relative_shape"), suffix="relative_along")
    inside = b.op("And", b.op("GreaterOrEqual", rel, b.named(0, "zero", np.int64), suffix="after"),
                  b.op("Less", rel, b.named(written, "written", np.int64), suffix="before"),
                  suffix="inside")
    source = b.op("Clip", rel, b.named(0, "first", np.int64),
                  b.named(written - 1, "last", np.int64), suffix="source")
    index_shape = list(update.shape)
    index_shape[axis] = length
    source = b.op("Expand", source, b.named(index_shape, "index_shape"), suffix="source_index")
    picked = b.op("GatherElements", update, source, axis=axis, suffix="picked")
    graph.replace_node(node, [b.op("Where", inside, picked, past, suffix="present")])
    return True


class _Sampler:
    """The elementwise ops GridSample's reference computes per spatial axis, on [N, *out] coordinates."""

    def __init__(self, b: Builder, dtype):
        self.b, self.dtype = b, dtype
        self.numbers: dict[tuple, object] = {}

    def num(self, value, tag: str):
        """A scalar constant of the grid's type, made once per (value, tag) however many taps read it."""
        key = (value, tag)
        if key not in self.numbers:
            self.numbers[key] = self.b.named(value, tag, self.dtype)
        return self.numbers[key]

    def ints(self, values: list[int], tag: str):
        """An int64 list (axes, a shape), made once per (values, tag) however many ops read it."""
        key = (tuple(values), tag)
        if key not in self.numbers:
            self.numbers[key] = self.b.named(values, tag, np.int64)
        return self.numbers[key]

    def op(self, name: str, *inputs, tag: str, **attrs):
        return self.b.op(name, *inputs, suffix=tag, **attrs)

    def coordinate(self, grid, axis: int, rank: int, size: int, align: bool):
        """The grid's entry for `axis` (the last entry is the last spatial axis) in pixels."""
        g = self.op("Gather", grid, self.b.named(rank - 1 - axis, f"entry{axis}"), axis=-1, tag=f"grid{axis}")
        shifted = self.op("Add", g, self.num(1.0, "one"), tag=f"shifted{axis}")
        if align:
            return self.op("Mul", shifted, self.num((size - 1) / 2, f"half_span{axis}"), tag=f"pixel{axis}")
        scaled = self.op("Mul", shifted, self.num(size / 2, f"half_size{axis}"), tag=f"scaled{axis}")
        return self.op("Sub", scaled, self.num(0.5, "half"), tag=f"pixel{axis}")

    def bounded(self, c, axis: int, size: int, padding: str, align: bool):
        if padding == "zeros":
            return c
        if padding == "reflection":
            c = self.reflected(c, axis, *((0.0, size - 1.0) if align else (-0.5, size - 0.5)))
        return self.op("Clip", c, self.num(0.0, "low"), self.num(size - 1.0, f"high{axis}"), tag=f"bounded{axis}")

    def reflected(self, c, axis: int, low: float, high: float):
        """c folded into [low, high] by reflections off its ends."""
        span = high - low
        if span <= 0:
            return self.op("Mul", c, self.num(0.0, "zero"), tag=f"reflected{axis}")
        d = self.op("Abs", self.op("Sub", c, self.num(low, f"low{axis}"), tag=f"from_low{axis}"), tag=f"distance{axis}")
        flips = self.op("Floor", self.op("Div", d, self.num(span, f"span{axis}"), tag=f"spans{axis}"),
                        tag=f"flips{axis}")
        extra = self.op("Sub", d, self.op("Mul", flips, self.num(span, f"span{axis}"), tag=f"folded{axis}"),
                        tag=f"extra{axis}")
        half = self.op("Floor", self.op("Mul", flips, self.num(0.5, "half"), tag=f"half_flips{axis}"),
                       tag=f"pairs{axis}")
        even = self.op("Equal", flips, self.op("Add", half, half, tag=f"even_flips{axis}"), tag=f"even{axis}")
        return self.op("Where", even, self.op("Add", extra, self.num(low, f"low{axis}"), tag=f"forward{axis}"),
                       self.op("Sub", self.num(high, f"high_edge{axis}"), extra, tag=f"backward{axis}"),
                       tag=f"reflected{axis}")

    def taps(self, c, axis: int, size: int, mode: str, padding: str, align: bool):
        """[(index as int64, weight or None, inside)] for this axis (c: bounded, except for cubic, whose taps are
        bounded one by one)."""
        if mode == "nearest":
            spots = [(self.op("Round", c, tag=f"nearest{axis}"), None)]
        elif mode == "linear":
            low = self.op("Floor", c, tag=f"floor{axis}")
            frac = self.op("Sub", c, low, tag=f"frac{axis}")
            spots = [(low, self.op("Sub", self.num(1.0, "one"), frac, tag=f"low_weight{axis}")),
                     (self.op("Add", low, self.num(1.0, "one"), tag=f"ceil{axis}"), frac)]
        else:
            spots = self.cubic_taps(c, axis, size, padding, align)
        out = []
        for t, (at, weight) in enumerate(spots):
            inside = self.op("And", self.op("GreaterOrEqual", at, self.num(0.0, "low"), tag=f"above{axis}_{t}"),
                             self.op("LessOrEqual", at, self.num(size - 1.0, f"high{axis}"), tag=f"below{axis}_{t}"),
                             tag=f"inside{axis}_{t}")
            clipped = self.op("Clip", at, self.num(0.0, "low"), self.num(size - 1.0, f"high{axis}"),
                              tag=f"clipped{axis}_{t}")
            out.append((self.op("Cast", clipped, to="int64", tag=f"index{axis}_{t}"), weight, inside))
        return out

    def cubic_taps(self, c, axis: int, size: int, padding: str, align: bool):
        """Four taps around floor(c), weighted by the cubic kernel (a = -0.75) at their distances 1 + f, f, 1 - f,
        2 - f (f: c's fraction); each tap's index bounded by the padding mode, rounded."""
        low = self.op("Floor", c, tag=f"floor{axis}")
        frac = self.op("Sub", c, low, tag=f"frac{axis}")
        a = -0.75
        spots = []
        for k, (offset, sign, outer) in enumerate(((1.0, 1.0, True), (0.0, 1.0, False), (1.0, -1.0, False),
                                                   (2.0, -1.0, True))):
            t = self.op("Add", self.num(offset, f"offset{k}"), self.op("Mul", frac, self.num(sign, f"sign{k}"),
                                                                       tag=f"signed{axis}_{k}"), tag=f"t{axis}_{k}")
            coefficients = (a, -5 * a, 8 * a, -4 * a) if outer else (a + 2, -(a + 3), 0.0, 1.0)
            weight = self.num(coefficients[0], f"cubic{k}_0")
            for i, coefficient in enumerate(coefficients[1:], start=1):  # Horner
                weight = self.op("Add", self.op("Mul", weight, t, tag=f"horner{axis}_{k}_{i}"),
                                 self.num(coefficient, f"cubic{k}_{i}"), tag=f"poly{axis}_{k}_{i}")
            at = self.op("Add", low, self.num(float(k - 1), f"tap{k}"), tag=f"at{axis}_{k}")
            if padding == "reflection":
                at = self.op("Floor", self.op("Add", self.bounded(at, axis, size, padding, align),
                                              self.num(0.5, "half"), tag=f"rounding{axis}_{k}"), tag=f"reflect{axis}_{k}")
            elif padding == "border":
                at = self.bounded(at, axis, size, padding, align)
            spots.append((at, weight))
        return spots


def _decompose_grid_sample(graph, node) -> bool:
    """Per axis, pixel coordinates bounded by the padding mode and their taps (clipped indices, weights, in-bounds
    masks: one for nearest, two for linear, four for cubic); per combination of taps, GatherElements on the
    input's flattened spatial axes, weighted, summed."""
    x, grid = node.inputs
    mode = node.attrs.get("mode", "linear")
    mode = MODE_ALIASES.get(mode, mode)
    if not _static(x, grid) or node.attrs.get("layout", "NCHW") != "NCHW":
        return False
    n, c, *sizes = x.shape
    out = list(grid.shape[1:-1])
    rank, points = len(sizes), int(np.prod(grid.shape[1:-1]))
    b = Builder.replacing(node)
    s = _Sampler(b, grid.dtype)
    align, padding = bool(node.attrs.get("align_corners", 0)), node.attrs.get("padding_mode", "zeros")
    per_axis = []
    for axis, size in enumerate(sizes):
        pixel = s.coordinate(grid, axis, rank, size, align)
        if mode != "cubic":
            pixel = s.bounded(pixel, axis, size, padding, align)
        per_axis.append(s.taps(pixel, axis, size, mode, padding, align))
    flat_x = b.op("Reshape", x, b.named([n, c, -1], "flat_shape"), suffix="flat")
    terms = []
    for t, combo in enumerate(itertools.product(*per_axis)):
        index = combo[0][0]  # flattened row-major: index * size + the next axis's index
        for axis, (at, _, _) in enumerate(combo[1:], start=1):
            index = s.op("Add", s.op("Mul", index, b.named(sizes[axis], f"size{axis}"), tag=f"row{t}_{axis}"), at,
                         tag=f"flat_index{t}_{axis}")
        index = s.op("Expand", s.op("Reshape", index, s.ints([n, 1, points], "point_shape"), tag=f"points{t}"),
                     s.ints([n, c, points], "gather_shape"), tag=f"gather_index{t}")
        picked = s.op("GatherElements", flat_x, index, axis=2, tag=f"picked{t}")
        weight, inside = None, None
        for axis, (_, w, ok) in enumerate(combo):
            weight = w if weight is None else (weight if w is None else s.op("Mul", weight, w, tag=f"weight{t}_{axis}"))
            inside = ok if inside is None else s.op("And", inside, ok, tag=f"all_inside{t}_{axis}")
        kept = s.op("Cast", inside, to=str(np.dtype(grid.dtype)), tag=f"kept{t}")
        weight = kept if weight is None else s.op("Mul", weight, kept, tag=f"masked_weight{t}")
        weight = s.op("Reshape", weight, s.ints([n, 1, points], "point_shape"), tag=f"point_weight{t}")
        terms.append(s.op("Mul", picked, weight, tag=f"term{t}"))
    total = terms[0] if len(terms) == 1 else b.op("Sum", *terms, suffix="sampled")
    graph.replace_node(node, [b.op("Reshape", total, b.named([n, c] + out, "output_shape"), suffix="output")])
    return True


def _roi_grid(node, rois) -> tuple[int, int] | None:
    """RoiAlign's samples per output cell along (y, x): the sampling ratio, or, when it is 0 (adaptive), the one
    count every (constant) box gives; None when the count would depend on boxes known only at run time."""
    ratio = node.attrs.get("sampling_ratio", 0)
    if ratio > 0:
        return ratio, ratio
    if rois.const is None or rois.const.size == 0:
        return None
    half = node.attrs.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    box = np.asarray(rois.const, np.float64) * node.attrs.get("spatial_scale", 1.0)
    counts = []
    for extent, cells in ((box[:, 3] - box[:, 1], node.attrs.get("output_height", 1)),
                          (box[:, 2] - box[:, 0], node.attrs.get("output_width", 1))):
        each = np.ceil((extent if half else np.maximum(extent, 1.0)) / cells)
        if len(set(each.tolist())) != 1:
            return None
        counts.append(int(each[0]))
    return counts[0], counts[1]


def _roi_axis(s: _Sampler, scaled, axis: str, column: int, cells: int, samples: int, size: int, half: bool):
    """For one image axis, from the (R, 4) scaled boxes: the (R, cells * samples) sample coordinates' clipped low
    and high pixel indices (int64), their weights, and whether each sample lies within [-1, size]."""
    b = s.b
    start = s.op("Gather", scaled, b.named(column, f"{axis}_start_column"), axis=1, tag=f"{axis}_start")
    end = s.op("Gather", scaled, b.named(column + 2, f"{axis}_end_column"), axis=1, tag=f"{axis}_end")
    extent = s.op("Sub", end, start, tag=f"{axis}_extent")
    if not half:
        extent = s.op("Max", extent, s.num(1.0, "one"), tag=f"{axis}_extent_at_least_one")
    cell = s.op("Div", extent, s.num(float(cells), f"{axis}_cells"), tag=f"{axis}_cell")
    offsets = np.array([c + (i + 0.5) / samples for c in range(cells) for i in range(samples)])
    at = s.op("Add", s.op("Unsqueeze", start, s.ints([1], "last_axis"), tag=f"{axis}_start_column_vector"),
              s.op("Mul", s.op("Unsqueeze", cell, s.ints([1], "last_axis"), tag=f"{axis}_cell_column_vector"),
                   b.named(offsets, f"{axis}_offsets", s.dtype), tag=f"{axis}_offset"), tag=f"{axis}_samples")
    inside = s.op("And", s.op("GreaterOrEqual", at, s.num(-1.0, "minus_one"), tag=f"{axis}_above"),
                  s.op("LessOrEqual", at, s.num(float(size), f"{axis}_size"), tag=f"{axis}_below"),
                  tag=f"{axis}_inside")
    clipped = s.op("Clip", at, s.num(0.0, "zero"), s.num(size - 1.0, f"{axis}_last"), tag=f"{axis}_clipped")
    low = s.op("Floor", clipped, tag=f"{axis}_low")
    high = s.op("Min", s.op("Add", low, s.num(1.0, "one"), tag=f"{axis}_next"), s.num(size - 1.0, f"{axis}_last"),
                tag=f"{axis}_high")
    frac = s.op("Sub", clipped, low, tag=f"{axis}_frac")
    weights = (s.op("Sub", s.num(1.0, "one"), frac, tag=f"{axis}_low_weight"), frac)
    indices = tuple(s.op("Cast", v, to="int64", tag=f"{axis}_{name}_index") for v, name in ((low, "low"), (high, "high")))
    return indices, weights, inside


def _decompose_roi_align(graph, node) -> bool:
    """Per box, the sample coordinates of every output cell along y and x (elementwise from the box), their
    bilinear taps gathered from the input's (N * H * W, C) pixel rows, weighted, zeroed outside [-1, size], then
    averaged (or, mode "max", maxed) over each cell's samples."""
    x, rois, batch_indices = node.inputs
    grid = _roi_grid(node, rois)
    if grid is None:
        return "an adaptive sampling_ratio (0) samples each box by its size, known only when the model runs"
    if not _static(x) or len(x.shape) != 4:
        return False
    n, c, h, w = x.shape
    a = node.attrs
    cells = (a.get("output_height", 1), a.get("output_width", 1))
    half = a.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    b = Builder.replacing(node)
    s = _Sampler(b, x.dtype)
    scaled = s.op("Mul", rois, s.num(float(a.get("spatial_scale", 1.0)), "spatial_scale"), tag="scaled_boxes")
    if half:
        scaled = s.op("Sub", scaled, s.num(0.5, "half"), tag="shifted_boxes")
    (y_low, y_high), (y_low_w, y_high_w), y_inside = _roi_axis(s, scaled, "y", 1, cells[0], grid[0], h, half)
    (x_low, x_high), (x_low_w, x_high_w), x_inside = _roi_axis(s, scaled, "x", 0, cells[1], grid[1], w, half)
    pixels = s.op("Reshape", s.op("Transpose", x, perm=[0, 2, 3, 1], tag="channels_last"),
                  b.named([n * h * w, c], "pixel_rows"), tag="pixels")
    image = s.op("Mul", s.op("Cast", batch_indices, to="int64", tag="image_index"), b.named(h * w, "image_size"),
                 tag="image_start")
    image = s.op("Unsqueeze", image, s.ints([1, 2], "sample_axes"), tag="image_start_per_sample")
    # per tap along x, its pixel columns and weights as (R, 1, samples along x), read by both taps along y
    x_taps = [(s.op("Unsqueeze", xi, s.ints([1], "y_axis"), tag=f"x_{xname}_columns"),
               s.op("Unsqueeze", xw, s.ints([1], "y_axis"), tag=f"x_{xname}_weights"), xname)
              for xi, xw, xname in ((x_low, x_low_w, "low"), (x_high, x_high_w, "high"))]
    terms = []
    for yi, yw, yname in ((y_low, y_low_w, "low"), (y_high, y_high_w, "high")):
        row = s.op("Unsqueeze", s.op("Mul", yi, b.named(w, "row_length"), tag=f"y_{yname}_row"), s.ints([2], "x_axis"),
                   tag=f"y_{yname}_rows")
        row_start = s.op("Add", image, row, tag=f"row_start_{yname}")
        y_weight = s.op("Unsqueeze", yw, s.ints([2], "x_axis"), tag=f"y_{yname}_weights")
        for columns, x_weight, xname in x_taps:
            tap = f"{yname}_{xname}"
            picked = s.op("Gather", pixels, s.op("Add", row_start, columns, tag=f"pixel_{tap}"), axis=0,
                          tag=f"picked_{tap}")
            weight = s.op("Unsqueeze", s.op("Mul", y_weight, x_weight, tag=f"weight_{tap}"),
                          s.ints([3], "channel_axis"), tag=f"weight_{tap}_per_channel")
            terms.append(s.op("Mul", picked, weight, tag=f"term_{tap}"))
    pooled_max = a.get("mode", "avg") == "max"
    value = b.op("Max" if pooled_max else "Sum", *terms, suffix="bilinear")
    inside = s.op("And", s.op("Unsqueeze", y_inside, s.ints([2], "x_axis"), tag="y_inside_grid"),
                  s.op("Unsqueeze", x_inside, s.ints([1], "y_axis"), tag="x_inside_grid"), tag="inside")
    kept = s.op("Unsqueeze", s.op("Cast", inside, to=str(np.dtype(x.dtype)), tag="kept"),
                s.ints([3], "channel_axis"), tag="kept_per_channel")
    value = s.op("Mul", value, kept, tag="sampled")
    # (boxes * cell rows, samples per row, cell columns, samples per column, C): rank 5, which Core ML still holds
    cellwise = s.op("Reshape", value, b.named([-1, grid[0], cells[1], grid[1], c], "cell_samples"),
                    tag="cell_samples")
    pooled = s.op("ReduceMax" if pooled_max else "ReduceMean", cellwise, b.named([1, 3], "sample_axes_of_cells"),
                  keepdims=0, tag="pooled")
    pooled = s.op("Reshape", pooled, b.named([-1, cells[0], cells[1], c], "pooled_shape"), tag="pooled_boxes")
    graph.replace_node(node, [s.op("Transpose", pooled, perm=[0, 3, 1, 2], tag="output")])
    return True


set_decomposition("MaxUnpool", _decompose_max_unpool)
set_decomposition("Col2Im", _decompose_col2im)
set_decomposition("AffineGrid", _decompose_affine_grid)
set_decomposition("TensorScatter", _decompose_tensor_scatter)
set_decomposition("GridSample", _decompose_grid_sample)
set_decomposition("RoiAlign", _decompose_roi_align)
