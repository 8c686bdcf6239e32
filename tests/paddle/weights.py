"""Seeded weights for the Paddle fixtures, regenerated from a parameter's saved name and shape alone, so that the
recorded models need no committed weights (ResNet50-vd's are 90 MB). NumPy only: the recording script imports
this inside the Paddle venv, the tests in the main venv. BatchNorm statistics (`*.w_1`, `*.w_2` of a batch norm)
are calibrated on data instead, and recorded.
"""

from __future__ import annotations

import zlib

import numpy as np

NORMS = ("batch_norm", "layer_norm", "group_norm", "instance_norm")


def is_statistic(name: str) -> bool:
    return name.startswith("batch_norm") and name.endswith((".w_1", ".w_2"))


def parameter(name: str, shape) -> np.ndarray:
    """He-scaled weights, biases near 0, norm scales near 1, batch norm shifts in (0.5, 1) as trained nets mostly
    have them (shifts around 0 make a deep random net amplify float32 rounding, ~1.2x a layer: ResNet50-vd in
    Paddle was 8e-5 from its float64 result with them), PReLU slopes in (0.05, 0.4)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    shape = tuple(int(d) for d in shape)
    layer, _, slot = name.rpartition(".")
    if layer.startswith(NORMS) and slot == "w_0":
        return (1 + 0.2 * rng.uniform(-1, 1, shape)).astype(np.float32)
    if layer.startswith("batch_norm") and slot == "b_0":
        return rng.uniform(0.5, 1.0, shape).astype(np.float32)
    if slot.startswith("b_"):
        return (0.2 * rng.uniform(-1, 1, shape)).astype(np.float32)
    if layer.startswith("p_re_lu"):
        return rng.uniform(0.05, 0.4, shape).astype(np.float32)
    if layer.startswith("embedding"):
        return rng.standard_normal(shape).astype(np.float32)
    fan_in = shape[0] if layer.startswith("linear") else int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))).astype(np.float32)


def image(shape, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
