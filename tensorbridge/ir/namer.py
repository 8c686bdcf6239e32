"""Legal, unique Python identifiers for generated code.

Any string from a source model (node names, tensor names) passes through here before it
becomes an identifier: characters outside [A-Za-z0-9_] become `_`, a leading digit gets a
prefix, keywords, builtins and the generator's reserved names are avoided, and clashes get
a numeric suffix. Nothing from the model reaches generated code any other way except as a
string literal built by the `ast` module.
"""

from __future__ import annotations

import builtins
import keyword
import re

_RESERVED = {"self", "torch", "nn", "F", "math", "np", "keras", "layers", "ops", "jnp", "Model", "forward",
             "load_model", "super", "INPUTS", "OUTPUTS", "VALUE_NAMES", "LAYER_VALUES",
             "CONSTANTS", "build_model"}


class Namer:
    def __init__(self, reserved: set[str] | None = None):
        self.taken: set[str] = set(_RESERVED) | set(dir(builtins)) | set(reserved or ())

    def name(self, raw: str, fallback: str = "v") -> str:
        base = re.sub(r"\W", "_", readable(raw or ""), flags=re.ASCII).strip("_") or fallback
        base = re.sub(r"_+", "_", base)
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        if keyword.iskeyword(base) or keyword.issoftkeyword(base):
            base += "_"
        candidate, i = base, 1
        while candidate in self.taken:
            candidate = f"{base}_{i}"
            i += 1
        self.taken.add(candidate)
        return candidate


def readable(raw: str) -> str:
    """A source name without the scaffolding exporters add to it: the scope path torch.onnx writes
    (`/features/features.1/conv/conv.0/Conv` -> `features.1/conv.0/Conv`), a first output's `_output_0` or
    TensorFlow's `:0`."""
    raw = re.sub(r"(_output_0|:0)$", "", raw)
    parts = [p for p in raw.split("/") if p]
    kept = [p for p, after in zip(parts, parts[1:] + [""]) if not after.startswith(p + ".")]
    return "/".join(kept) or raw
