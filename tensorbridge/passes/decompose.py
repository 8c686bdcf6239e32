"""Legalisation: rewrite ops a target lacks into ops it has, using schema decompositions.

`legalize(graph, supports)` decomposes every node whose op `supports(op)` rejects, repeating
until nothing changes, and raises one error listing every op left. A decomposition returns
False when it does not cover a node's configuration (the node then stays a blocker).
"""

from __future__ import annotations

from collections.abc import Callable

from tensorbridge.errors import BlockerReport
from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema


def legalize(graph: Graph, supports: Callable[[str], bool], target: str) -> Graph:
    report = BlockerReport(f"export to {target}", target)
    _legalize(graph, supports, target, report)
    report.raise_if_any()
    return graph


def _legalize(graph: Graph, supports, target: str, report: BlockerReport) -> None:
    """Decompose what `supports` rejects in `graph` and its subgraphs; add what stays to `report`."""
    for _ in range(8):  # decompositions may produce ops that decompose further
        pending = [n for n in graph.nodes if not supports(n.op)]
        if not pending:
            break
        changed = False
        for node in pending:
            schema = op_schema.get(node.op)
            if schema is not None and schema.decompose is not None and schema.decompose(graph, node):
                changed = True
        if not changed:
            break
    for node in graph.nodes:
        if not supports(node.op):
            report.add(node.op, node.name, f"{target} has no equivalent and the IR has no decomposition")
        for g in node.subgraphs():
            _legalize(g, supports, target, report)
