"""Pattern recovery: rebuild the high-level ops a framework lowered into plain ones (PReLU from relu/neg/mul ...).

Each op's catalogue entry registers its recoveries (`schema.set_recovery`) with the op their pattern ends
in; frontends run them all (`recover_patterns`), trying each on every node of that op (until one replaces the
node), then drop what the rewrites left unused. Fusions (`schema.set_fusion`) rebuild ops a source may spell
in plain ops only for a writer that has one layer for them (`fuse_layers`): the graph keeps the source's
spelling for every other target.
"""

from __future__ import annotations

from collections.abc import Callable

from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema
from tensorbridge.passes.dce import eliminate_dead_code


def _by_root(kind: str) -> dict[str, list]:
    """The catalogue's recoveries or fusions (`kind`), by the op their pattern ends in."""
    by_root: dict[str, list] = {}
    for s in op_schema.all_schemas():
        for root, fn in getattr(s, kind):
            by_root.setdefault(root, []).append(fn)
    return by_root


def recover_patterns(graph: Graph) -> Graph:
    by_root = _by_root("recoveries")
    changed = False
    for node in list(graph.nodes):
        if node.graph is None:
            continue
        for fn in by_root.get(node.op, ()):
            if node.graph is None:  # an earlier recovery replaced it
                break
            changed = bool(fn(graph, node)) or changed
    return eliminate_dead_code(graph) if changed else graph


def fuse_layers(graph: Graph, blocker: Callable) -> Graph:
    """Rebuild every fused op the writer takes as it is (`blocker(node)` is None) where the graph spells it in
    plain ops; a fused node the writer would refuse is dropped again, and the plain ops stay."""
    by_root = _by_root("fusions")
    changed = False
    for node in list(graph.nodes):
        for fn in by_root.get(node.op, ()):
            fused = fn(graph, node) if node.graph is not None else None
            if fused is None:
                continue
            if blocker(fused) is None:
                graph.replace_node(node, fused.outputs)
                changed = True
                break
            graph.remove_node(fused)
    return eliminate_dead_code(graph) if changed else graph
