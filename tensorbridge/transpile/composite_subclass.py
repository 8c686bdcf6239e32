"""A model class deriving from a layer made of other layers (pytorch/examples' `class TransformerModel(
nn.Transformer)`, which calls `super().__init__(d_model=ninp, nhead=nhead, ...)`, reads `self.encoder` and sets its
own `self.decoder`): before translation it derives from the framework's model class and its `__init__` builds what
the layer holds, as the source table spells it (SourceSkeleton.composite_layers) with the arguments given to
`super().__init__`. What the class sets itself after that call is not built (the source replaces it). The targets
write each part as they write those layers; port_weights finds them by the same names.
"""

from __future__ import annotations

import ast
import copy

from tensorbridge.transpile.syntax import is_self_attr, is_super_call


def spell_composite(cls: ast.ClassDef, spelled: str, expression, module_class: str) -> str | None:
    """Rewrite `cls` (deriving from the composite layer whose `__init__` the source text `spelled` spells with
    full paths) to derive from `module_class` (a path); `expression(path)` is an expression naming a framework
    path through the module's imports, else None. Returns why it cannot."""
    template = ast.parse(spelled).body[0]
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    call = next((s for s in (init.body if init else []) if isinstance(s, ast.Expr) and
                 is_super_call(s.value, "__init__")), None)
    if call is None:
        return "its __init__ does not call the layer's"
    given = _bind(template.args, call.value)
    if given is None:
        return "super().__init__ given arguments by * or ** or of names the layer does not take"
    read = {n.id for s in template.body for n in ast.walk(s) if isinstance(n, ast.Name)}
    unread = sorted(set(given) - read - {"device", "dtype"})
    if unread:
        return f"{', '.join(unread)} given to the layer (not translated)"
    later = init.body[init.body.index(call) + 1:]
    own = {t.attr for s in later if isinstance(s, ast.Assign) for t in s.targets if is_self_attr(t)}
    built = [copy.deepcopy(s) for s in template.body if not (
        isinstance(s, ast.Assign) and any(is_self_attr(t) and t.attr in own for t in s.targets))]
    defaults = dict(zip([a.arg for a in template.args.args[1:]][::-1], template.args.defaults[::-1]))
    values = {**defaults, **given}
    paths = _Paths(expression, module_class.split(".")[0])
    built = [ast.fix_missing_locations(ast.copy_location(paths.visit(_Values(values).visit(s)), call))
             for s in built]
    module = expression(module_class)
    if paths.missing or module is None:
        return f"{paths.missing or module_class} is not imported by the module"
    call.value.args, call.value.keywords = [], []
    init.body[init.body.index(call) + 1:init.body.index(call) + 1] = built
    cls.bases[0] = module
    return None


def _bind(params: ast.arguments, call: ast.Call) -> dict | None:
    """The template's parameters `call` gives, by name (None if it passes * or ** or an unknown keyword)."""
    names = [a.arg for a in params.args[1:]]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) or \
            len(call.args) > len(names) or any(k.arg not in names for k in call.keywords):
        return None
    return {**dict(zip(names, call.args)), **{k.arg: k.value for k in call.keywords}}


class _Values(ast.NodeTransformer):
    """A parameter of the template -> the value given for it (or its default)."""

    def __init__(self, values: dict):
        self.values = values

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return copy.deepcopy(self.values[node.id])
        return node


class _Paths(ast.NodeTransformer):
    """A full path (`torch.nn.LayerNorm`) -> the expression naming it through the module's imports."""

    def __init__(self, expression, root: str):
        self.expression, self.root = expression, root
        self.missing = None

    def visit_Attribute(self, node):
        path = ast.unparse(node)
        if path.startswith(f"{self.root}."):
            named = self.expression(path)
            if named is None:
                self.missing = self.missing or path
                return node
            return named
        return self.generic_visit(node)
