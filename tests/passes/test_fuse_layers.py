"""Fusions: a writer with one layer for an op rebuilds it from the plain ops a source spelled it in, only where
every intermediate is read there alone, and leaves the graph as it was where the writer would refuse it."""

from __future__ import annotations

from collections import Counter

import numpy as np

import tensorbridge as tb
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import fuse_layers


def _plain_attention(causal: int = 0) -> Graph:
    """A MultiHeadAttention decomposed: the Dense / Reshape / Transpose / Attention spelling of a source."""
    rng = np.random.default_rng(0)
    g = Graph("attention")
    x = g.add_input("x", "float32", (2, 5, 8))
    weights = [g.add_constant(f"w{i}", rng.standard_normal((8, 8)).astype(np.float32)) for i in range(4)]
    biases = [g.add_constant(f"b{i}", rng.standard_normal(8).astype(np.float32)) for i in range(4)]
    g.outputs.append(g.op("MultiHeadAttention", x, x, x, *weights, *biases, name="mha", num_heads=2,
                          is_causal=causal))
    infer_shapes(g)
    legalize(g, lambda n: "spelled out" if n.op == "MultiHeadAttention" else None, "test")
    return g


def _ops(g: Graph) -> Counter:
    return Counter(n.op for n in g.nodes)


def test_the_plain_spelling_fuses_back_into_one_layer():
    for causal in (0, 1):
        g = _plain_attention(causal)
        feeds = {"x": np.random.default_rng(1).standard_normal((2, 5, 8)).astype(np.float32)}
        expected = tb.run(g, feeds)[g.outputs[0].name]
        assert _ops(g)["Attention"] == 1 and _ops(g)["Dense"] == 4
        fuse_layers(g, lambda n: None)
        assert _ops(g) == Counter({"MultiHeadAttention": 1})
        assert g.nodes[0].attrs["is_causal"] == causal and g.nodes[0].attrs["num_heads"] == 2
        np.testing.assert_allclose(tb.run(g, feeds)[g.outputs[0].name], expected, rtol=1e-5, atol=1e-6)


def test_nothing_fuses_where_an_intermediate_is_read_elsewhere():
    g = _plain_attention()
    query = next(n for n in g.nodes if n.op == "Dense")
    g.outputs.append(query.outputs[0])  # the query projection is also an output: it must stay
    before = _ops(g)
    fuse_layers(g, lambda n: None)
    assert _ops(g) == before


def test_a_layer_the_writer_refuses_leaves_the_graph_as_it_was():
    g = _plain_attention()
    before, names = _ops(g), [n.name for n in g.nodes]
    fuse_layers(g, lambda n: "refused" if n.op == "MultiHeadAttention" else None)
    assert _ops(g) == before and [n.name for n in g.nodes] == names
