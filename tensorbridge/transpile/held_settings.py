"""Settings read from a layer the class holds (`self.conv.stride`, `self.conv.kernel_size[0]`): the target's layer
names and shapes them differently, so they are kept in `__init__` beside the layer, as the source framework keeps
them (`stride=2` as `(2, 2)`), under `self.<layer>_<setting>`, which the reads then read. Applied to the source
before translation; a layer made other than by one assignment of a constructor call keeps the refusal.
"""

from __future__ import annotations

import ast

from tensorbridge.transpile.layer_subclass import kept_settings
from tensorbridge.transpile.syntax import is_self_attr


def keep_held_settings(cls: ast.ClassDef, find_layer, settings_of) -> None:
    """Rewrite `cls` so each setting it reads from a held layer is kept beside it. `find_layer(call)` gives the
    code row of a framework layer constructor call (else None); `settings_of(row)` the settings that layer keeps,
    {name: rank or None} (see CodeTable.layer_settings)."""
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    if init is None:
        return
    reads = {(n.value.attr, n.attr) for n in ast.walk(cls) if isinstance(n, ast.Attribute) and
             isinstance(n.ctx, ast.Load) and is_self_attr(n.value)}
    assigned = [t.attr for n in ast.walk(cls) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if is_self_attr(t)]
    kept = {}
    for i, stmt in reversed(list(enumerate(init.body))):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and is_self_attr(stmt.targets[0])
                and isinstance(stmt.value, ast.Call) and assigned.count(stmt.targets[0].attr) == 1):
            continue
        layer = stmt.targets[0].attr
        row = find_layer(stmt.value)
        settings = settings_of(row) if row is not None else {}
        wanted = {s: rank for s, rank in settings.items() if (layer, s) in reads and f"{layer}_{s}" not in assigned}
        if not wanted or not all(_plain(a) for a in [*stmt.value.args, *(k.value for k in stmt.value.keywords)]):
            continue
        settings_made = kept_settings(stmt.value, wanted, row.signature.params, prefix=f"{layer}_")
        init.body[i + 1:i + 1] = settings_made
        kept.update({(layer, t.targets[0].attr[len(layer) + 1:]): t.targets[0].attr for t in settings_made})
    if kept:
        _ReadKept(kept).visit(cls)
        ast.fix_missing_locations(cls)


def _plain(node) -> bool:
    """An argument evaluated again without a different result: names, literals, attributes, arithmetic."""
    return all(isinstance(n, (ast.Name, ast.Constant, ast.Attribute, ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp,
                              ast.operator, ast.unaryop, ast.expr_context)) for n in ast.walk(node))


class _ReadKept(ast.NodeTransformer):
    def __init__(self, kept: dict):
        self.kept = kept

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and is_self_attr(node.value) and (node.value.attr, node.attr) in self.kept:
            return ast.copy_location(ast.Attribute(node.value.value, self.kept[node.value.attr, node.attr],
                                                   ast.Load()), node)
        return node
