"""Seeded arrays for the per-op tests of the TensorFlow-family frontends."""

from __future__ import annotations

import numpy as np


class Seeded:
    """Arrays drawn from one seeded generator, in the order a case table asks for them."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def floats(self, *shape) -> np.ndarray:
        return self.rng.standard_normal(shape).astype(np.float32)

    def ints(self, low, high, *shape, dtype=np.int32) -> np.ndarray:
        return self.rng.integers(low, high, shape).astype(dtype)
