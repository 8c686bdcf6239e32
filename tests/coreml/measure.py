"""The figures of docs/coreml.md: each zoo model written as Core ML (both kinds) and read back, and files that
coremltools' own PyTorch converter wrote, read; relative to PyTorch's output (max|d| / max|y|).

    python -m tests.coreml.measure
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tests.coreml.test_coreml import ZOO, _apple, _read_back, _torch_outputs, mix_model


def _rel(expected, got) -> str:
    return f"{np.abs(got - expected).max() / np.abs(expected).max():.1e}"


def main() -> None:
    from tests.models.torch_zoo import ZOO as BUILDERS
    from tests.models.torch_zoo import imported

    print("| model | .mlpackage written in | read back vs PyTorch | .mlmodel read back vs PyTorch |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ZOO:
            module, args, graph = imported(name)
            expected = _torch_outputs(module, args)
            start = time.perf_counter()
            tb.save(graph, Path(tmp) / f"{name}.mlpackage")
            seconds = time.perf_counter() - start
            tb.save(graph, Path(tmp) / f"{name}.mlmodel")
            print(f"| {name} | {seconds:.1f} s | {_rel(expected, _read_back(Path(tmp) / f'{name}.mlpackage', args))} "
                  f"| {_rel(expected, _read_back(Path(tmp) / f'{name}.mlmodel', args))} |")
        print("\n| written by coremltools' PyTorch converter | read vs PyTorch |")
        print("|---|---|")
        for name in ("mix", "resnet18", "mobilenet_v2"):
            module, args = mix_model() if name == "mix" else BUILDERS[name]()[:2]
            path = Path(tmp) / f"apple_{name}.mlpackage"
            _apple(module, args, path)
            print(f"| {name} | {_rel(_torch_outputs(module, args), _read_back(path, args))} |")


if __name__ == "__main__":
    main()
