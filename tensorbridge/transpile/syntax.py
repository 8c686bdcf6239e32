"""Predicates on the syntax of model code that the translation's modules share."""

from __future__ import annotations

import ast


def is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def is_self_attr(node) -> bool:
    """`self.<name>`."""
    return isinstance(node, ast.Attribute) and is_self(node.value)


def is_super(node) -> bool:
    """`super()` or `super(Cls, self)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def is_super_call(node, method: str) -> bool:
    """`super().<method>(...)` or `super(Cls, self).<method>(...)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method and \
        is_super(node.func.value)


def binds(stmt) -> set[str]:
    """The names a module-level statement binds: a definition's, an assignment's targets, an import's (the first
    part of a dotted one), those an `if`'s branches bind."""
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.If):
        return set().union(*map(binds, stmt.body + stmt.orelse))
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) \
        else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def single_import(stmt, alias: ast.alias) -> ast.stmt:
    """The import statement `stmt` binding only `alias`."""
    if isinstance(stmt, ast.Import):
        return ast.Import([alias])
    return ast.ImportFrom(stmt.module, [alias], stmt.level)
