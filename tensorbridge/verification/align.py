"""Inputs and outputs of a model converted with `--io-layout target` hold images in the other channel order."""

from __future__ import annotations

import numpy as np

from tensorbridge.ops.layout_rules import channel_perms


def reorder(arr, shape):
    """`arr` moved between channels-last and channels-first when that is what makes it fit `shape`.

    Shapes that fit both ways (H == W == C) are left as they are: a wrong guess then fails loudly."""
    arr = np.asarray(arr)
    if shape is None or arr.ndim != len(shape) or arr.ndim < 3 or _fits(arr.shape, shape):
        return arr
    for perm in channel_perms(arr.ndim).values():
        if _fits(tuple(arr.shape[p] for p in perm), shape):
            return np.transpose(arr, perm)
    return arr


def _fits(actual, shape) -> bool:
    return all(not isinstance(d, int) or d == a for d, a in zip(shape, actual))
