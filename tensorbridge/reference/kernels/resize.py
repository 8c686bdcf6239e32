"""Resize (nearest / n-linear / cubic, all ONNX coordinate modes, antialias).

Interpolation is separable: each resized axis gets a table of input taps and weights per
output position, and the axes are processed one after another.
"""

from __future__ import annotations

import numpy as np


def _source_coords(out_size, in_size, scale, mode, roi_start, roi_end):
    x = np.arange(out_size, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = out_size / (scale * in_size)
        center = in_size / 2
        return center * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_size > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        if out_size > 1:
            return roi_start * (in_size - 1) + x * (roi_end - roi_start) * (in_size - 1) / (out_size - 1)
        return np.full_like(x, 0.5 * (roi_start + roi_end) * (in_size - 1))
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def _nearest(x, nearest_mode):
    if nearest_mode == "round_prefer_floor":
        return np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x))
    if nearest_mode == "round_prefer_ceil":
        return np.where(x - np.floor(x) == 0.5, np.ceil(x), np.round(x))
    if nearest_mode == "floor":
        return np.floor(x)
    if nearest_mode == "ceil":
        return np.ceil(x)
    raise ValueError(f"unknown nearest_mode {nearest_mode!r}")


def _cubic(t, a):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def axis_taps(in_size, out_size, scale, *, mode, ctm, roi=(0.0, 1.0), nearest_mode="round_prefer_floor",
              cubic_a=-0.75, exclude_outside=False, antialias=False):
    """(indices [out, T], weights [out, T], out_of_range [out]) for one axis."""
    x = _source_coords(out_size, in_size, scale, ctm, *roi)
    oob = (x < 0) | (x > in_size - 1)
    if mode == "nearest":
        idx = np.clip(_nearest(x, nearest_mode), 0, in_size - 1).astype(np.int64)[:, None]
        return idx, np.ones_like(idx, dtype=np.float64), oob
    radius = 1 if mode == "linear" else 2
    kscale = scale if antialias and scale < 1 else 1.0
    reach = int(np.ceil(radius / kscale))
    base = np.floor(x).astype(np.int64)
    taps = base[:, None] + np.arange(1 - reach, reach + 1)[None, :]
    t = (x[:, None] - taps) * kscale
    w = np.maximum(0.0, 1 - np.abs(t)) if mode == "linear" else _cubic(t, cubic_a)
    inside = (taps >= 0) & (taps < in_size)
    if exclude_outside:
        w = np.where(inside, w, 0.0)
    if antialias or exclude_outside:
        s = w.sum(axis=1, keepdims=True)
        w = w / np.where(s == 0, 1, s)
    return np.clip(taps, 0, in_size - 1), w, oob


def resize(x, out_shape, scales, *, mode, ctm, roi=None, nearest_mode="round_prefer_floor",
           cubic_a=-0.75, exclude_outside=False, antialias=False, extrapolation_value=0.0):
    work = x.astype(np.float64) if x.dtype != np.float64 else x
    oob_total = np.zeros(out_shape, dtype=bool)
    for ax in range(x.ndim):
        in_size, out_size = x.shape[ax], out_shape[ax]
        r = (roi[ax], roi[ax + x.ndim]) if roi is not None and len(roi) else (0.0, 1.0)
        if in_size == out_size and scales[ax] == 1 and ctm != "tf_crop_and_resize":
            continue
        idx, w, oob = axis_taps(in_size, out_size, scales[ax], mode=mode, ctm=ctm, roi=r,
                                nearest_mode=nearest_mode, cubic_a=cubic_a,
                                exclude_outside=exclude_outside, antialias=antialias)
        moved = np.moveaxis(work, ax, -1)
        work = np.moveaxis((moved[..., idx] * w).sum(axis=-1), -1, ax)
        if ctm == "tf_crop_and_resize":
            shape = [1] * x.ndim
            shape[ax] = out_size
            oob_total = oob_total | oob.reshape(shape)
    if ctm == "tf_crop_and_resize":
        work = np.where(oob_total, extrapolation_value, work)
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        work = np.clip(np.rint(work), info.min, info.max)
    return work.astype(x.dtype)
