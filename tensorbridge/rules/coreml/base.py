"""The Core ML registry object and what its rules share.

Two namespaces: kind "mil" holds the ML Program ops (`.mlpackage`), read by a converter `fn(imp, op)` where
`imp.tensor("x")` is an argument as an IR value and `imp.const("axes")` one that must be a constant (NumPy);
kind "layer" holds the neural-network layers of an `.mlmodel`, read by `fn(imp, layer)` from the layer's
protobuf message. Every argument an op carries must be read by its rule: one no rule asks for is a blocker,
never a silently dropped option. Export rules write IR nodes with coremltools' MIL builder (`w.mb`).
Core ML's image ops are channels-first (N, C, H, W), like the IR's default.
"""

from __future__ import annotations

import functools

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir.shapes import is_static
from tensorbridge.ops.patterns import constant as const
from tensorbridge.rules.core import Registry

R = Registry("coreml")
mil = functools.partial(R.imports, kind="mil")
layer = functools.partial(R.imports, kind="layer")

#: IR dtypes Core ML holds, and the one each is stored as (Core ML has no 64-bit integers or floats)
DTYPES = {np.dtype("float32"): np.float32, np.dtype("float16"): np.float16, np.dtype("int32"): np.int32,
          np.dtype("int64"): np.int32, np.dtype("bool"): np.bool_}


def known(value) -> bool:
    return value is not None and is_static(value.shape)


def int32(array, what: str) -> np.ndarray:
    """Integers as Core ML stores them: int32, when every value fits."""
    array = np.asarray(array)
    if array.size and (array.min() < -2**31 or array.max() >= 2**31):
        raise ModelError(f"{what} holds values beyond int32, Core ML's only integer type")
    return array.astype(np.int32)


def axes_of(node, index: int, attr: str = "axes") -> list[int] | None:
    """An op's axes, from its attribute or a constant input (None: not constant)."""
    if node.attrs.get(attr) is not None:
        return [int(a) for a in node.attrs[attr]]
    value = node.input(index) if index < len(node.inputs) else None
    if value is None:
        return []
    c = const(value)
    return None if c is None else [int(a) for a in c.reshape(-1)]


def positive(axes, rank: int) -> list[int]:
    return [a % rank for a in axes]


def check_const_inputs(*indices: int, what: str = "its parameters"):
    """An export check: the inputs at `indices` (when present) must be constants."""
    def check(node):
        for i in indices:
            v = node.input(i) if i < len(node.inputs) else None
            if v is not None and v.const is None:
                return f"Core ML takes {what} as constants"
        return None
    return check
