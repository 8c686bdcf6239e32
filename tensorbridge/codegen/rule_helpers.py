"""What the code generators' emit rules share: the Unsupported signal, operand helpers and checks."""

from __future__ import annotations

import numpy as np


class Unsupported(Exception):
    """A node configuration the target framework cannot express (collected into one report)."""


def const_operand(v) -> np.ndarray:
    """The constant data of a weight operand (layers need weights as data)."""
    if v is None or v.const is None:
        raise Unsupported(f"{v.name if v is not None else 'weight'} must be a constant to become a layer weight")
    return np.asarray(v.const)


def same(values):
    """(3, 3) -> 3: layer constructors take one int for a square kernel, stride or padding."""
    values = tuple(int(v) for v in values)
    return values[0] if values and all(v == values[0] for v in values) else values
