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
