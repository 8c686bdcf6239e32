"""The checker lists every structural problem at once."""

import numpy as np
import pytest

from tensorbridge.errors import InvariantError
from tensorbridge.ir.checker import check
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import Value


def test_reports_all_problems():
    g = Graph("bad")
    x = g.add_input("x", "float32", (2,))
    ghost = Value("ghost", "float32", (2,))
    g.op("Add", x, ghost, name="dangling")
    g.add_node("Relu", [x], {"alpha": 1.0}, name="bad_attr")
    g.add_node("NoSuchOp", [x], name="unknown")
    g.add_node("Conv", [x], name="short")
    with pytest.raises(InvariantError) as e:
        check(g)
    msg = str(e.value)
    for part in ("dangling", "bad_attr", "NoSuchOp", "short"):
        assert part in msg


def test_valid_graph_passes():
    g = Graph("ok")
    x = g.add_input("x", "float32", (2,))
    g.outputs.append(g.op("Add", x, g.add_constant("one", np.ones(2, np.float32))))
    check(g)
