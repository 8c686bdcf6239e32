"""Dead-code elimination: drop nodes none of whose outputs reach a graph output.

Frontends stay faithful and may import values nothing reads (an LSTM's final states, say);
backends run this pass so generated models carry no dead work.
"""

from __future__ import annotations

from tensorbridge.ir.graph import Graph


def eliminate_dead_code(graph: Graph) -> Graph:
    """Remove unused nodes (in place, subgraphs included) and constants no node reads."""
    changed = True
    while changed:
        changed = False
        outputs = {id(v) for v in graph.outputs}
        for node in reversed(list(graph.nodes)):
            if not any(v.uses() or id(v) in outputs for v in node.outputs):
                graph.remove_node(node)
                changed = True
    for node in graph.nodes:
        for sub in node.subgraphs():
            eliminate_dead_code(sub)
    for v in list(graph.constants.values()):
        if not v.uses() and v not in graph.outputs:
            graph.remove_constant(v)
    return graph
