"""Where's output broadcasts its condition too (an attention mask selecting between two scalars is a mask-shaped
tensor, not a scalar: inferring () once wrote an MXNet model that broadcast nothing)."""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.reference.interpreter import run


def test_where_of_scalars_takes_the_condition_shape():
    g = Graph("where")
    cond = g.add_input("mask", np.bool_, (1, 1, 4, 4))
    b = Builder(g)
    y = b.op("Where", cond, b.const(np.float32(0)), b.const(np.float32(-np.inf)))
    g.outputs.append(y)
    assert y.shape == (1, 1, 4, 4) and y.dtype == np.float32
    mask = np.tril(np.ones((4, 4), bool))[None, None]
    assert run(g, {"mask": mask})[y.name].shape == y.shape
