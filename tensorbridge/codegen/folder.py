"""Generated code folders: importing one (model.py + __init__.py) as a fresh package, and its signature file.

Used by the backends that build models from their own generated code and by the runners
that verify such folders. Importing runs the folder's Python, so a folder loads only when trusted
(`tensorbridge.trust`: the user's --trust-code, or tensorbridge's own output).
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path

from tensorbridge import trust
from tensorbridge.errors import ModelError, reason


def load_folder(path: Path):
    """Import a generated folder as a fresh package; returns the package module."""
    init = path / "__init__.py"
    trust.require(path, "a code folder (its model.py and __init__.py are Python)")
    if not init.is_file() or not (path / "model.py").is_file():
        raise ModelError(f"{path} is not a tensorbridge PyTorch folder (model.py and __init__.py expected)")
    name = f"tensorbridge_generated_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - generated code that fails to import is a user-facing error
        raise ModelError(f"cannot import {path}/model.py: {type(e).__name__}: {e}") from None
    return module


SIGNATURE_FILE = "tensorbridge.json"


def write_code_folder(dest, em, init_code: str, framework: str, weights_format: str) -> None:
    """A generated folder with weights in safetensors: model.py from the emitter `em` (its `module_source()`,
    `state`, `g` and `value_names`), __init__.py, weights.safetensors and the signature."""
    from tensorbridge.ir.serde import write_safetensors

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "model.py").write_text(em.module_source())
    (dest / "__init__.py").write_text(init_code)
    trust.written_by_us(dest)
    write_safetensors(dest / "weights.safetensors", em.state, {"format": weights_format})
    write_signature(dest, em.g, em.value_names, framework)


def write_signature(folder: Path, graph, names: dict[str, str], framework: str) -> None:
    """`tensorbridge.json` beside generated code: the framework it is written for, the inputs, outputs, which IR
    value each local or layer holds where their names differ, and the values held in another layout (what
    `verify` needs; kept out of the model's code)."""
    import json

    from tensorbridge.ir import dtypes

    inputs = [{"name": v.name, "dtype": dtypes.name(v.dtype) if v.dtype is not None else "float32",
               "shape": [d if isinstance(d, (int, str)) else None for d in (v.shape or [])]} for v in graph.inputs]
    doc = {"framework": framework, "inputs": inputs, "outputs": [v.name for v in graph.outputs], "values": names,
           "layouts": graph.layouts()}
    (Path(folder) / SIGNATURE_FILE).write_text(json.dumps(doc, indent=1) + "\n")


def signed_framework(folder: Path) -> str | None:
    """The framework a generated folder's signature names (None: no readable signature says)."""
    import json

    try:
        doc = json.loads((Path(folder) / SIGNATURE_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    framework = doc.get("framework") if isinstance(doc, dict) else None
    return framework if isinstance(framework, str) else None


def read_signature(folder: Path) -> dict:
    """The `tensorbridge.json` of a generated folder: {"inputs": [...], "outputs": [...], "values": {...}}."""
    import json

    path = Path(folder) / SIGNATURE_FILE
    if not path.is_file():
        raise ModelError(f"{folder} has no {SIGNATURE_FILE}: it was not written by this version of tensorbridge")
    try:
        doc = json.loads(path.read_text())
    except (ValueError, RecursionError) as e:
        raise ModelError(f"{path} is not valid JSON: {e}") from None
    if not _well_formed(doc):
        raise ModelError(f"{path} is not a signature: it needs inputs [{{name, dtype, shape}}], outputs [names] "
                         "and values {local: name}")
    return doc


def _well_formed(doc) -> bool:
    from tensorbridge.ir import dtypes

    def spec_ok(spec) -> bool:
        return (isinstance(spec, dict) and isinstance(spec.get("name"), str) and spec.get("dtype") in dtypes.NAMES
                and isinstance(spec.get("shape"), list)
                and all(d is None or isinstance(d, str) or (isinstance(d, int) and 0 <= d < 1 << 31)
                        for d in spec["shape"]))

    return (isinstance(doc, dict) and isinstance(doc.get("inputs"), list) and all(map(spec_ok, doc["inputs"]))
            and isinstance(doc.get("outputs"), list) and all(isinstance(o, str) for o in doc["outputs"])
            and isinstance(doc.get("values", {}), dict) and isinstance(doc.get("layouts", {}), dict))


def load_model(path: Path):
    """The folder's `load_model()` result; its failure (the folder's code, weights it cannot load) is a
    ModelError naming the folder."""
    package = load_folder(path)
    try:
        return package.load_model()
    except Exception as e:  # noqa: BLE001 - whatever the folder's own code raises
        raise ModelError(f"{path}: its load_model() failed: {reason(e)}") from None
