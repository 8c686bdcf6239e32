"""The SSD layers of Caffe (weiliu89's fork): PriorBox is a constant of the input sizes and is read as one;
DetectionOutput (box decoding, non-maximum suppression, top-k) is refused with the way around it."""

from __future__ import annotations

import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.caffe.base import image, layer


def prior_boxes(p, layer_hw: tuple[int, int], image_hw: tuple[int, int]) -> np.ndarray:
    """PriorBox's output (1, 2, H * W * priors * 4): each prior's corners (normalised to the image), then the
    variances, in SSD's order (per pixel: each min size, its max size, then the other aspect ratios)."""
    lh, lw = layer_hw
    ih = p.img_h if p.HasField("img_h") else p.img_size if p.HasField("img_size") else image_hw[0]
    iw = p.img_w if p.HasField("img_w") else p.img_size if p.HasField("img_size") else image_hw[1]
    sh = p.step_h if p.HasField("step_h") else p.step if p.HasField("step") else ih / lh
    sw = p.step_w if p.HasField("step_w") else p.step if p.HasField("step") else iw / lw
    mins, maxs = list(p.min_size), list(p.max_size)
    if not mins or (maxs and len(maxs) != len(mins)) or any(a >= b for a, b in zip(mins, maxs)):
        raise ModelError(f"min_size {mins} / max_size {maxs}: one min size or more, each below its max size")
    ratios = [1.0]
    for r in p.aspect_ratio:
        for q in ([r, 1 / r] if p.flip else [r]):
            if all(abs(q - seen) > 1e-6 for seen in ratios):
                ratios.append(q)
    boxes = []
    for y in range(lh):
        for x in range(lw):
            cx, cy = (x + p.offset) * sw, (y + p.offset) * sh
            for i, m in enumerate(mins):
                sizes = [(m, m)]
                if maxs:
                    side = math.sqrt(m * maxs[i])
                    sizes.append((side, side))
                sizes += [(m * math.sqrt(r), m / math.sqrt(r)) for r in ratios[1:]]
                boxes += [((cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw, (cy + bh / 2) / ih)
                          for bw, bh in sizes]
    corners = np.array(boxes, np.float32).reshape(-1)
    if p.clip:
        corners = np.clip(corners, 0, 1)
    variance = list(p.variance) or [0.1]
    if len(variance) not in (1, 4):
        raise ModelError(f"variance {variance}: one value or four")
    variances = np.resize(np.array(variance * (4 // len(variance)), np.float32), corners.size)
    return np.stack([corners, variances])[None]


@layer("PriorBox", produces=())
def prior_box(imp, lay):
    if len(imp.bottoms) != 2:
        raise ModelError("PriorBox needs two bottoms (the feature map and the image)")
    feature, picture = (image(v, "PriorBox")[2:] for v in imp.bottoms)
    return imp.b.const(prior_boxes(lay.prior_box_param, feature, picture), imp.name("priors"), literal=False)


@layer("DetectionOutput", produces=())
def detection_output(imp, lay):
    raise ModelError("DetectionOutput (SSD's box decoding, non-maximum suppression and top-k) has no IR "
                     "equivalent: convert the net up to its bottoms (the box offsets, class scores and priors "
                     f"{', '.join(lay.bottom)}) with outputs=[...] and decode them after the model")
