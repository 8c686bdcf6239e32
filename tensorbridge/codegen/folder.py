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


WEIGHTS_FILE = "weights.safetensors"
SHARDS_INDEX = "model.safetensors.index.json"
#: weights above this are written in shards of at most this size (a tensor larger than it gets a shard of its own)
SHARD_BYTES = 5 * 10 ** 9

#: the generated __init__.py's function that finds the weights, one file or the shards the index names
WEIGHT_FILES_CODE = f'''

def _weight_files():
    """weights.safetensors, or the shards model.safetensors.index.json lists (a large model's)."""
    here = Path(__file__).parent
    index = here / "{SHARDS_INDEX}"
    if not index.is_file():
        return [here / "{WEIGHTS_FILE}"]
    return [here / name for name in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
'''


def write_code_folder(dest, em, init_code: str, framework: str, weights_format: str) -> None:
    """A generated folder with weights in safetensors: model.py from the emitter `em` (its `module_source()`,
    `state`, `g` and `value_names`), __init__.py, the weights and the signature."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "model.py").write_text(em.module_source())
    (dest / "__init__.py").write_text(init_code)
    trust.written_by_us(dest)
    write_weights(dest, em.state, {"format": weights_format})
    write_signature(dest, em.g, em.value_names, framework)


def write_weights(dest: Path, state: dict, metadata: dict) -> None:
    """`weights.safetensors`, or above SHARD_BYTES shards named as transformers names them
    (`model-00001-of-00003.safetensors` ...) and `model.safetensors.index.json` mapping each tensor to its shard."""
    import json

    from tensorbridge.ir.serde import write_safetensors

    total = sum(int(a.nbytes) for a in state.values())
    if total <= SHARD_BYTES:
        write_safetensors(dest / WEIGHTS_FILE, state, metadata)
        return
    shards: list[list[str]] = [[]]
    size = 0
    for key, arr in state.items():
        if shards[-1] and size + arr.nbytes > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append(key)
        size += arr.nbytes
    weight_map = {}
    for i, keys in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        write_safetensors(dest / name, {k: state[k] for k in keys}, metadata)
        weight_map.update(dict.fromkeys(keys, name))
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (dest / SHARDS_INDEX).write_text(json.dumps(index, indent=1) + "\n")


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
