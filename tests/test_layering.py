"""The package's layers, checked on every import statement (lazy ones in functions included).

- `ir`, `ops` and `formats` import no framework, no pass, no registry, no frontend or backend;
- `rules` (the registries) import no frontend, backend or verification code;
- frontends never import backends, and backends never import frontends.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tensorbridge"
FRAMEWORKS = {"onnx", "onnxruntime", "torch", "tensorflow", "keras", "tflite", "ai_edge_litert", "jax", "flax",
              "coremltools", "caffe", "mxnet", "paddle"}
LAYERS = {
    "ir": {"tensorbridge.passes", "tensorbridge.rules", "tensorbridge.frontends", "tensorbridge.backends",
           "tensorbridge.verification", "tensorbridge.codegen", "tensorbridge.cli", "tensorbridge.frameworks"},
    "ops": {"tensorbridge.passes", "tensorbridge.rules", "tensorbridge.frontends", "tensorbridge.backends",
            "tensorbridge.verification", "tensorbridge.codegen", "tensorbridge.cli", "tensorbridge.frameworks"},
    "formats": {"tensorbridge.passes", "tensorbridge.rules", "tensorbridge.frontends", "tensorbridge.backends",
                "tensorbridge.verification", "tensorbridge.codegen"},
    "rules": {"tensorbridge.frontends", "tensorbridge.backends", "tensorbridge.verification", "tensorbridge.cli"},
    "frontends": {"tensorbridge.backends"},
    "backends": {"tensorbridge.frontends"},
}
NO_FRAMEWORK = {"ir", "ops"}


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def _violations(layer: str) -> list[str]:
    forbidden = LAYERS[layer]
    found = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden) or \
                    (layer in NO_FRAMEWORK and name.split(".")[0] in FRAMEWORKS):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    return found


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_imports_only_what_it_may(layer):
    assert not _violations(layer), "\n".join(_violations(layer))
