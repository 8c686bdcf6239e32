"""A dequantized tensor read by several ops gets one DequantizeLinear per reader (onnxruntime fuses
DQ -> op -> Q only when the DQ is the op's own)."""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.graph import Graph
from tensorbridge.passes.qdq_units import unshare_dequantize
from tensorbridge.reference.interpreter import run


def test_each_reader_gets_its_own_dequantize():
    g = Graph()
    x = g.add_input("x", np.int8, (2, 3))
    dq = g.op("DequantizeLinear", x, g.add_constant("s", np.float32(0.5)), g.add_constant("z", np.int8(3)))
    g.outputs = [g.op("Relu", dq), g.op("Neg", dq), dq]
    feeds = {"x": np.arange(-3, 3, dtype=np.int8).reshape(2, 3)}
    before = run(g, feeds)
    assert unshare_dequantize(g) == 2
    dqs = [n for n in g.nodes if n.op == "DequantizeLinear"]
    assert len(dqs) == 3 and all(len(n.outputs[0].uses()) + (n.outputs[0] in g.outputs) == 1 for n in dqs)
    after = run(g, feeds)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])
