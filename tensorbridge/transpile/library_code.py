"""Definitions model code imports from an installed library that is not a framework: timm's `from
timm.layers.helpers import to_2tuple`, `from timm.layers import DropPath`. Before translation, each such name's
definition is read from the library's source file (found without importing the library) with the module-level
definitions and imports it uses, and put in the module in place of the import, as if its authors had written it
there: the translation then reads it as it reads the module's own code (translated, or refused with the reason).
Only plain top-level definitions are taken (functions, classes, assignments, and a setting assigned in every branch
of a module-level `if`, as timm reads `TIMM_FUSED_ATTN` from the environment at import); a name bound otherwise
(under a `for`, by a star import) stays imported, and calling it is refused as before.
"""

from __future__ import annotations

import ast
import builtins
import copy
import importlib.machinery
import sys
from pathlib import Path

from tensorbridge.transpile.imports import FRAMEWORK_ROOTS, Imports, resolve
from tensorbridge.transpile.syntax import binds, single_import

#: definitions taken for one import at most (a name pulling in more is left imported)
MOST_DEFINITIONS = 60


def take_library_definitions(tree: ast.Module, kept_roots: frozenset, has_row) -> tuple[list[str], dict]:
    """Replace, in `tree`, each `from <library> import <names>` whose module's root is none of `kept_roots`
    (frameworks, Python's own modules, libraries called as written) and whose names have no row (`has_row(path)`:
    transformers' `Conv1D` is read as the layer it is) with the names' definitions and what they use, all placed
    where the first such import was. Returns a note per import replaced, and why each name left imported was not
    read (name -> reason)."""
    library, notes, replaced, unread, renames = _Library(kept_roots, has_row), [], {}, {}, {}
    imported = Imports(tree).bound
    for stmt in tree.body:
        if not (isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module and
                stmt.module.split(".")[0] not in kept_roots | sys.stdlib_module_names):
            continue
        taken = []
        for alias in stmt.names:
            if has_row(f"{stmt.module}.{alias.name}"):
                continue  # read as the layer or function it is
            if alias.asname and alias.asname != alias.name and renames.get(alias.name, alias.asname) != alias.asname:
                unread[alias.asname] = f"{alias.name} is imported from {stmt.module} under two names"
            elif library.take(stmt.module, [alias.name]):
                taken.append(alias)
                if alias.asname and alias.asname != alias.name:
                    renames[alias.name] = alias.asname  # `from timm.layers import Attention as TimmAttention`
            else:
                unread[alias.asname or alias.name] = f"{alias.name} is imported from {stmt.module}, whose source " \
                                                     f"was not read ({library.why})"
        if taken:
            replaced[stmt] = [a for a in stmt.names if a not in taken]  # the others stay imported
            notes.append(f"line {stmt.lineno}: {', '.join(a.name for a in taken)} from {stmt.module} "
                         f"{'is' if len(taken) == 1 else 'are'} read from the library's source and translated with "
                         "the module")
    if not replaced:
        return notes, unread
    own = _bound_names(ast.Module([s for s in tree.body if s not in replaced], [])) | {
        a.asname or a.name for left in replaced.values() for a in left}
    if library.unbound & own:  # the library's code would read the module's own definition of the name
        return [], {**unread, **{a.asname or a.name: f"{a.name} is imported from {s.module}, whose code reads "
                                                      f"{', '.join(sorted(library.unbound & own))} unbound here, a "
                                                      "name this module binds"
                                 for s, left in replaced.items() for a in s.names if a not in left}}
    if set(renames.values()) & set().union(*map(binds, library.statements)):
        return [], {**unread, **{new: f"{old} is imported as {new}, a name the library's own code binds"
                                 for old, new in renames.items()}}
    _Renamed(renames).visit(ast.Module(library.statements, []))
    statements = []
    for stmt in library.statements:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):  # an import the module makes already is not repeated
            stmt.names = [a for a in stmt.names if not _already_imported(single_import(stmt, a), imported)]
            if not stmt.names:
                continue
        names = binds(stmt)
        if names & own and isinstance(stmt, (ast.Import, ast.ImportFrom)) and \
                all(_annotation_only(n, library.statements) for n in names & own):
            continue  # a name only annotations read (`Callable` from collections.abc, the module's from typing)
        if names & own:  # the module binds the name to something else: the imports stay as they are
            return [], {**unread, **{a.asname or a.name: f"{a.name} is imported from {s.module}, whose code binds "
                                                         f"{', '.join(sorted(names & own))}, as this module does"
                                     for s, left in replaced.items() for a in s.names if a not in left}}
        statements.append(stmt)
    first = next(s for s in tree.body if s in replaced)
    for stmt in statements:
        stmt.from_library = True  # translated only if the module's code uses it (see Translator.module)
        for node in ast.walk(stmt):
            if hasattr(node, "lineno"):
                node.lineno = node.end_lineno = first.lineno
    for stmt, left in replaced.items():
        stmt.names = left
    at = tree.body.index(first)
    tree.body[at:at] = statements
    tree.body = [s for s in tree.body if s not in replaced or s.names]
    return notes, unread


