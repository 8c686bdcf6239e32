"""A local name bound to a framework function, possibly chosen by what the installed framework has (transformers'
Wav2Vec2: `weight_norm = nn.utils.weight_norm`, then `if hasattr(nn.utils.parametrizations, "weight_norm"):
weight_norm = nn.utils.parametrizations.weight_norm`, then `weight_norm(self.conv, ...)`). Before translation the
`hasattr` test is evaluated on the installed framework, as the source evaluates it when it runs, and each call
through the name calls the function it names: the tables read framework functions by their paths.
"""

from __future__ import annotations

import ast
import copy


def inline_framework_aliases(cls: ast.ClassDef, path_of, has_attribute) -> list[str]:
    """Rewrite, in place, each method of `cls` binding local names to framework functions at its top level;
    `path_of(node)` is the framework path a node names (else None), `has_attribute(path, name)` whether the
    installed framework's `path` has `name`. Returns a note per `hasattr` test evaluated."""
    notes = []
    for fn in (m for m in cls.body if isinstance(m, ast.FunctionDef)):
        notes += _inline(fn, path_of, has_attribute)
    return notes


def _inline(fn: ast.FunctionDef, path_of, has_attribute) -> list[str]:
    bound: dict[str, ast.expr] = {}
    statements, notes = [], []
    for stmt in fn.body:
        alias = _alias(stmt, path_of)
        if alias is not None:
            bound[alias[0]] = alias[1]
            statements.append(stmt)
            continue
        test = _hasattr_test(stmt, path_of) if isinstance(stmt, ast.If) else None
        branches = [stmt.body, stmt.orelse] if test is not None else []
        if test is not None and all(_alias(s, path_of) for b in branches for s in b):
            taken = stmt.body if has_attribute(*test) else stmt.orelse
            bound.update(_alias(s, path_of) for s in taken)
            statements.append(stmt)
            notes.append(f"line {stmt.lineno}: {ast.unparse(stmt.test)} is read as the installed framework answers "
                         f"it ({has_attribute(*test)})")
    if not bound:
        return []
    dropped = {id(s) for s in statements}
    rest = [s for s in fn.body if id(s) not in dropped]
    stored = {n.id for s in rest for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    parameters = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    before = fn.body[:fn.body.index(statements[0])]
    read_before = {n.id for s in before for n in ast.walk(s) if isinstance(n, ast.Name)}
    if set(bound) & (stored | parameters | read_before):  # the name means something else somewhere
        return []
    fn.body = [_Inlined(bound).visit(s) for s in rest] or [ast.Pass()]
    ast.fix_missing_locations(fn)
    return notes


def _alias(stmt, path_of):
    """(name, value) of `name = <framework function>`, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
            isinstance(stmt.value, (ast.Attribute, ast.Name)) and path_of(stmt.value) is not None:
        return stmt.targets[0].id, stmt.value
    return None


def _hasattr_test(stmt: ast.If, path_of):
    """(path, name) of `if hasattr(<framework module>, "<name>")`, else None."""
    return framework_hasattr(stmt.test, path_of)


def framework_hasattr(test, path_of):
    """(path, name) of the expression `hasattr(<framework module>, "<name>")`, else None."""
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" and \
            len(test.args) == 2 and not test.keywords and isinstance(test.args[1], ast.Constant) and \
            isinstance(test.args[1].value, str) and path_of(test.args[0]) is not None:
        return path_of(test.args[0]), test.args[1].value
    return None


class _Inlined(ast.NodeTransformer):
    def __init__(self, bound: dict):
        self.bound = bound

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.bound:
            return ast.copy_location(copy.deepcopy(self.bound[node.id]), node)
        return node
