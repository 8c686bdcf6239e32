"""`Value`: one edge of the graph — a graph input, a constant, or a node output.

A value knows its producer and keeps its list of uses up to date by itself: nodes register
and unregister their inputs, so passes never edit edge lists by hand. Values compare by
identity; the name is presentation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorbridge.ir import dtypes, shapes

if TYPE_CHECKING:
    from tensorbridge.ir.node import Node


@dataclass
class QuantParams:
    """Quantization of a value: real = (stored - zero_point) * scale, per tensor or per `axis`."""

    scale: np.ndarray
    zero_point: np.ndarray
    storage: np.dtype
    axis: int | None = None

    def to_json(self) -> dict:
        return {"scale": np.asarray(self.scale, np.float64).ravel().tolist(),
                "zero_point": np.asarray(self.zero_point).astype(np.int64).ravel().tolist(),
                "storage": dtypes.name(self.storage), "axis": self.axis}

    @classmethod
    def from_json(cls, d: dict) -> QuantParams:
        storage = dtypes.dtype(d["storage"])
        return cls(np.asarray(d["scale"], np.float32), np.asarray(d["zero_point"]).astype(storage),
                   storage, d.get("axis"))


class Value:
    """An SSA edge: dtype, shape (possibly symbolic), optional constant data and metadata."""

    __slots__ = ("name", "dtype", "shape", "const", "producer", "index", "_uses", "layout",
                 "quant", "meta")

    def __init__(self, name: str, dtype=None, shape=None, const: np.ndarray | None = None):
        self.name = name
        self.dtype = None if dtype is None else dtypes.dtype(dtype)
        self.shape = shapes.normalize(shape)
        self.const = const
        self.producer: Node | None = None
        self.index = 0
        self._uses: list[tuple[Node, int]] = []
        #: physical axis order when the value holds its data permuted (physical = transpose(logical, layout)),
        #: set by the layout planner; "rows" for a flattened tensor whose rows follow a permuted input; else None
        self.layout: tuple[int, ...] | str | None = None
        self.quant: QuantParams | None = None
        self.meta: dict[str, Any] = {}
        if const is not None:
            self.dtype = dtypes.dtype(const.dtype)
            self.shape = tuple(const.shape)

    def uses(self) -> list[tuple[Node, int]]:
        """(node, input index) pairs that read this value."""
        return list(self._uses)

    @property
    def learned(self) -> bool:
        """A trained parameter: a float constant the source neither wrote in its code (`meta["role"]` "literal")
        nor keeps outside training ("buffer": a PyTorch buffer, or what was computed from buffers and literals)."""
        return self.const is not None and dtypes.is_float(np.asarray(self.const).dtype) \
            and self.meta.get("role") not in ("literal", "buffer")

    @property
    def is_constant(self) -> bool:
        return self.const is not None

    def __repr__(self) -> str:
        dt = dtypes.name(self.dtype) if self.dtype is not None else "?"
        return f"%{self.name}: {dt}{shapes.format_shape(self.shape)}"
