"""Seeded weights for the MXNet fixtures, regenerated from a parameter's name and shape alone, so that the
recorded architectures need no committed weights (ResNet-50's are 100 MB). NumPy only: the recording script
imports this inside the MXNet venv (numpy 1.23), the tests in the main venv.
"""

from __future__ import annotations

import zlib

import numpy as np


def parameter(name: str, shape) -> np.ndarray:
    """He-scaled weights, biases and shifts near 0, BatchNorm/LayerNorm scales near 1."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    shape = tuple(int(d) for d in shape)
    if name.endswith(("gamma", "_scale")):
        return (1 + 0.2 * rng.uniform(-1, 1, shape)).astype(np.float32)
    if name.endswith(("beta", "bias", "_shift")):
        return (0.2 * rng.uniform(-1, 1, shape)).astype(np.float32)
    if name.endswith("alpha"):  # prelu slopes
        return rng.uniform(0.05, 0.4, shape).astype(np.float32)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(shape[0], 1)
    return (rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))).astype(np.float32)


def image(shape, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
