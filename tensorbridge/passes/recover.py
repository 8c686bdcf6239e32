"""Pattern recovery: rebuild the high-level ops a framework lowered into plain ones (PReLU from relu/neg/mul ...).

Each op's catalogue entry registers its recoveries (`schema.set_recovery`) with the op their pattern ends
in; this pass tries each on every node of that op (until one replaces the node), then drops what the rewrites
left unused.
"""

from __future__ import annotations

from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema
from tensorbridge.passes.dce import eliminate_dead_code


def recover_patterns(graph: Graph) -> Graph:
    by_root: dict[str, list] = {}
    for s in op_schema.all_schemas():
        for root, fn in s.recoveries:
            by_root.setdefault(root, []).append(fn)
    changed = False
    for node in list(graph.nodes):
        if node.graph is None:
            continue
        for fn in by_root.get(node.op, ()):
            if node.graph is None:  # an earlier recovery replaced it
                break
            changed = bool(fn(graph, node)) or changed
    return eliminate_dead_code(graph) if changed else graph
