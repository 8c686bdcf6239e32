"""Layout conversion by local transposes (the simple form; the planner comes with its own issue).

Every layout-carrying op whose `layout` differs from the target's is rewritten to the
target layout with a Transpose on its data input and the inverse Transpose on its outputs;
per-axis constant operands (Resize scales/sizes/roi) are permuted once. Back-to-back
inverse Transposes are then cancelled. Correct for any graph; it leaves transposes between
layout-carrying ops and the layout-transparent ops around them.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema
from tensorbridge.passes.infer_shapes import infer_node


def _perms(rank: int) -> tuple[list[int], list[int]]:
    """(channels-last -> channels-first, channels-first -> channels-last)."""
    to_first = [0, rank - 1, *range(1, rank - 1)]
    to_last = [0, *range(2, rank), 1]
    return to_first, to_last


def convert_layout(graph: Graph, target: str = "NCHW") -> Graph:
    for node in list(graph.nodes):
        schema = op_schema.get(node.op)
        if schema is None or schema.layout.kind != "implicit" or schema.attrs.get("layout") is None \
                or schema.attrs["layout"].kind != "str":
            continue  # (RNN ops have an unrelated integer `layout` attribute)
        layout = node.attrs.get("layout", schema.attrs["layout"].default)
        if layout == target:
            continue
        x = node.inputs[0]
        if x.shape is None:
            continue  # rank unknown: left for the backend to report
        rank = len(x.shape)
        to_target, back = _perms(rank) if target == "NCHW" else _perms(rank)[::-1]
        if to_target == list(range(rank)):  # rank <= 2: channels already sit at axis 1
            node.attrs["layout"] = target
            continue
        t_in = graph.add_node("Transpose", [x], {"perm": to_target}, name=f"{node.name}.to_{target}",
                              meta=node.meta, before=node)
        infer_node(t_in)
        node.set_input(0, t_in.outputs[0])
        if node.op == "Resize":
            _permute_resize_operands(graph, node, to_target)
        node.attrs["layout"] = target
        after = node
        for out in list(node.outputs):
            if not out.uses() and out not in graph.outputs:
                continue
            index = graph.nodes.index(after) + 1
            following = graph.nodes[index] if index < len(graph.nodes) else None
            t_out = graph.add_node("Transpose", [out], {"perm": back}, name=f"{node.name}.to_{layout}",
                                   meta=node.meta, before=following)
            for user, i in out.uses():
                if user is not t_out:
                    user.set_input(i, t_out.outputs[0])
            graph.outputs = [t_out.outputs[0] if o is out else o for o in graph.outputs]
            # the node's output now holds target-layout data; the transpose restores the old one
            new_value = t_out.outputs[0]
            new_value.dtype, new_value.shape = out.dtype, out.shape
            out.shape = tuple(out.shape[p] for p in to_target) if out.shape is not None else None
            new_value.name, out.name = out.name, graph.unique_name(f"{out.name}.{target.lower()}")
            after = t_out
    return cancel_transposes(graph)


def _permute_resize_operands(graph: Graph, node, perm: list[int]) -> None:
    rank = len(perm)
    for index in (1, 2, 3):
        v = node.input(index)
        if v is None or v.const is None or v.const.size == 0:
            continue
        arr = np.asarray(v.const)
        if index == 1 and arr.size == 2 * rank:  # roi: starts then ends
            new = np.concatenate([arr[:rank][perm], arr[rank:][perm]])
        elif arr.size == rank:
            new = arr[perm]
        else:
            continue
        node.set_input(index, graph.add_constant(f"{v.name}.{node.attrs.get('layout', 'perm')}", new))


def cancel_transposes(graph: Graph) -> Graph:
    """Remove Transpose pairs that compose to the identity."""
    changed = True
    while changed:
        changed = False
        for node in list(graph.nodes):
            if node.op != "Transpose" or node.graph is None:
                continue
            src = node.inputs[0].producer
            if src is None or src.op != "Transpose" or src.attrs.get("perm") is None or node.attrs.get("perm") is None:
                continue
            p1, p2 = src.attrs["perm"], node.attrs["perm"]
            if [p1[i] for i in p2] != list(range(len(p1))):
                continue
            original = src.inputs[0]
            out = node.outputs[0]
            was_output = out in graph.outputs
            if was_output and (original in graph.inputs or original in graph.outputs):
                continue  # keep the graph's input/output names
            name = out.name
            graph.replace_all_uses(out, original)
            graph.remove_node(node)
            if not src.outputs[0].uses() and src.outputs[0] not in graph.outputs:
                graph.remove_node(src)
            if was_output:
                original.name = name
            changed = True
    return graph
