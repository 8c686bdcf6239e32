"""The arctangent, arcsine and arccosine a target without them computes (a reduced argument and Cephes'
polynomial, in float32) are as close to the true values as float32 library functions are."""

from __future__ import annotations

import numpy as np
import pytest

from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema
from tensorbridge.reference.interpreter import run

_EDGES = [0.0, 1.0, -1.0, 1e-30, 0.99999, -0.99999]
_LINE = np.linspace(-30, 30, 20001)


@pytest.mark.parametrize("op, truth, points", [
    ("Atan", np.arctan, np.concatenate([_LINE, _EDGES, [np.inf, -np.inf]])),
    ("Asin", np.arcsin, np.concatenate([np.linspace(-1, 1, 20001), _EDGES])),
    ("Acos", np.arccos, np.concatenate([np.linspace(-1, 1, 20001), _EDGES]))])
def test_the_decomposition_is_float32_accurate(op, truth, points):
    x = points.astype(np.float32)
    g = Graph("inverse_trig")
    y = Builder(g, "f", {}).op(op, g.add_input("x", np.float32, x.shape))
    g.outputs.append(y)
    while any(n.op in ("Atan", "Asin", "Acos") for n in g.nodes):
        node = next(n for n in g.nodes if n.op in ("Atan", "Asin", "Acos"))
        assert schema.get(node.op).decompose(g, node) is True
    got = run(g, {"x": x})[g.outputs[0].name].astype(np.float64)
    expected = truth(x.astype(np.float64))
    assert np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-30)) < 4e-7
