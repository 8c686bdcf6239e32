"""Importing a generated code folder (model.py + __init__.py) as a fresh Python package.

Used by the backends that build models from their own generated code and by the runners
that verify such folders. Importing runs the folder's Python: only load folders you trust
(tensorbridge's own output, for instance), as for any Python code.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path

from tensorbridge.errors import ModelError


def load_folder(path: Path):
    """Import a generated folder as a fresh package; returns the package module."""
    init = path / "__init__.py"
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
