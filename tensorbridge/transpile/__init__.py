"""Transpile model code: PyTorch `nn.Module` classes -> Keras 3 layers or Flax NNX modules, Keras layers -> PyTorch
modules, Flax NNX modules -> PyTorch modules or Keras layers, source to source, and carry the trained weights over
(`port_weights`).

    text = tensorbridge.transpile(open("model.py").read(), to="keras")   # or to="flax"; the source is read
    tensorbridge.transpile.port_weights(torch_model, keras_model)   # keras_model built (called once)

The translation goes through the code rows of each framework's registry (rules/code.py): a layer or call is
read into an IR op by the source's rows and written by the target's. Whatever the rows cannot prove equal
is refused with file:line and the reason, all blockers at once (`UnsupportedError`); nothing is guessed.
"""

from __future__ import annotations

import ast
import sys
import textwrap
import types

from tensorbridge import frameworks
from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.wrap import LINE_LENGTH
from tensorbridge.errors import ModelError
from tensorbridge.transpile.translate import Translator
from tensorbridge.transpile.weights import port_weights

#: source framework -> the frameworks its code is translated into
DIRECTIONS = {"torch": ("keras", "flax"), "keras": ("torch", "flax"), "flax": ("torch", "keras")}
SOURCES = tuple(DIRECTIONS)
#: translations at most, each reading as numbers the parameters the one before found passed numbers (a number
#: passed on through layers of layers is found one layer a translation)
NUMBER_PASSES = 4
TARGETS = tuple(dict.fromkeys(t for targets in DIRECTIONS.values() for t in targets))


def _table(framework: str):
    return frameworks.registry(frameworks.by_name(framework)).code


def transpile(source_text: str, to: str, cls: str | None = None, filename: str = "<source>",
              source: str | None = None) -> str:
    """The module `source_text` with its model classes written for framework `to`. `source` is the framework the
    classes are written in (by default, the one their base classes come from). `cls` keeps only that class (and
    what it uses); raises UnsupportedError listing every construct that cannot be translated."""
    source = source or _source_framework(source_text, filename)
    if source not in SOURCES:
        raise ModelError(f"transpiling from {source!r} is not supported yet (sources: {', '.join(SOURCES)})")
    if to not in DIRECTIONS[source]:
        raise ModelError(f"transpiling {source} code to {to!r} is not supported yet ({source} code is translated to "
                         f"{', '.join(DIRECTIONS[source])})")
    target = _table(to)
    numbers: dict = {}
    for _ in range(NUMBER_PASSES):  # parameters every call passes numbers to: read so the next time (see Translator)
        translator = Translator(source_text, filename, _table(source), target, number_parameters=numbers)
        body, classes = translator.module(only=cls)
        found = translator.numbers_passed()
        if found == numbers:
            break
        numbers = found
    hint = "Nothing was written. docs/transpile.md explains each refusal."
    unused = translator.unused_functions() if cls is None and classes else []
    if unused:  # a script's training loop and main: the model classes are translated alone with --class
        hint += (f" No model class uses {', '.join(unused)}: --class {classes[0]} (or cls=) translates one class "
                 "and what it uses.")
    translator.report.raise_if_any(hint=hint)
    doc = f"{', '.join(classes) if cls is None else cls}: translated from {source} by tensorbridge."
    if translator.notes:
        doc += "\n\nNotes (none changes what the model computes in inference):\n" + "\n".join(
            textwrap.fill(n, LINE_LENGTH - 4, initial_indent="- ", subsequent_indent="  ", break_long_words=False,
                          break_on_hyphens=False) for n in dict.fromkeys(translator.notes)) + "\n"
    kept = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]
    rest = [s for s in body if s not in kept]
    rest = _helpers_used(target.skeleton.helpers, rest) + rest
    return P.module(doc, _import_groups(kept + list(target.skeleton.imports), _free_names(rest)), rest)


def _source_framework(text: str, filename: str) -> str:
    """The framework whose layer classes (its base layer, sequential container or any layer it has a row for)
    the module's classes derive from (PyTorch when none does)."""
    from tensorbridge.transpile.imports import Imports, Rows
    from tensorbridge.transpile.translate import parse

    tree = parse(text, filename)
    imports = Imports(tree)
    bases = {imports.path(b) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for b in c.bases} - {None}

    def derives(framework):
        source = _table(framework).source
        rows = Rows(_table(framework).layers)
        return any(b in source.module_classes or source.containers.get(b) == "sequential" or rows.find(b)
                   for b in bases)

    return next((f for f in SOURCES if derives(f)), "torch")


def _helpers_used(helpers: dict, stmts: list) -> list[ast.stmt]:
    """The definitions of the helpers `stmts` use, and of those they use in turn, in the helpers' order."""
    used, definitions = set(), {}
    names = _names(stmts)
    while new := [h for h in helpers if h in names and h not in used]:
        used.update(new)
        definitions.update({h: helpers[h]() for h in new})
        names = _names(s for h in new for s in definitions[h])
    return [s for h in helpers if h in used for s in definitions[h]]


def _names(stmts) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}


def _free_names(stmts) -> set[str]:
    """The names `stmts` read from the module's scope: not a function's parameters inside it (a helper's
    `reduce` parameter does not use an imported `reduce`)."""
    free = set()

    def visit(node, bound: frozenset):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            a = node.args
            bound = bound | {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p}
        if isinstance(node, ast.Name) and node.id not in bound:
            free.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, bound)
    for stmt in stmts:
        visit(stmt, frozenset())
    return free


def _import_groups(imports: list[ast.stmt], used: set[str]) -> list[list[ast.stmt]]:
    """The imports the code uses, standard library first, each group sorted as isort does."""
    def binds(stmt) -> bool:
        return any((a.asname or a.name.split(".")[0]) in used for a in stmt.names)

    def module(stmt) -> str:
        return stmt.names[0].name if isinstance(stmt, ast.Import) else stmt.module or ""

    def order(stmt):
        return isinstance(stmt, ast.ImportFrom), module(stmt).lower()

    imports = list({ast.dump(i): i for i in imports}.values())  # the source's and the target's same import once
    future = [i for i in imports if module(i) == "__future__"]
    kept = [_only_used(i, used) for i in imports if binds(i) and i not in future]
    stdlib = [i for i in kept if module(i).split(".")[0] in sys.stdlib_module_names]
    return [future, sorted(stdlib, key=order), sorted([i for i in kept if i not in stdlib], key=order)]


def _only_used(stmt, used: set[str]):
    """The import `stmt` binding only the names `used` reads (`from einops import rearrange` of `rearrange, reduce`)."""
    names = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) in used]
    if len(names) == len(stmt.names):
        return stmt
    return ast.Import(names) if isinstance(stmt, ast.Import) else ast.ImportFrom(stmt.module, names, stmt.level)


class _CallableModule(types.ModuleType):
    """`tensorbridge.transpile(...)` calls `transpile`, and `tensorbridge.transpile.port_weights` is still the
    module's function: the package is both."""

    def __call__(self, *args, **kwargs):
        return transpile(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
__all__ = ["transpile", "port_weights", "DIRECTIONS", "SOURCES", "TARGETS"]
