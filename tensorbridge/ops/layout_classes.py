"""Layout classes: how an op relates to the NCHW/NHWC layout of its tensors.

- IMPLICIT: carries a layout (`layout` attribute): Conv, Pool, BatchNorm, Resize, DepthToSpace.
- TRANSPARENT: elementwise, follows its inputs (broadcasting operands need rank alignment).
- ATTRIBUTE: follows its inputs but has axis-like attributes/inputs to rewrite.
- TERMINATE: layout stops here unless proven safe (Reshape, Flatten, MatMul on >=3-D).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayoutClass:
    kind: str
    axis_attrs: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.kind + (f"({', '.join(self.axis_attrs)})" if self.axis_attrs else "")


IMPLICIT = LayoutClass("implicit")
TRANSPARENT = LayoutClass("transparent")
TERMINATE = LayoutClass("terminate")


def attribute(*axis_attrs: str) -> LayoutClass:
    return LayoutClass("attribute", tuple(axis_attrs))
