"""What the names of a module's code refer to: its imports, resolved to the callables they bind.

`import torch.nn as nn`, `from torch import nn`, `from torch.nn.modules.conv import Conv2d` all bind names
to objects; a dotted use (`nn.Conv2d`, `torch.nn.functional.relu`) is followed attribute by attribute. When
the framework is installed, a path is resolved to the object it names and the object to the code row that
describes it, so a re-export or a private module path finds the same row as the public one; otherwise the
public paths of the rows are matched. Only modules of the frameworks a code table describes are imported.
"""

from __future__ import annotations

import ast
import importlib

FRAMEWORK_ROOTS = frozenset({"torch", "keras", "flax", "jax"})
EINOPS_LAYERS = "einops.layers."
#: packages that re-export a framework under another name: `tf.keras.layers.Dense` is keras.layers.Dense
ALIASES = {"tensorflow.keras": "keras"}
#: frameworks whose own functions model code may call, which no table reads (TensorFlow's `tf.nn.relu`)
OTHER_FRAMEWORKS = frozenset({"tensorflow"})


def _unaliased(path: str) -> str:
    for alias, name in ALIASES.items():
        if path == alias or path.startswith(alias + "."):
            return name + path[len(alias):]
    return path


class Imports:
    """Local name -> the dotted path it is bound to, from a module's import statements."""

    def __init__(self, tree: ast.Module):
        self.bound: dict[str, str] = {}
        self.statements: list[ast.stmt] = []
        for stmt in tree.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self.bound[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.bound[root] = root
                self.statements.append(stmt)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                for alias in stmt.names:
                    if alias.name != "*":
                        self.bound[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
                self.statements.append(stmt)

    def path(self, node: ast.expr) -> str | None:
        """The dotted path an expression names (`nn.Conv2d` -> "torch.nn.Conv2d"), None when it is not a
        chain of attributes on an imported name."""
        if isinstance(node, ast.Name):
            path = self.bound.get(node.id)
            return _unaliased(path) if path else None
        if isinstance(node, ast.Attribute):
            base = self.path(node.value)
            return _unaliased(f"{base}.{node.attr}") if base else None
        return None

    def expression(self, path: str) -> ast.expr | None:
        """An expression naming `path` through the module's imports (`F.embedding` for
        "torch.nn.functional.embedding" after `import torch.nn.functional as F`), None when none reaches it."""
        found = [(name, bound) for name, bound in self.bound.items()
                 if path == _unaliased(bound) or path.startswith(_unaliased(bound) + ".")]
        if not found:
            return None
        name, bound = max(found, key=lambda f: len(f[1]))
        node: ast.expr = ast.Name(name, ast.Load())
        for part in path[len(_unaliased(bound)):].split(".")[1:]:
            node = ast.Attribute(node, part, ast.Load())
        return node

    def framework_of(self, stmt: ast.stmt) -> str | None:
        """The framework an import statement brings in, if any."""
        names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or ""]
        names = [_unaliased(n) for n in names]
        # einops' layers are written per framework (einops.layers.torch); its functions take any framework's tensors
        roots = {n.split(".")[2] if n.startswith(EINOPS_LAYERS) else n.split(".")[0] for n in names}
        found = roots & FRAMEWORK_ROOTS
        return next(iter(found)) if found else None


class Rows:
    """A code table's rows by the objects their paths name, so any path to the same object finds them."""

    def __init__(self, rows: dict):
        self.rows = rows
        self._by_object: dict[int, object] | None = None

    def _objects(self) -> dict[int, object]:
        if self._by_object is None:
            self._by_object = {}
            for path, row in self.rows.items():
                obj = resolve(path)
                if obj is not None:
                    self._by_object.setdefault(id(obj), row)
        return self._by_object

    def find(self, path: str | None):
        if path is None:
            return None
        if path in self.rows:
            return self.rows[path]
        obj = resolve(path)
        return self._objects().get(id(obj)) if obj is not None else None


def resolve(path: str):
    """The object a dotted path names inside an installed framework (TensorFlow's too, or einops' layers for one),
    else None (nothing else is imported)."""
    parts = path.split(".")
    if parts[0] not in FRAMEWORK_ROOTS | OTHER_FRAMEWORKS and not path.startswith(EINOPS_LAYERS):
        return None
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None
