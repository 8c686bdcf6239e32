"""Small builders for Python `ast` nodes, so code generators assemble structure, not strings.

Identifiers must come from `ir.namer.Namer`; every other value enters as an `ast.Constant`
(or a list/tuple of them), which `ast.unparse` quotes safely.
"""

from __future__ import annotations

import ast
from typing import Any

from tensorbridge.codegen.wrap import wrap_long_lines


def name(identifier: str) -> ast.expr:
    """A (dotted) name: "x", "torch.relu", "self.conv"."""
    parts = identifier.split(".")
    node: ast.expr = ast.Name(parts[0], ast.Load())
    for p in parts[1:]:
        node = ast.Attribute(node, p, ast.Load())
    return node


def lit(value: Any) -> ast.expr:
    """A literal (numbers, strings, bools, None, nested lists/tuples); expressions pass through."""
    if isinstance(value, ast.AST):
        return value
    if isinstance(value, dict):
        return ast.Dict([lit(k) for k in value], [lit(v) for v in value.values()])
    if isinstance(value, (list, tuple)):
        items = [lit(v) for v in value]
        return ast.List(items, ast.Load()) if isinstance(value, list) else ast.Tuple(items, ast.Load())
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and value != value:
        return call("float", "nan")
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return call("float", "inf" if value > 0 else "-inf")
    return ast.Constant(value)


def call(func: str | ast.expr, *args, **kwargs) -> ast.expr:
    f = name(func) if isinstance(func, str) else func
    return ast.Call(f, [lit(a) for a in args], [ast.keyword(k, lit(v)) for k, v in kwargs.items()])


def method(obj: ast.expr, meth: str, *args, **kwargs) -> ast.expr:
    return call(ast.Attribute(obj, meth, ast.Load()), *args, **kwargs)


OPERATORS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "**": ast.Pow, "@": ast.MatMult,
           "%": ast.Mod, "//": ast.FloorDiv}


COMPARISONS = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}


def binop(a, op: str, b) -> ast.expr:
    """`a op b` for an arithmetic or a comparison operator."""
    if op in COMPARISONS:
        return ast.Compare(lit(a), [COMPARISONS[op]()], [lit(b)])
    return ast.BinOp(lit(a), OPERATORS[op](), lit(b))


def neg(a) -> ast.expr:
    return ast.UnaryOp(ast.USub(), lit(a))


def subscript(obj, index) -> ast.expr:
    return ast.Subscript(lit(obj), lit(index), ast.Load())


def slice_(start=None, stop=None, step=None) -> ast.expr:
    return ast.Slice(None if start is None else lit(start), None if stop is None else lit(stop),
                     None if step is None else lit(step))


def assign(targets: list[str], value: ast.expr) -> ast.stmt:
    if len(targets) == 1:
        target = name(targets[0])
    else:
        target = ast.Tuple([name(t) for t in targets], ast.Load())
    target = _store(target)
    return ast.Assign([target], value, lineno=0)


def _store(node):
    if isinstance(node, ast.Name):
        return ast.Name(node.id, ast.Store())
    if isinstance(node, ast.Attribute):
        return ast.Attribute(node.value, node.attr, ast.Store())
    if isinstance(node, ast.Tuple):
        return ast.Tuple([_store(e) for e in node.elts], ast.Store())
    return node


def assign_attr(target: str, value: ast.expr) -> ast.stmt:
    return ast.Assign([_store(name(target))], value, lineno=0)


def expr_stmt(value: ast.expr) -> ast.stmt:
    return ast.Expr(value)


def _arguments(params: list[str], kwargs: str | None = None) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[],
                         defaults=[], kwarg=ast.arg(kwargs) if kwargs else None)


def function(fname: str, params: list[str], body: list[ast.stmt], doc: str | None = None,
             kwargs: str | None = None) -> ast.FunctionDef:
    """def fname(params, **kwargs): body."""
    stmts = ([ast.Expr(ast.Constant(doc))] if doc else []) + (body or [ast.Pass()])
    return ast.FunctionDef(fname, _arguments(params, kwargs), stmts, [], lineno=0)


def lambda_(params: list[str], body: ast.expr) -> ast.expr:
    """lambda params: body."""
    return ast.Lambda(_arguments(params), body)


def class_def(cname: str, bases: list[str], body: list[ast.stmt], doc: str | None = None) -> ast.ClassDef:
    stmts = ([ast.Expr(ast.Constant(doc))] if doc else []) + body
    return ast.ClassDef(cname, [name(b) for b in bases], [], stmts, [])


def module(doc: str, import_groups: list[list[ast.stmt]], body: list[ast.stmt]) -> str:
    """Source of a module laid out as PEP 8 wants: import groups apart, two blank lines around defs."""

    def text(stmts):
        return ast.unparse(ast.Module(list(stmts), type_ignores=[]))

    parts = [text([ast.Expr(ast.Constant(doc))])]
    groups = [g for g in import_groups if g]
    if groups:
        parts.append("\n\n".join(text(g) for g in groups))
    rendered, previous_def = "", False
    for stmt in body:
        is_def = isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
        if rendered:
            rendered += "\n\n\n" if is_def or previous_def else "\n"
        rendered += text([stmt])
        previous_def = is_def
    if rendered:
        parts.append(rendered)
    head = "\n\n".join(parts[:2])
    if len(parts) < 3:
        return head + "\n"
    first_is_def = isinstance(body[0], (ast.FunctionDef, ast.ClassDef))
    return wrap_long_lines(head + ("\n\n\n" if first_is_def else "\n\n") + parts[2] + "\n")


def import_(module_name: str, alias: str | None = None) -> ast.stmt:
    return ast.Import([ast.alias(module_name, alias)])


def from_import(module_name: str, names: list[str], level: int = 0) -> ast.stmt:
    return ast.ImportFrom(module_name, [ast.alias(n) for n in names], level)


def ret(value: ast.expr) -> ast.stmt:
    return ast.Return(value)
