"""A constructor argument threaded through translated model code: NNX layers take the `rngs` their model's
`__init__` receives, so every `__init__`, method and helper function that builds a layer (its written code
reads the argument) takes it as a keyword-only argument, and every call of one passes it on."""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.transpile.syntax import is_super


def thread(body: list[ast.stmt], argument: str, annotation: str, forward: str) -> list[ast.FunctionDef]:
    """Add `argument` where the code in `body` (a translated module) needs it; returns the forward methods
    that would need it, which cannot have it (a layer built in the forward pass)."""
    classes = {c.name: c for c in body if isinstance(c, ast.ClassDef)}
    bases = {name: c.bases[0].id for name, c in classes.items()
             if c.bases and isinstance(c.bases[0], ast.Name) and c.bases[0].id in classes}
    functions = {(None, f.name): f for f in body if isinstance(f, ast.FunctionDef)}
    functions.update({(name, m.name): m for name, c in classes.items() for m in c.body
                      if isinstance(m, ast.FunctionDef)})

    def method(cls, name):
        while cls is not None and (cls, name) not in functions:
            cls = bases.get(cls)
        return (cls, name) if cls is not None else None

    def callee(call: ast.Call, owner):
        f = call.func
        if isinstance(f, ast.Name):
            return method(f.id, "__init__") if f.id in classes else (None, f.id) if (None, f.id) in functions else None
        if isinstance(f, ast.Attribute) and owner is not None:
            if isinstance(f.value, ast.Name) and f.value.id == "self":
                return method(owner, f.attr)
            if f.attr == "__init__" and is_super(f.value):
                return method(bases.get(owner), "__init__")
        return None

    def reads(fn) -> bool:
        return any(isinstance(n, ast.Name) and n.id == argument and isinstance(n.ctx, ast.Load) for n in ast.walk(fn))

    changed = True
    while changed:
        changed = False
        for (owner, _), fn in functions.items():
            for call in [n for n in ast.walk(fn) if isinstance(n, ast.Call)]:
                target = callee(call, owner)
                if target and reads(functions[target]) and all(k.arg != argument for k in call.keywords):
                    call.keywords.append(ast.keyword(argument, ast.Name(argument, ast.Load())))
                    changed = True
    refused = []
    for (owner, name), fn in functions.items():
        if not reads(fn):
            continue
        if owner is not None and name == forward:
            refused.append(fn)
            continue
        fn.args.kwonlyargs.append(ast.arg(argument, P.name(annotation)))
        fn.args.kw_defaults.append(None)
    return refused
