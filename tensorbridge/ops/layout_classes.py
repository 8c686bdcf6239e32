"""Layout classes: how an op relates to the NCHW/NHWC layout of its tensors (read by passes/layout.py).

- IMPLICIT: carries a layout (`layout` attribute): Conv, Pool, BatchNorm, Resize, DepthToSpace;
  `operands` permutes its per-axis constant operands (Resize's scales and sizes).
- TRANSPARENT: elementwise, follows its inputs (broadcasting operands need rank alignment).
- ATTRIBUTE: follows its inputs but has axis-like attributes/inputs to rewrite, by its `rule`
  (ops/layout_rules.py); `aligned` ops follow most of their inputs and align the rest (Concat),
  `places_inputs` ops place every input themselves (GatherElements), `through` ops are moved
  behind when a permuted form of their output is asked for (a DequantizeLinear: the integer
  tensor is permuted, once if it is a weight).
- TERMINATE: layout stops here unless proven safe: `reshapes` ops (Reshape, Flatten) read a
  permuted tensor when the permutation moves only size-1 axes, or when only `head` ops read them:
  ops with a constant weight whose rows follow a flattened input (Dense, MatMul, Gemm), given as
  (weight input, row axis; None: by the op's transB).
- PERMUTE: a Transpose, absorbed by the planner (its output is its input held another way).
- SHAPE: reads only its input's shape (Shape, Size).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class LayoutClass:
    kind: str
    axis_attrs: tuple[str, ...] = ()
    rule: Callable | None = None
    operands: Callable | None = None
    aligned: bool = False
    places_inputs: bool = False
    through: bool = False
    reshapes: bool = False
    head: tuple[int, int | None] | None = None

    def __str__(self) -> str:
        return self.kind + (f"({', '.join(self.axis_attrs)})" if self.axis_attrs else "")


IMPLICIT = LayoutClass("implicit")
TRANSPARENT = LayoutClass("transparent")
TERMINATE = LayoutClass("terminate")
PERMUTE = LayoutClass("permute")
SHAPE = LayoutClass("shape")


def implicit(operands: Callable) -> LayoutClass:
    return LayoutClass("implicit", operands=operands)


def attribute(*axis_attrs: str, rule: Callable | None = None, **flags) -> LayoutClass:
    return LayoutClass("attribute", tuple(axis_attrs), rule=rule, **flags)


def terminate(reshapes: bool = False, head: tuple[int, int | None] | None = None) -> LayoutClass:
    return LayoutClass("terminate", reshapes=reshapes, head=head)
