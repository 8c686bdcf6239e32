"""The format registry: one line per format — extensions, loader, saver, verify runner.

Entry points are "module:attribute" strings so a framework is imported only when used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from tensorbridge.errors import ModelError


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]
    loader: str | None
    saver: str | None
    runner: str | None
    extra: str  # pip extra that provides the framework ("" = core)
    description: str
    #: "module:function" returning the IR ops this format can import / export
    imports: str | None = None
    exports: str | None = None


FORMATS: tuple[Format, ...] = (
    Format("onnx", (".onnx",), "tensorbridge.frontends.onnx.importer:load",
           "tensorbridge.backends.onnx.exporter:export",
           "tensorbridge.verification.runners.onnxruntime:OnnxRuntimeRunner",
           "onnx", "ONNX model (onnxruntime runs it)",
           "tensorbridge.frontends.onnx.importer:importable_ops", "tensorbridge.backends.onnx.exporter:exportable_ops"),
    Format("tbir", (".tbir",), "tensorbridge.ir.serde:load", "tensorbridge.ir.serde:save",
           "tensorbridge.verification.runners.reference:ReferenceRunner", "",
           "tensorbridge IR: graph JSON + safetensors weights (reference interpreter runs it)",
           "tensorbridge.ops.schema:all_op_names", "tensorbridge.ops.schema:all_op_names"),
)


def by_name(name: str) -> Format:
    for f in FORMATS:
        if f.name == name.lower():
            return f
    raise ModelError(f"unknown format {name!r}; known formats: {', '.join(f.name for f in FORMATS)}")


def detect(path: str | Path, explicit: str | None = None) -> Format:
    """The format named by `explicit`, or the one whose extension `path` has."""
    if explicit:
        return by_name(explicit)
    suffix = Path(path).suffix.lower()
    for f in FORMATS:
        if suffix in f.extensions:
            return f
    known = ", ".join(e for f in FORMATS for e in f.extensions)
    raise ModelError(f"cannot tell the format of {str(path)!r} from its extension {suffix or '(none)'!r}; "
                     f"known extensions: {known} (or pass --to / format=)")


def resolve(entry: str):
    """Import "module:attribute" lazily, with a clear message when the extra is missing."""
    module, _, attr = entry.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        fmt = next((f for f in FORMATS if entry in (f.loader, f.saver, f.runner)), None)
        extra = f" (pip install 'tensorbridge[{fmt.extra}]')" if fmt and fmt.extra else ""
        raise ModelError(f"{e.name} is needed for this{extra}") from None
