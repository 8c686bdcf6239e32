"""Legalisation: rewrite ops a target lacks into ops it has, using schema decompositions.

`legalize(graph, blocker, target)` decomposes every node for which `blocker(node)` gives a reason
(the target has no rule for the op, or its rule does not take this configuration: a registry's
`blocker`), repeating until nothing changes, and raises one error listing every node left with its
reason. A decomposition returns False (or a string saying why) when it does not cover a node's configuration;
the why joins the node's reason.
"""

from __future__ import annotations

from collections.abc import Callable

from tensorbridge.errors import BlockerReport
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.ops import schema as op_schema


def legalize(graph: Graph, blocker: Callable[[Node], str | None], target: str,
             holds: Callable[[str], str | None] | None = None) -> Graph:
    """`holds(dtype name)`: why the target cannot hold a tensor of that type at all, checked on the graph's
    inputs and outputs that no node reads or writes (an input whose uses were folded away, a constant output);
    the nodes' own tensors are their rules' to check."""
    report = BlockerReport(f"export to {target}", target)
    _legalize(graph, blocker, target, report)
    for kind, values in (("input", [v for v in graph.inputs if not v.uses()]),
                         ("output", [v for v in graph.outputs if v.producer is None])):
        for v in values:
            why = holds(dtypes.name(v.dtype)) if holds is not None and v.dtype is not None else None
            if why:
                report.add(f"graph {kind}", v.name, why)
    report.raise_if_any()
    return graph


def _legalize(graph: Graph, blocker, target: str, report: BlockerReport) -> None:
    """Decompose what `blocker` rejects in `graph` and its subgraphs; add what stays to `report`."""
    uncovered: dict[str, str] = {}  # node name -> why its decomposition does not cover it
    for _ in range(8):  # decompositions may produce ops that decompose further
        pending = [n for n in graph.nodes if blocker(n) is not None]
        if not pending:
            break
        changed = False
        for node in pending:
            schema = op_schema.get(node.op)
            done = schema.decompose(graph, node) if schema is not None and schema.decompose is not None else False
            if isinstance(done, str):
                uncovered[node.name] = done
            elif done:
                changed = True
        if not changed:
            break
    for node in graph.nodes:
        reason = blocker(node)
        if reason is not None:
            why = uncovered.get(node.name)
            report.add(node.op, node.name, f"{reason} ({why})" if why else reason)
        for g in node.subgraphs():
            _legalize(g, blocker, target, report)
