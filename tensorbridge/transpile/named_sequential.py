"""Layers added by name to a sequential container after it is made: torchvision's DenseNet builds `self.features =
nn.Sequential(OrderedDict([...]))` and then calls `self.features.add_module("denseblock%d" % (i + 1), block)` in a
loop. Adding by name replaces a layer of the same name where it stands and appends one of a new name: what
assigning a key of a dict does. Before translation, the container's layers are gathered in a dict by name instead
(`features_layers = dict()`, `features_layers["conv0"] = ...`, `features_layers[name] = block`) and the container is
made from it after the last addition, which every target writes as a container of the dict's values in order.
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.transpile.syntax import is_self_attr


def gather_named_layers(init: ast.FunctionDef, add_child: str | None, is_sequential, is_ordered_dict) -> None:
    """Rewrite, in place, each `self.<name> = <sequential>(...)` statement of `init` that later statements only
    add layers to by name (`add_child`); `is_sequential(node)` / `is_ordered_dict(node)` say whether a node names
    the sequential container / collections.OrderedDict."""
    if add_child is None:
        return
    for stmt in list(init.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and is_self_attr(stmt.targets[0]) and \
                isinstance(stmt.value, ast.Call) and is_sequential(stmt.value.func):
            _gather(init, stmt, add_child, is_ordered_dict)


def _gather(init: ast.FunctionDef, made: ast.Assign, add_child: str, is_ordered_dict) -> None:
    attribute = made.targets[0].attr
    start = init.body.index(made)
    later = init.body[start + 1:]
    reads = [n for s in later for n in ast.walk(s) if is_self_attr(n) and n.attr == attribute]
    adds = [n for s in later for n in ast.walk(s) if isinstance(n, ast.Expr) and _adds(n.value, attribute, add_child)]
    entries = _entries(made.value, is_ordered_dict)
    layers = f"{attribute}_layers"
    if not adds or len(reads) != len(adds) or entries is None or any(
            isinstance(n, ast.Name) and n.id == layers for n in ast.walk(init)):
        return
    last = max(i for i, s in enumerate(init.body) if any(n in adds for n in ast.walk(s)))
    container = ast.copy_location(ast.Assign([made.targets[0]], ast.Call(made.value.func, [P.name(layers)], [])),
                                  init.body[last])
    init.body.insert(last + 1, container)
    filled = [ast.Assign([ast.Subscript(P.name(layers), key, ast.Store())], layer) for key, layer in entries]
    init.body[start:start + 1] = [ast.copy_location(s, made) for s in [
        ast.Assign([ast.Name(layers, ast.Store())], P.call("dict")), *filled]]
    _Added({id(n) for n in adds}, layers).visit(init)
    ast.fix_missing_locations(init)


def _adds(call, attribute: str, add_child: str) -> bool:
    """`self.<attribute>.<add_child>(name, layer)`."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == add_child \
        and is_self_attr(call.func.value) and call.func.value.attr == attribute and len(call.args) == 2 and \
        not call.keywords


def _entries(call: ast.Call, is_ordered_dict) -> list | None:
    """(name, layer) of the layers a sequential container is made with: its positional layers ("0", "1", ...)
    or the pairs of an `OrderedDict([...])` literal; None for anything else (`*layers`)."""
    if call.keywords:
        return None
    if len(call.args) == 1 and isinstance(call.args[0], ast.Call) and is_ordered_dict(call.args[0].func):
        given = call.args[0]
        pairs = given.args[0] if len(given.args) == 1 and not given.keywords else None
        if not isinstance(pairs, (ast.List, ast.Tuple)) or not all(
                isinstance(p, ast.Tuple) and len(p.elts) == 2 for p in pairs.elts):
            return None
        return [tuple(p.elts) for p in pairs.elts]
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return [(ast.Constant(str(i)), a) for i, a in enumerate(call.args)]


class _Added(ast.NodeTransformer):
    """The statements adding a layer by name (ids in `adds`) -> `<layers>[name] = layer`."""

    def __init__(self, adds: set, layers: str):
        self.adds, self.layers = adds, layers

    def visit_Expr(self, node):
        if id(node) not in self.adds:
            return node
        key, layer = node.value.args
        return ast.copy_location(ast.Assign([ast.Subscript(P.name(self.layers), key, ast.Store())], layer), node)
