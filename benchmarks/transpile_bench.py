"""The transpiler's benchmark: every corpus class translated in each direction (PyTorch -> Keras / Flax NNX,
Keras -> PyTorch / Flax NNX, Flax NNX -> PyTorch / Keras), weights ported, outputs compared.

    python -m benchmarks.transpile_bench          # prints the table docs/transpile.md shows

Reports, per direction: classes equal within 1e-5 relative, refused, failing to run or port, and silently wrong
(must be 0). The corpora are tests/transpile/corpus_torch.py, corpus_keras.py and corpus_flax.py (classes written for
this project), and corpus_timm.py (model code importing its building blocks from timm).
"""

from __future__ import annotations

import platform
import tempfile
import time
from collections import Counter

from tests.transpile import corpus_flax, corpus_keras, corpus_torch
from tests.transpile.check import CORPORA, check, load_module

#: (source, target) -> (label, the source corpus' cases)
DIRECTIONS = {("torch", "keras"): ("PyTorch → Keras", corpus_torch.CASES),
              ("torch", "flax"): ("PyTorch → Flax NNX", corpus_torch.CASES),
              ("keras", "torch"): ("Keras → PyTorch", corpus_keras.CASES),
              ("keras", "flax"): ("Keras → Flax NNX", corpus_keras.CASES),
              ("flax", "torch"): ("Flax NNX → PyTorch", corpus_flax.CASES),
              ("flax", "keras"): ("Flax NNX → Keras", corpus_flax.CASES)}


#: PyTorch model code importing its building blocks from timm (tests/transpile/corpus_timm.py): target -> label
LIBRARY_DIRECTIONS = {"keras": "PyTorch with timm imports → Keras", "flax": "PyTorch with timm imports → Flax NNX"}
TIMM_CORPUS = CORPORA["torch"].with_name("corpus_timm.py")


def main() -> None:
    import ast

    import flax
    import keras
    import torch

    from tests.models.timm_zoo import import_timm

    import_timm()
    modules = {source: load_module(path, f"corpus_{source}") for source, path in CORPORA.items()}
    timm_module = load_module(TIMM_CORPUS, "corpus_timm")
    timm_cases = ast.literal_eval(TIMM_CORPUS.read_text().split("\nCASES = ", 1)[1])
    runs = [(label, cases, source, to, modules[source], None) for (source, to), (label, cases) in DIRECTIONS.items()]
    runs += [(label, timm_cases, "torch", to, timm_module, TIMM_CORPUS) for to, label in LIBRARY_DIRECTIONS.items()]
    work = tempfile.mkdtemp()
    print(f"machine: {platform.machine()} {platform.processor() or ''}, Python {platform.python_version()}, "
          f"torch {torch.__version__}, keras {keras.__version__}, flax {flax.__version__}")
    print("| direction | classes | equal (≤1e-5) | refused | does not run / port | silently wrong | time |")
    print("|---|---|---|---|---|---|---|")
    notes = []
    for direction, cases, source, to, module, corpus in runs:
        start = time.perf_counter()
        outcomes = [check(c[0], c[1], c[2], c[3] if len(c) > 3 else "float32", module, work, to=to,
                          source=source, corpus=corpus) for c in cases]
        seconds = time.perf_counter() - start
        counts = Counter(o.status for o in outcomes)
        n = len(outcomes)
        print(f"| {direction} | {n} | {counts['equal']} ({100 * counts['equal'] / n:.0f}%) | {counts['refused']} | "
              f"{counts['error']} | {counts['wrong']} | {seconds:.0f} s |")
        notes += [f"- {direction}: {o.name}: {o.status}: {o.detail}" for o in outcomes if o.status != "equal"]
    print("\n".join(notes))


if __name__ == "__main__":
    main()
