"""A model class deriving from a list or dict container of layers (torchvision's `_DenseBlock(nn.ModuleDict)`):
read, before translation, as a model class holding that container (the class is translated as a model class
deriving from the target's layer base). Its `__init__` builds it (`self.module_dict =
nn.ModuleDict(...)` with what `super().__init__` was given), and what the class does to itself as a container goes
to the held one: `self.add_module(name, layer)` and `self[name] = layer` become `self.module_dict[name] = layer`,
`self.items()` / `self.append(...)` its methods, `for layer in self` / `len(self)` / `self[i]` read it. The targets'
containers differ in what a subclass inherits; holding one is what every target can write. port_weights finds the
held container by the same name (`held_layer_name`).
"""

from __future__ import annotations

import ast
import copy

from tensorbridge.codegen import pyast as P
from tensorbridge.transpile.layer_subclass import held_layer_name
from tensorbridge.transpile.syntax import is_self, is_self_attr, is_super, is_super_call

#: methods of a list or dict container a subclass calls on itself
CONTAINER_METHODS = frozenset({"append", "extend", "insert", "items", "keys", "values", "update", "pop", "clear"})


def hold_container(cls: ast.ClassDef, add_child: str | None) -> str | None:
    """Rewrite `cls` (deriving from a list or dict container) to hold the container, translated then as a model
    class; `add_child` is the layer base class's method adding a sublayer by name (`add_module`). Returns why it
    cannot (its `__init__` does not call the container's, or the class sets the held container's name)."""
    container = cls.bases[0]
    name = held_layer_name(ast.unparse(container).split(".")[-1])
    if any(is_self_attr(t) and t.attr == name for n in ast.walk(cls) for t in getattr(n, "targets", ())):
        return f"the class sets self.{name}, the name of the container it derives from"
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    call = next((s for s in (init.body if init else []) if isinstance(s, ast.Expr) and
                 is_super_call(s.value, "__init__")), None)
    if call is None:
        return "its __init__ does not call the container's"
    made = P.assign_attr(f"self.{name}", ast.Call(copy.deepcopy(container), call.value.args, call.value.keywords))
    call.value.args, call.value.keywords = [], []
    init.body.insert(init.body.index(call) + 1, made)
    own = {m.name for m in cls.body if isinstance(m, ast.FunctionDef)}
    _ToHeld(name, add_child, CONTAINER_METHODS - own).visit(cls)
    ast.fix_missing_locations(cls)
    return None


class _ToHeld(ast.NodeTransformer):
    """What a container subclass does to itself, done to the held container `self.<held>`."""

    def __init__(self, held: str, add_child: str | None, methods: frozenset):
        self.held, self.add_child, self.methods = held, add_child, methods

    def _held(self, ctx=None):
        return ast.Attribute(ast.Name("self", ast.Load()), self.held, ctx or ast.Load())

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and is_self_attr(call.func) and call.func.attr == self.add_child and \
                len(call.args) == 2 and not call.keywords:  # self.add_module(name, layer)
            target = ast.Subscript(self._held(), self.visit(call.args[0]), ast.Store())
            return ast.copy_location(ast.Assign([target], self.visit(call.args[1])), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if is_super(node):  # `super(Cls, self)` names the class itself
            return node
        self.generic_visit(node)
        if is_self_attr(node.func) and node.func.attr in self.methods:
            node.func = ast.Attribute(self._held(), node.func.attr, ast.Load())
        return node

    def visit_Attribute(self, node):
        if is_self(node.value):  # `self.<attribute>` stays the class's own
            return node
        return self.generic_visit(node)

    def visit_Name(self, node):
        if is_self(node) and isinstance(node.ctx, ast.Load):  # `for layer in self`, `len(self)`, `self[i]`
            return ast.copy_location(self._held(), node)
        return node

    def visit_FunctionDef(self, node):
        node.body = [self.visit(s) for s in node.body]  # parameters and decorators stay
        return node
