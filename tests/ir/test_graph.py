"""Graph editing keeps use-def links consistent; order, cycles and copies behave."""

import numpy as np
import pytest

from tensorbridge.errors import InvariantError
from tensorbridge.ir.checker import check
from tensorbridge.ir.graph import Graph, clone


def _graph():
    g = Graph("t")
    x = g.add_input("x", "float32", ("batch", 4))
    w = g.add_constant("w", np.ones((4, 2), np.float32))
    y = g.op("MatMul", x, w, name="mm")
    z = g.op("Relu", y, name="relu")
    g.outputs.append(z)
    return g, x, w, y, z


def test_uses_follow_edits():
    g, x, w, y, z = _graph()
    assert [n.name for n, _ in y.uses()] == ["relu"]
    t = g.add_node("Tanh", [x], name="tanh", before=z.producer).outputs[0]
    g.replace_all_uses(y, t)
    assert y.uses() == [] and [n.name for n, _ in t.uses()] == ["relu"]
    g.remove_node(y.producer)
    assert [n.op for n in g.nodes] == ["Tanh", "Relu"]
    check(g)
    assert w.uses() == []


def test_replace_all_uses_updates_graph_outputs():
    g, x, w, y, z = _graph()
    g.replace_all_uses(z, y)
    assert g.outputs == [y]


def test_remove_used_node_is_refused():
    g, x, w, y, z = _graph()
    with pytest.raises(InvariantError):
        g.remove_node(y.producer)


def test_topological_sort_and_cycle():
    g, x, w, y, z = _graph()
    g.nodes.reverse()
    g.topological_sort()
    assert [n.name for n in g.nodes] == ["mm", "relu"]
    a = g.add_node("Add", [z, z], name="loop").outputs[0]
    g.nodes[1].set_input(0, a)  # relu now reads a value computed from its own output
    with pytest.raises(InvariantError, match="cycle"):
        g.topological_sort()
    with pytest.raises(InvariantError):
        check(g)


def test_clone_is_independent_but_shares_weights():
    g, *_ = _graph()
    c = clone(g)
    c.nodes[1].op = "Sigmoid"
    assert g.nodes[1].op == "Relu"
    assert c.constants["w"].const is g.constants["w"].const
    assert c.outputs[0].producer is c.nodes[1]


def test_symbolic_dims_survive_inference():
    from tensorbridge.passes.infer_shapes import infer_shapes

    g, *_ = _graph()
    infer_shapes(g)
    assert g.outputs[0].shape == ("batch", 2)
