"""The generated module's submodule tree: the source's, so its state_dict keys load unchanged.

A PyTorch source names its nodes after the module that ran them (`layer1.0.conv1`) and its
weights after their state-dict keys; the generated `Model` builds the same tree. A submodule with
numbered children (a Sequential, a ModuleList) becomes an `nn.ModuleList`, one with named children a
`Submodule` (a plain container, defined in the generated file), and layers and parameters are set
on them in `__init__`:

    self.layer1 = nn.ModuleList([Submodule() for _ in range(2)])
    self.layer1[0].conv1 = nn.Conv2d(64, 64, 3, padding=1, bias=False)

and called as `self.layer1[0].conv1(x)`. Other sources have no tree: their layers are attributes
of `Model`, named after the nodes. Every name goes through the namer first.
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from collections import defaultdict

from tensorbridge.codegen import pyast as P
from tensorbridge.ir.namer import Namer

SUBMODULE = "Submodule"


class ModuleTree:
    def __init__(self, paths):
        """`paths`: every module path the source may put a layer or parameter at (tuples of names)."""
        children: dict[tuple, set[str]] = defaultdict(set)
        for path in paths:
            for i in range(1, len(path)):
                children[path[:i]].add(path[i])
        self.lists = {c: 1 + max(int(n) for n in names) for c, names in children.items()
                      if names and all(n.isdigit() for n in names)}
        self.tops = {c[0] for c in children}
        self.taken: set[tuple] = set()
        self.created: set[tuple] = set()
        self.placeholders: set[tuple] = set()
        self.top = Namer({SUBMODULE} | _module_attributes() | self.tops)

    def claim(self, path: tuple[str, ...]) -> tuple[str, ...]:
        """A free path for a new leaf: `path` with its parts made identifiers (a numbered part stays a number
        inside a list), and its last part suffixed when a leaf or container already holds it; a top-level name
        when a layer already holds one of its parents' paths."""
        clean = tuple(p if (path[:i] in self.lists and p.isdigit()) else _identifier(p) for i, p in enumerate(path))
        under_a_leaf = any(clean[:i] in self.taken for i in range(1, len(clean)))
        if clean[0] not in self.tops or under_a_leaf:  # no tree here, or a layer already holds a parent's name
            return (self.top.name("_".join(clean), "layer"),)
        held = clean in self.taken or (clean in self.created and clean not in self.placeholders)
        if held and clean[:-1] in self.lists:  # a list's item already holds something: no suffixed index exists
            return (self.top.name("_".join(clean), "layer"),)
        leaf, n = clean, 1
        while leaf in self.taken or (leaf in self.created and leaf not in self.placeholders):
            leaf = (*clean[:-1], f"{clean[-1]}_{n}")
            n += 1
        self.taken.add(leaf)
        return leaf

    def expr(self, path: tuple[str, ...]) -> ast.expr:
        """`self.a[0].b` for the path (a numbered child of a list is indexed)."""
        node: ast.expr = P.name("self")
        for i, part in enumerate(path):
            if path[:i] in self.lists and part.isdigit():
                node = ast.Subscript(node, ast.Constant(int(part)), ast.Load())
            else:
                node = ast.Attribute(node, part, ast.Load())
        return node

    def containers_for(self, path: tuple[str, ...]) -> list[ast.stmt]:
        """The statements creating the containers above `path` not created yet, outermost first."""
        out = []
        for i in range(1, len(path)):
            c = path[:i]
            if c in self.created and not (c in self.placeholders and c in self.lists):
                self.placeholders.discard(c)  # a list's item holding a layer now: no layer may replace it
                continue
            self.created.add(c)
            self.placeholders.discard(c)
            if c in self.lists:
                item = P.call(SUBMODULE)
                value = ast.ListComp(item, [ast.comprehension(ast.Name("_", ast.Store()), P.call("range",
                                                                                             self.lists[c]), [], 0)])
                out.append(_assign(self.expr(c), P.call("nn.ModuleList", value)))
                items = {(*c, str(k)) for k in range(self.lists[c])}  # made by the list, replaced by a layer there
                self.created |= items
                self.placeholders |= items
            else:
                out.append(_assign(self.expr(c), P.call(SUBMODULE)))
        return out


def submodule_class() -> ast.ClassDef:
    """class Submodule(nn.Module): a container of the source's layers (what `nn.Module()` would be, named)."""
    return P.class_def(SUBMODULE, ["nn.Module"], [],
                       doc="A submodule of the source model: it holds the layers set on it.")


def _assign(target: ast.expr, value: ast.expr) -> ast.stmt:
    target = P._store(target) if not isinstance(target, ast.Subscript) else \
        ast.Subscript(target.value, target.slice, ast.Store())
    return ast.Assign([target], value, lineno=0)


def assign(path_expr: ast.expr, value: ast.expr) -> ast.stmt:
    return _assign(path_expr, value)


def _identifier(part: str) -> str:
    """A part of a module path as an attribute name: an identifier that no keyword or nn.Module member hides."""
    name = re.sub(r"\W", "_", part, flags=re.ASCII) or "layer"
    if name[0].isdigit():
        name = f"m_{name}"
    return f"{name}_" if keyword.iskeyword(name) or name in _module_attributes() else name


@functools.cache
def _module_attributes() -> frozenset[str]:
    import torch

    return frozenset(dir(torch.nn.Module))
