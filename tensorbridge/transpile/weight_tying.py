"""Weight tying by assignment: `self.wte.weight = self.lm_head.weight` in `__init__` (nanoGPT, minimal GPTs,
PyTorch's word-language-model example, there under `if tie_weights:`).

After that statement the two layers hold one weight. Targets cannot share a weight between layers whose weights
are laid out differently (a Keras Dense kernel is the transpose of an Embedding's table), so the class is read
as the source framework would compute it with the tie spelled out: each call of the tied layer (the one assigned
to) becomes its function on the other layer's weight (`F.embedding(idx, self.lm_head.weight)`), passing the tied
layer's other weights (`F.linear(x, self.encoder.weight, self.decoder.bias)`). A tied layer left with no weight of
its own is left out; one weight stays, as in the source, and port_weights skips the left-out layer, whose weight is
the kept one's. A tie made under a condition (`if tie_weights:`) sets a flag instead, and the calls choose between
the function and the layer on it. Only layers whose call is exactly that function of their weights are rewritten
(the SourceSkeleton's `tied_layers`); anything else is a reason to refuse.
"""

from __future__ import annotations

import ast
import copy

from tensorbridge.transpile.syntax import is_self


def untie(cls: ast.ClassDef, imports, tied_layers: dict, weight: str) -> tuple[list[str], list[str]]:
    """Rewrite each tie in `cls`'s `__init__` in place; (notes, reasons to refuse), each naming its line."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    notes, refusals = [], []
    for stmt, block, outer in list(_statements(init.body if init else [], None, None)):
        ties = _tie(stmt, weight)
        if ties is None:
            continue
        tied, kept = ties
        why = _rewrite(cls, init, stmt, block, outer, tied, kept, imports, tied_layers, weight)
        if why:
            refusals.append(f"line {stmt.lineno}: {ast.unparse(stmt)}: {why}")
        else:
            notes.append(f"line {stmt.lineno}: {ast.unparse(stmt)}: the tied layer {ast.unparse(tied)} is written "
                         f"as its function of {ast.unparse(kept)}.{weight} (one weight, as in the source)" +
                         (", when the tie is made" if outer is not None else ""))
    return notes, refusals


def _statements(body: list, block, outer):
    """(statement, the list holding it, the outermost `if` of `__init__` around it or None) for each statement
    of `body` and of the `if` bodies in it."""
    for stmt in body:
        yield stmt, body if block is None else block, outer
        if isinstance(stmt, ast.If):
            for branch in (stmt.body, stmt.orelse):
                for inner, _, top in _statements(branch, None, outer or stmt):
                    yield inner, branch, top


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


def _rewrite(cls, init, stmt, block, outer, tied, kept, imports, tied_layers, weight) -> str | None:
    path = _layer_path(tied)
    made = _construction(init, path)
    if made is None:
        return f"{ast.unparse(tied)} is not made in __init__ by one call this rewrite can find"
    holder, call = made
    row = tied_layers.get(imports.path(call.func) or "")
    if row is None:
        return f"tying the weight of {ast.unparse(call.func)} (only {', '.join(sorted(tied_layers))} are rewritten)"
    function, required, others = row
    wrong = [f"{k}={ast.unparse(v)}" for k, v in ((k.arg, k.value) for k in call.keywords)
             if k in required and not (isinstance(v, ast.Constant) and v.value == required[k])]
    unknown = [k.arg for k in call.keywords if k.arg in others and not isinstance(k.value, ast.Constant)]
    if wrong or unknown or len(call.args) > 2:
        given = ", ".join(wrong + [f"{k} given by a variable" for k in unknown]) or "more than its sizes"
        return f"{ast.unparse(call.func)} with {given} is not its function of the weights alone"
    if any(v is not None and not any(kw.arg == k for kw in call.keywords) for k, v in required.items()):
        return f"{ast.unparse(call.func)} must be made with " + \
            ", ".join(f"{k}={v!r}" for k, v in required.items() if v is not None)
    name = imports.expression(function)
    if name is None:
        return f"{function} is not reachable from the module's imports"
    own = [w for w in others if not any(k.arg == w and k.value.value is False for k in call.keywords)]
    flag = ast.Attribute(ast.Name("self", ast.Load()), "_".join([*path, "tied"]), ast.Load())

    def spelled(args, original):
        function_call = ast.Call(name, [args[0], ast.Attribute(copy.deepcopy(kept), weight, ast.Load()),
                                        *[ast.Attribute(copy.deepcopy(tied), w, ast.Load()) for w in own]], [])
        return function_call if outer is None else ast.IfExp(flag, function_call, original)
    calls = _Calls(ast.unparse(tied), spelled)
    methods = [f for f in cls.body if isinstance(f, ast.FunctionDef)]
    for method in methods:
        calls.visit(method)
    kept_layer = bool(own) or outer is not None  # its weights may still be read (`nn.init.zeros_(self.fc.bias)`)
    read = {id(n.value) for f in methods for n in ast.walk(f) if isinstance(n, ast.Attribute)} if kept_layer else set()
    other = [n for f in methods for n in ast.walk(f) if isinstance(n, ast.Attribute) and n is not tied
             and id(n) not in read and ast.unparse(n) == ast.unparse(tied)]
    if calls.wrong or len(other) > 1 + calls.count * (outer is not None):
        return f"{ast.unparse(tied)} is used other than called on one tensor"
    if outer is not None:  # the flag, False until the tie is made
        block[block.index(stmt)] = ast.copy_location(_set(flag, True), stmt)
        init.body.insert(init.body.index(outer), ast.copy_location(_set(flag, False), outer))
        return None
    if not own:
        holder()
    block.remove(stmt)
    return None


def _set(flag: ast.Attribute, value: bool) -> ast.Assign:
    return ast.Assign([ast.Attribute(flag.value, flag.attr, ast.Store())], ast.Constant(value))


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
    """Calls of the tied layer (`self.wte(idx)`) as its function of the kept weight (`make(arguments, call)`)."""

    def __init__(self, spelled: str, make):
        self.spelled, self.make, self.wrong, self.count = spelled, make, False, 0

    def visit_Call(self, node):
        self.generic_visit(node)
        if ast.unparse(node.func) != self.spelled:
            return node
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            self.wrong = True
            return node
        self.count += 1
        return ast.copy_location(self.make(node.args, node), node)
