"""Device and dtype arguments passed on to each layer and tensor a class makes: timm's `dd = {'device': device,
'dtype': dtype}` then `nn.Linear(..., **dd)`, PyTorch's own `factory_kwargs`, `torch.empty(dim, device=device,
dtype=dtype)`. The targets place arrays themselves and the translation's weights are float32, so before translation
the dict, each `**dd` it is passed as and each such argument passed on are left out (a note says so); the
parameters stay in the signature.
"""

from __future__ import annotations

import ast


def drop_factory_arguments(cls: ast.ClassDef, arguments: frozenset) -> list[str]:
    """Rewrite, in place, each method of `cls` binding a local name to a dict display of only `arguments`
    (`{"device": device, "dtype": dtype}`) that it reads only as `**name`. Returns a note per dict left out."""
    notes = []
    for fn in (m for m in cls.body if isinstance(m, ast.FunctionDef)):
        for stmt in list(fn.body):
            name = _factory_dict(stmt, arguments)
            if name is None:
                continue
            reads = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and
                     isinstance(n.ctx, ast.Load)]
            spread = [k for n in ast.walk(fn) if isinstance(n, ast.Call) for k in n.keywords
                      if k.arg is None and isinstance(k.value, ast.Name) and k.value.id == name]
            if len(reads) != len(spread) or any(isinstance(n, ast.Name) and n.id == name and
                                                isinstance(n.ctx, ast.Store) and n is not stmt.targets[0]
                                                for n in ast.walk(fn)):
                continue  # read otherwise, or bound again
            fn.body.remove(stmt)
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                call.keywords = [k for k in call.keywords if not any(k is s for s in spread)]
            notes.append(f"line {stmt.lineno}: `**{name}` ({', '.join(sorted(_keys(stmt.value)))}) is left out: "
                         "the target places arrays itself and the weights are float32")
        passed = _passed_on(fn, arguments)
        if passed:
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                call.keywords = [k for k in call.keywords if not any(k is p for p in passed)]
            notes.append(f"line {fn.lineno}: {cls.name}.{fn.name} passes on "
                         f"{', '.join(sorted({k.arg for k in passed}))}, which is left out: the target places arrays "
                         "itself and the weights are float32")
    return notes


def _passed_on(fn: ast.FunctionDef, arguments: frozenset) -> list[ast.keyword]:
    """The keywords passing on a parameter of `fn` named as one of `arguments` that defaults to None
    (`torch.empty(dim, device=device, dtype=dtype)`), when `fn` reads the parameter nowhere else."""
    given = fn.args.args[len(fn.args.args) - len(fn.args.defaults):] + fn.args.kwonlyargs
    defaults = [*fn.args.defaults, *fn.args.kw_defaults]
    names = {a.arg for a, d in zip(given, defaults) if a.arg in arguments and isinstance(d, ast.Constant) and
             d.value is None}
    out = []
    for name in names:
        passes = [k for n in ast.walk(fn) if isinstance(n, ast.Call) for k in n.keywords
                  if k.arg in arguments and isinstance(k.value, ast.Name) and k.value.id == name]
        reads = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
        if passes and len(passes) == len(reads):
            out += passes
    return out


def _factory_dict(stmt, arguments: frozenset) -> str | None:
    """The name `stmt` binds to a dict display whose keys are all in `arguments`, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
            isinstance(stmt.value, ast.Dict) and stmt.value.keys and None not in stmt.value.keys and \
            _keys(stmt.value) <= arguments:
        return stmt.targets[0].id
    return None


def _keys(display: ast.Dict) -> set:
    return {k.value if isinstance(k, ast.Constant) else None for k in display.keys}
