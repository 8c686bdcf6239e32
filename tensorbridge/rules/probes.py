"""Patterns the writers of layer-based formats (Darknet, Caffe) recognise by running the node on a probe, rather
than by reading attributes that several spellings of the same computation set differently."""

from __future__ import annotations

import numpy as np


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
