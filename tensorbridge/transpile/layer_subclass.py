"""A model class deriving from one of the framework's layers (CLIP's `class LayerNorm(nn.LayerNorm)`, guided
diffusion's `GroupNorm32(nn.GroupNorm)`, Whisper's `Linear(nn.Linear)`): read as a model class that holds that
layer, before translation. The layer's constructor call becomes `self.<layer> = Base(...)`, the parent's forward
pass `self.<layer>(...)`, and the layer's weights and settings the class reads (`self.weight`, `self.eps`) that
layer's; the target's own layers differ in class and attribute names, so holding one is what every target can write.
port_weights finds the held layer by the same name (`held_layer_name`).
"""

from __future__ import annotations

import ast
import re

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import REQUIRED
from tensorbridge.transpile.syntax import is_self_attr, is_super_call


def held_layer_name(base_class: str) -> str:
    """The attribute holding the parent layer: its class name in snake case (LayerNorm -> layer_norm)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base_class).lower()


def hold_parent_layer(cls: ast.ClassDef, base: ast.expr, params: list, forward: str, call: list, reads: set,
                      base_options: bool, settings: dict, signature: list) -> str | None:
    """Rewrite `cls` (deriving from the layer class `base`) to hold that layer: its `__init__` builds it (one is
    written taking `params`, (name, default) pairs, when the class has none), `super().<forward>(...)` calls it
    (a `forward` method taking the layer's `call` parameters is written when the class has none), and `self.<a>`
    for each attribute `a` in `reads` the class does not set itself reads it; `**kwargs` passed to the parent stay
    with the base when `base_options` (see SourceSkeleton.base_options). The layer's `settings` the class reads
    (see CodeTable.layer_settings) are set on the class in `__init__` from the arguments given for them (named by
    the layer's `signature`, (name, default) pairs), as the layer keeps them. Returns why it cannot (the class
    sets the held layer's attribute name, or its __init__ does not call the parent's)."""
    name = held_layer_name(ast.unparse(base).split(".")[-1])
    own = {t.attr for n in ast.walk(cls) for t in _targets(n) if is_self_attr(t)}
    methods = {m.name for m in cls.body if isinstance(m, ast.FunctionDef)}
    if name in own | methods:
        return f"the class sets self.{name}, the name of the layer it derives from"
    called = {n.func.attr for n in ast.walk(cls) if isinstance(n, ast.Call) and is_self_attr(n.func)}
    hooks = methods - {"__init__", forward} - called
    if hooks:  # methods of the parent the class overrides for the parent's own code to call (`_conv_forward`)
        return f"it overrides {', '.join(sorted(hooks))}, which the parent layer's code calls (not translated)"
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    if init is None:
        init = _init(params)
        cls.body.insert(_after_docstring(cls), init)
    held = P.assign_attr(f"self.{name}", ast.Call(base, [], []))
    for i, stmt in enumerate(init.body):
        if isinstance(stmt, ast.Expr) and is_super_call(stmt.value, "__init__"):
            options = [k for k in stmt.value.keywords if k.arg is None and base_options]
            held.value.args = stmt.value.args
            held.value.keywords = [k for k in stmt.value.keywords if k not in options]
            stmt.value.args, stmt.value.keywords = [], options
            init.body.insert(i + 1, held)
            read = {n.attr for n in ast.walk(cls) if is_self_attr(n) and isinstance(n.ctx, ast.Load)}
            kept = kept_settings(held.value, {a: n for a, n in settings.items() if a in read}, signature)
            init.body[i + 2:i + 2] = kept
            own |= {k.targets[0].attr for k in kept}
            break
    else:
        return "its __init__ does not call the parent layer's"
    if forward not in methods:  # the parent's forward pass, as it is
        cls.body.append(_forward(forward, call, name))
    _Redirect(name, forward, reads - own - methods).visit(cls)
    ast.fix_missing_locations(cls)
    return None


def kept_settings(made: ast.Call, settings: dict, signature: list, prefix: str = "") -> list[ast.stmt]:
    """`self.<prefix>stride = (2, 2)` for each setting the layer `made` keeps, from the argument given for it or
    the default, as a tuple of the layer's rank when `settings` gives one (PyTorch's conv layers keep `stride=2`
    as (2, 2)); none when an argument cannot be matched to its parameter (`*args`, `**kwargs`)."""
    if any(isinstance(a, ast.Starred) for a in made.args) or any(k.arg is None for k in made.keywords):
        return []
    given = {**{n: P.lit(d) for n, d in signature if d is not REQUIRED},
             **dict(zip([n for n, _ in signature], made.args)), **{k.arg: k.value for k in made.keywords}}
    out = []
    for attr, rank in settings.items():
        value = given.get(attr)
        if value is None:
            continue
        out.append(P.assign_attr(f"self.{prefix}{attr}", _as_tuple(value, rank) if rank else value))
    return out


def _as_tuple(value: ast.expr, rank: int) -> ast.expr:
    """`value` as PyTorch keeps a size given as one number: a tuple of `rank` of it (several numbers, or a string
    such as padding="same", as given)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, int):
        return P.lit((value.value,) * rank)
    if isinstance(value, (ast.Constant, ast.Tuple)):
        return value
    return ast.parse(f"({ast.unparse(value)},) * {rank} if isinstance({ast.unparse(value)}, int) else "
                     f"{ast.unparse(value)}", mode="eval").body


def _method(name: str, params: list, body: ast.stmt) -> ast.FunctionDef:
    """`def <name>(self, <params>): <body>`, `params` (name, default) pairs."""
    args = ast.arguments([], [ast.arg("self"), *[ast.arg(p) for p, _ in params]], None, [], [], None,
                         [P.lit(d) for _, d in params if d is not REQUIRED])
    return ast.FunctionDef(name, args, [body], [], None, lineno=0)


def _init(params: list) -> ast.FunctionDef:
    """`def __init__(self, <params>): super().__init__(<params by name>)`."""
    call = ast.Call(ast.Attribute(ast.Call(ast.Name("super", ast.Load()), [], []), "__init__", ast.Load()), [],
                    [ast.keyword(p, ast.Name(p, ast.Load())) for p, _ in params])
    return _method("__init__", params, ast.Expr(call))


def _forward(method: str, params: list, held: str) -> ast.FunctionDef:
    """`def <method>(self, <params>): return self.<held>(<params>)`."""
    return _method(method, params, ast.Return(ast.Call(P.name(f"self.{held}"),
                                                       [ast.Name(p, ast.Load()) for p, _ in params], [])))


class _Redirect(ast.NodeTransformer):
    """`super().<forward>(...)` -> `self.<held>(...)`; `self.<attribute read>` -> `self.<held>.<attribute>`."""

    def __init__(self, held: str, forward: str, reads: set):
        self.held, self.forward, self.reads = held, forward, reads

    def _held(self):
        return ast.Attribute(ast.Name("self", ast.Load()), self.held, ast.Load())

    def visit_Call(self, node):
        self.generic_visit(node)
        if is_super_call(node, self.forward):
            return ast.copy_location(ast.Call(self._held(), node.args, node.keywords), node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if is_self_attr(node) and node.attr in self.reads and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Attribute(self._held(), node.attr, ast.Load()), node)
        return node


def _targets(node) -> list:
    """What an assignment binds: its targets, and the items of tuple targets (`self.a, self.b = ...`)."""
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in ([target] if not isinstance(target, (ast.Tuple, ast.List))
                                                        else target.elts)]
    return [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []


def _after_docstring(cls: ast.ClassDef) -> int:
    first = cls.body[0] if cls.body else None
    return int(isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant))
