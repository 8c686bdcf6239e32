"""PyTorch's own decompositions for ATen ops the registry has no rule for.

torch.export's programs may hold in-place ops (`aten.add_`) and composite ops; before refusing, the
program is functionalized and each op without an import rule is decomposed with the core ATen table
(`ExportedProgram.run_decompositions`). Ops with a rule stay whole: a direct rule gives better code. The same
retrace inlines the higher-order ops torch.export wraps a `with torch.autocast(...)` or `torch.set_grad_enabled`
block in (EfficientViT's attention turns autocast off), applying autocast's casts as it runs.
"""

from __future__ import annotations

import operator

from tensorbridge.rules.torch import REGISTRY

ROUNDS = 4  # a decomposition may produce ops that decompose further
#: the context blocks torch.export keeps as higher-order ops, which a retrace inlines
CONTEXT_BLOCKS = frozenset({"wrap_with_autocast", "wrap_with_set_grad_enabled"})


def unconvertible(ep) -> set:
    """The program's ATen overloads with no import rule, and its context blocks."""
    from tensorbridge.frontends.torch.importer import rule_key

    found = set()
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        key = rule_key(node)
        if key is not None and (key[0] in ("aten", "complex") and REGISTRY.import_rule(key[1], key[0]) is None
                                or key[0] == "higher_order" and key[1] in CONTEXT_BLOCKS):
            found.add(node.target)
    return found


def decompose_unconvertible(ep):
    """`ep` functionalized, with each op that has no rule replaced by its core ATen decomposition (unchanged
    when every op has a rule)."""
    import torch

    missing = unconvertible(ep)
    for _ in range(ROUNDS):
        if not missing:
            return ep
        table = torch.export.default_decompositions()
        keep = [op for op in list(table.keys()) if op not in missing]
        for op in keep:
            table.pop(op)
        ep = ep.run_decompositions(table)
        still = unconvertible(ep)
        if still >= missing:  # nothing more to gain
            return ep
        missing = still
    return ep