class _Renamed(ast.NodeTransformer):
    """Library definitions with the names imported under another name renamed to it (`renames`: old -> new)."""

    def __init__(self, renames: dict):
        self.renames = renames

    def visit_Name(self, node):
        node.id = self.renames.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.renames.get(node.name, node.name)
        return self.generic_visit(node)

    visit_ClassDef = visit_FunctionDef


def _already_imported(stmt, imported: dict) -> bool:
    """Whether the module binds each name the import statement `stmt` binds, to the same path (`imported`: the
    module's imports, name -> path)."""
    bound = Imports(ast.Module([stmt], [])).bound
    return all(imported.get(n) == bound.get(n) for n in binds(stmt))


def _bound_names(tree: ast.Module) -> set[str]:
    """The names the module binds at its top level."""
    return set().union(*map(binds, _top_level(tree)))


def source_file(module: str) -> Path | None:
    """The source file of `module`, found along sys.path without importing it or its packages."""
    origin = getattr(_find_spec(module), "origin", None)
    return Path(origin) if origin and origin.endswith(".py") else None


def _find_spec(module: str):
    """The module's import spec, found along sys.path without importing it or its packages (None: not found)."""
    parts = module.split(".")
    spec = importlib.machinery.PathFinder.find_spec(parts[0])
    for part in parts[1:]:
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, spec.submodule_search_locations)
    return spec


