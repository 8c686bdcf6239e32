"""Patterns the writers of layer-based formats (Darknet, Caffe) recognise by running the node on a probe, rather
than by reading attributes that several spellings of the same computation set differently."""

from __future__ import annotations

import numpy as np


def window_pool(x: np.ndarray, kind: str, k, s, p, out, count_include_pad: bool = True) -> np.ndarray:
    """Max, average or sum over the 2-D windows of an (N, C, H, W) array as Caffe's and MXNet's CPU code compute
    them: `out` (rows, columns) windows, window i starting at i * stride - pad; max and sum read only the image;
    the average divides by the part of the window inside the padded image (inside the image alone without
    `count_include_pad`)."""
    n, c, h, w = x.shape
    y = np.empty((n, c, *out), np.float64)
    for i in range(out[0]):
        for j in range(out[1]):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
            a0, b0, a1, b1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            window = x[:, :, a0:a1, b0:b1]
            if kind == "max":
                y[:, :, i, j] = window.max(axis=(2, 3))
            elif kind == "sum":
                y[:, :, i, j] = window.sum(axis=(2, 3))
            else:
                area = (h1 - h0) * (w1 - w0) if count_include_pad else (a1 - a0) * (b1 - b0)
                y[:, :, i, j] = window.sum(axis=(2, 3)) / area
    return y


def repeat_factor(node) -> int | None:
    """The integer factor by which a Resize of an image (N, C, H, W) repeats each pixel along both spatial axes
    (nearest-neighbour upsampling, proven on a probe), or None."""
    x, y = node.input(0).shape, node.outputs[0].shape
    if node.attrs.get("mode", "nearest") != "nearest" or x is None or y is None or len(x) != 4 or len(y) != 4 or \
            not all(isinstance(d, int) for d in (*x, *y)) or x[:2] != y[:2]:
        return None
    factor = y[2] // x[2]
    if factor < 1 or y[2] != factor * x[2] or y[3] != factor * x[3]:
        return None
    from tensorbridge.reference.interpreter import run_node

    probe = np.arange(np.prod(x), dtype=np.float32).reshape(x)
    got = run_node(node, [probe, *(None if v is None or v.const is None else np.asarray(v.const)
                                   for v in node.inputs[1:])])[0]
    return factor if np.array_equal(got, probe.repeat(factor, 2).repeat(factor, 3)) else None
