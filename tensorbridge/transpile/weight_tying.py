"""Weight tying by assignment: `self.wte.weight = self.lm_head.weight` in `__init__` (nanoGPT, minimal GPTs).

After that statement the two layers hold one weight. Targets cannot share a weight between layers whose weights
are laid out differently (a Keras Dense kernel is the transpose of an Embedding's table), so the class is read
as the source framework would compute it with the tie spelled out: the tied layer (the one assigned to) is left
out and each call of it becomes its function on the other layer's weight (`F.embedding(idx,
self.lm_head.weight)`). One weight stays, as in the source; port_weights skips the left-out layer, whose weight
is the kept one's. Only layers whose call is exactly that function of their weight are rewritten (the
SourceSkeleton's `tied_layers`); anything else is a reason to refuse.
"""

from __future__ import annotations

import ast

from tensorbridge.transpile.syntax import is_self


def untie(cls: ast.ClassDef, imports, tied_layers: dict, weight: str) -> tuple[list[str], list[str]]:
    """Rewrite each tie in `cls`'s `__init__` in place; (notes, reasons to refuse), each naming its line."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    notes, refusals = [], []
    for stmt in list(init.body if init else []):
        ties = _tie(stmt, weight)
        if ties is None:
            continue
        tied, kept = ties
        why = _rewrite(cls, init, stmt, tied, kept, imports, tied_layers, weight)
        if why:
            refusals.append(f"line {stmt.lineno}: {ast.unparse(stmt)}: {why}")
        else:
            notes.append(f"line {stmt.lineno}: {ast.unparse(stmt)}: the tied layer {ast.unparse(tied)} is written "
                         f"as its function of {ast.unparse(kept)}.{weight} (one weight, as in the source)")
    return notes, refusals


def _tie(stmt, weight: str):
    """(tied layer, kept layer) expressions of `self.a.weight = self.b.weight`, else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if all(isinstance(n, ast.Attribute) and n.attr == weight and _layer_path(n.value) for n in (target, value)):
        return target.value, value.value
    return None


def _layer_path(node) -> list[str] | None:
    """["transformer", "wte"] for `self.transformer.wte`, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return parts if is_self(node) and parts else None


def _rewrite(cls, init, stmt, tied, kept, imports, tied_layers, weight) -> str | None:
    path = _layer_path(tied)
    made = _construction(init, path)
    if made is None:
        return f"{ast.unparse(tied)} is not made in __init__ by one call this rewrite can find"
    holder, call = made
    row = tied_layers.get(imports.path(call.func) or "")
    if row is None:
        return f"tying the weight of {ast.unparse(call.func)} (only {', '.join(sorted(tied_layers))} are rewritten)"
    function, required = row
    wrong = [f"{k}={ast.unparse(v)}" for k, v in ((k.arg, k.value) for k in call.keywords)
             if k in required and not (isinstance(v, ast.Constant) and v.value == required[k])]
    if wrong or len(call.args) > 2:
        return f"{ast.unparse(call.func)} with {', '.join(wrong) or 'more than its sizes'} is not its function " \
               "of the weight alone"
    if any(v is not None and not any(kw.arg == k for kw in call.keywords) for k, v in required.items()):
        return f"{ast.unparse(call.func)} must be made with " + \
            ", ".join(f"{k}={v!r}" for k, v in required.items() if v is not None)
    name = imports.expression(function)
    if name is None:
        return f"{function} is not reachable from the module's imports"
    calls = _Calls(ast.unparse(tied), lambda args: ast.Call(name, [args[0], ast.Attribute(
        kept, weight, ast.Load())], []))
    methods = [f for f in cls.body if isinstance(f, ast.FunctionDef)]
    for method in methods:
        calls.visit(method)
    other = [n for f in methods for n in ast.walk(f) if isinstance(n, ast.Attribute) and n is not tied
             and ast.unparse(n) == ast.unparse(tied)]
    if calls.wrong or len(other) > 1:  # the construction's target is the one other mention left
        return f"{ast.unparse(tied)} is used other than called on one tensor"
    holder()
    init.body.remove(stmt)
    return None


def _construction(init, path: list[str]):
    """(a function removing it, the call) of the layer at `path` made in `__init__`: `self.a = nn.X(...)`, or
    an entry of a dict of layers `self.a = nn.ModuleDict(dict(b=nn.X(...)))` / `({"b": nn.X(...)})`."""
    for stmt in init.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
                _layer_path(stmt.targets[0]) == path[:1] and isinstance(stmt.value, ast.Call)):
            continue
        if len(path) == 1:
            return (lambda s=stmt: init.body.remove(s)), stmt.value
        inner = stmt.value.args[0] if len(path) == 2 and len(stmt.value.args) == 1 else None
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "dict":
            for k in inner.keywords:
                if k.arg == path[1] and isinstance(k.value, ast.Call):
                    return (lambda c=inner, k=k: c.keywords.remove(k)), k.value
        if isinstance(inner, ast.Dict):
            for i, (k, v) in enumerate(zip(inner.keys, inner.values)):
                if isinstance(k, ast.Constant) and k.value == path[1] and isinstance(v, ast.Call):
                    return (lambda d=inner, i=i: (d.keys.pop(i), d.values.pop(i))), v
    return None


class _Calls(ast.NodeTransformer):
    """Calls of the tied layer (`self.wte(idx)`) as its function of the kept weight."""

    def __init__(self, spelled: str, make):
        self.spelled, self.make, self.wrong = spelled, make, False

    def visit_Call(self, node):
        self.generic_visit(node)
        if ast.unparse(node.func) != self.spelled:
            return node
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            self.wrong = True
            return node
        return ast.copy_location(self.make(node.args), node)