class _Library:
    """The definitions of names in library modules, with those they use, in an order that defines each before
    use."""

    def __init__(self, kept_roots: frozenset, has_row):
        self.kept_roots = kept_roots
        self.has_row = has_row  # (path) -> whether the tables read the name as it is: it stays imported
        self.statements: list[ast.stmt] = []
        self.names: set[str] = set()
        self.seen: set[tuple[str, str]] = set()
        self.trees: dict[str, ast.Module | None] = {}
        self.why: str | None = None  # why the last take failed (its innermost reason)
        self.unbound: set[str] = set()  # names definitions read that their library does not bind here

    def take(self, module: str, names: list[str]) -> bool:
        """Add the definitions of `names` of `module` (with what they use); whether all could be (if not, none
        is added)."""
        before = (len(self.statements), set(self.names), set(self.seen))
        self.why = None
        if all(self._take(module, name) for name in names):
            return True
        del self.statements[before[0]:]
        self.names, self.seen = before[1], before[2]
        return False

    def _tree(self, module: str) -> ast.Module | None:
        if module not in self.trees:
            path = source_file(module)
            try:
                self.trees[module] = ast.parse(path.read_text(encoding="utf-8")) if path else None
            except (OSError, SyntaxError, UnicodeDecodeError):
                self.trees[module] = None
        return self.trees[module]

    def _take(self, module: str, name: str) -> bool:
        if (module, name) in self.seen:
            return True
        self.seen.add((module, name))
        if self.has_row(f"{module}.{name}"):  # transformers' ACT2FN, which a definition reads
            return self._add(ast.ImportFrom(module, [ast.alias(name)], 0), {name})
        tree = self._tree(module)
        if tree is None or len(self.statements) >= MOST_DEFINITIONS:
            return self._fails(f"the source of {module} was not found" if tree is None else
                               f"it needs more than {MOST_DEFINITIONS} definitions")
        for stmt in _top_level(tree):
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name == name:
                return self._definition(module, tree, stmt)
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                return self._definition(module, tree, stmt)
            if isinstance(stmt, ast.If) and name in _settings_bound(stmt):
                return self._definition(module, tree, stmt)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                alias = next((a for a in stmt.names if (a.asname or a.name).split(".")[0] == name), None)
                if alias is not None:
                    return self._import(module, stmt, alias)
        for stmt in tree.body:  # `from timm.layers import *` (timm.models.layers, kept for old imports)
            origin = _absolute(module, stmt) if isinstance(stmt, ast.ImportFrom) and \
                [a.name for a in stmt.names] == ["*"] else None
            if origin is not None and origin.split(".")[0] not in self.kept_roots | sys.stdlib_module_names and \
                    self._take(origin, name):
                return True
        return self._fails(f"{name} is not a plain top-level definition of {module}")

    def _import(self, module: str, stmt, alias: ast.alias) -> bool:
        """A name the library module imports: a framework's or Python's is imported as the library does; one of
        the library (or another that is not kept) is taken from its own module."""
        if isinstance(stmt, ast.ImportFrom):
            origin = _absolute(module, stmt)
            if origin is None:
                return False
            if origin.split(".")[0] in self.kept_roots | sys.stdlib_module_names:
                return self._add(ast.ImportFrom(origin, [copy.copy(alias)], 0), {alias.asname or alias.name})
            if alias.asname and alias.asname != alias.name:
                return False
            return self._take(origin, alias.name)
        root = alias.name.split(".")[0]
        if root not in self.kept_roots | sys.stdlib_module_names:
            return False
        return self._add(ast.Import([copy.copy(alias)]), {(alias.asname or alias.name).split(".")[0]})

    def _definition(self, module: str, tree: ast.Module, stmt) -> bool:
        """A top-level definition, after those of the module's names it reads (each must be one: a name the
        library binds otherwise, under an `if`, is not taken). A name a function or class reads that the module
        does not bind here at all (apex's kernels, imported only where apex is installed) is left unbound: the
        translation refuses code that reaches it."""
        used = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for name in sorted(used - _locals(stmt) - binds(stmt) - set(dir(builtins))):
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and not _binds_here(tree, name):
                self.unbound.add(name)
            elif not self._take(module, name):
                return False
        return self._add(copy.deepcopy(stmt), binds(stmt))

    def _fails(self, why: str) -> bool:
        self.why = self.why or why
        return False

    def _add(self, stmt, names: set) -> bool:
        if names <= self.names and isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return True
        self.statements.append(stmt)
        self.names |= names
        return True


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's top-level statements, a `try:` of imports read as the installed packages answer it: its body
    when everything it imports is installed (timm's `try: from torch import _assert`), else the `except
    ImportError:` branch (timm's `has_apex = False` where apex is not installed)."""
    out = []
    for stmt in tree.body:
        taken = _import_attempt(stmt) if isinstance(stmt, ast.Try) else None
        out += [stmt] if taken is None else taken
    return out


def _import_attempt(stmt: ast.Try) -> list[ast.stmt] | None:
    """The branch a `try:` of imports and settings takes here (None: not such a `try`)."""
    imports = [s for s in stmt.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    plain = (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef, ast.Pass)
    if not imports or stmt.orelse or stmt.finalbody or len(stmt.handlers) != 1 or \
            not all(isinstance(s, plain) for s in stmt.body + stmt.handlers[0].body) or \
            not _catches_import_error(stmt.handlers[0].type):
        return None
    return stmt.body if all(_installed(s) for s in imports) else stmt.handlers[0].body


def _catches_import_error(kind) -> bool:
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def _installed(stmt) -> bool:
    """Whether what an absolute import statement names is installed (found without importing it; a framework's
    names are looked up in the framework)."""
    if isinstance(stmt, ast.ImportFrom):
        if stmt.level or not stmt.module:
            return False
        if stmt.module.split(".")[0] in FRAMEWORK_ROOTS:
            return all(resolve(f"{stmt.module}.{a.name}") is not None for a in stmt.names)
        return _find_spec(stmt.module) is not None
    return all(_find_spec(a.name) is not None for a in stmt.names)


def _binds_here(tree: ast.Module, name: str) -> bool:
    """Whether the module binds `name` at its top level as the installed packages read it (or may, by a star
    import)."""
    return any(name in binds(s) or (isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names))
               for s in _top_level(tree))


def _settings_bound(stmt: ast.If) -> set[str]:
    """The names a module-level `if` of plain assignments binds in each of its branches (timm's `if
    'TIMM_FUSED_ATTN' in os.environ: _USE_FUSED_ATTN = int(...) else: _USE_FUSED_ATTN = 1`); empty if a branch
    does anything else."""
    def bound(body):
        if not body:
            return set()
        names = set()
        for s in body:
            if isinstance(s, ast.If):
                names |= _settings_bound(s)
            elif isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) for t in s.targets):
                names |= binds(s)
            else:
                return set()
        return names
    return bound(stmt.body) & bound(stmt.orelse)


def _annotation_only(name: str, statements: list) -> bool:
    """Whether `statements` read `name` only in annotations (of parameters, returns, annotated assignments)."""
    annotations = [a for s in statements for n in ast.walk(s) for a in (
        [n.annotation] if isinstance(n, (ast.arg, ast.AnnAssign)) and n.annotation is not None else
        [n.returns] if isinstance(n, ast.FunctionDef) and n.returns is not None else [])]
    inside = {id(n) for a in annotations for n in ast.walk(a)}
    return all(id(n) in inside for s in statements for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == name)


def _locals(stmt) -> set[str]:
    """Names bound inside a definition (parameters, assignments, comprehension variables, nested defs)."""
    out = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not stmt:
            out.add(node.name)
    return out


def _absolute(module: str, stmt: ast.ImportFrom) -> str | None:
    """The module a from-import in `module` names (relative ones resolved; `module` is taken as a package's
    submodule)."""
    if stmt.level == 0:
        return stmt.module
    parts = module.split(".")
    if stmt.level > len(parts):
        return None
    base = parts[:len(parts) - stmt.level]
    if source_file(module) is not None and source_file(module).name == "__init__.py":
        base = parts[:len(parts) - stmt.level + 1]
    return ".".join(base + ([stmt.module] if stmt.module else [])) or None
