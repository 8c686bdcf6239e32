"""Text metrics of the transpiler against hand-written references, comparable in kind with ADELT's: each corpus
class that the target framework's corpus also holds (the same architecture, written by hand in that framework's
idioms) is translated, and the translation's class compared with the hand-written one.

    python -m benchmarks.transpile_reference      # prints the table docs/transpile.md shows

- exact match: the two class definitions are the same code once parsed (docstrings left out);
- API-call F1: the framework calls each class makes (`nn.Conv2d`, `layers.Dense`, `jnp.mean`, resolved through
  the module's imports to their full paths), compared as multisets and summed over the classes.

The corpora (tests/transpile/corpus_*.py) were written for this project; this is not ADELT's test set, which is not
public. Equivalence of what the code computes is what transpile_bench.py measures; these figures only say how
close the text is to what a person wrote.
"""

from __future__ import annotations

import ast
from collections import Counter

from benchmarks.transpile_bench import DIRECTIONS
from tensorbridge.transpile.imports import FRAMEWORK_ROOTS, Imports
from tests.transpile.check import CORPORA


def classes(text: str) -> dict[str, ast.ClassDef]:
    return {c.name: c for c in ast.parse(text).body if isinstance(c, ast.ClassDef)}


def normalized(cls: ast.ClassDef) -> str:
    """The class's code without docstrings, as `ast.unparse` writes it."""
    cls = ast.parse(ast.unparse(cls)).body[0]
    for node in ast.walk(cls):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(cls)


def api_calls(cls: ast.ClassDef, imports: Imports) -> Counter:
    """The framework callables the class calls, by full path (`partial(nnx.Conv, ...)` calls nnx.Conv)."""
    calls = Counter()
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            path = imports.path(node.func)
            if path == "functools.partial" and node.args:
                path = imports.path(node.args[0])
            if path and path.split(".")[0] in FRAMEWORK_ROOTS:
                calls[path] += 1
    return calls


def compare(source: str, target: str) -> tuple[int, int, float]:
    """(classes compared, exact matches, API-call F1) for one direction."""
    import tensorbridge as tb
    from tensorbridge.errors import UnsupportedError

    source_text, target_text = CORPORA[source].read_text(), CORPORA[target].read_text()
    references = classes(target_text)
    reference_imports = Imports(ast.parse(target_text))
    names = [c[0] for c in DIRECTIONS[(source, target)][1] if c[0] in references]
    n = exact = 0
    common = predicted = expected = 0
    for name in names:
        try:
            written = tb.transpile(source_text, to=target, cls=name)
        except UnsupportedError:
            continue
        translated = classes(written)[name]
        reference = references[name]
        n += 1
        exact += normalized(translated) == normalized(reference)
        mine = api_calls(translated, Imports(ast.parse(written)))
        theirs = api_calls(reference, reference_imports)
        common += sum((mine & theirs).values())
        predicted += sum(mine.values())
        expected += sum(theirs.values())
    f1 = 2 * common / (predicted + expected) if predicted + expected else 0.0
    return n, exact, f1


def main() -> None:
    print("| direction | classes with a hand-written reference | exact match | API-call F1 |")
    print("|---|---|---|---|")
    for (source, target), (label, _) in DIRECTIONS.items():
        n, exact, f1 = compare(source, target)
        print(f"| {label} | {n} | {exact} ({100 * exact / max(n, 1):.0f}%) | {100 * f1:.1f} |")


if __name__ == "__main__":
    main()
