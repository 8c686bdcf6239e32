"""What the runners of generated code folders share: the folder's module and signature, and every value its
function's locals held, for `verify --per-layer`."""

from __future__ import annotations

import sys
from pathlib import Path

from tensorbridge.codegen.folder import load_model, read_signature


class GeneratedModuleRunner:
    """A generated folder's model (its `load_model()`), with the inputs, outputs, local -> IR value names and
    layouts its signature records. Loading imports the folder's code: trusted folders only."""

    def __init__(self, source, **_options):
        path = Path(source)
        signature = read_signature(path)
        self.module = load_model(path)
        self.inputs = [(i["name"], i["dtype"], tuple(i["shape"])) for i in signature["inputs"]]
        self.outputs = list(signature["outputs"])
        self.value_names = dict(signature.get("values", {}))
        self._layouts = dict(signature.get("layouts", {}))

    def layouts(self) -> dict:
        """IR value name -> the layout the generated code holds it in, where permuted."""
        return self._layouts

    def by_value_name(self, frame_locals: dict, keep, convert) -> dict:
        """The captured locals that `keep` accepts, by the IR value each holds, as `convert` makes them arrays."""
        return {self.value_names.get(local, local): convert(t) for local, t in frame_locals.items() if keep(t)}


def capture_locals(fn, *args, copy=lambda obj: obj) -> dict:
    """Call fn(*args) and return the value every local held when it was bound. Generated code deletes locals
    after their last use, so locals are collected line by line with a trace hook; `copy` keeps each object as
    it was when first seen under a name (a framework that overwrites tensors in place needs a real copy)."""
    code = fn.__code__ if hasattr(fn, "__code__") else fn.__func__.__code__
    captured: dict = {}
    seen: dict[str, int] = {}  # local -> id of the object captured under it

    def local_trace(frame, event, arg):
        if event in ("line", "return"):
            for name, obj in frame.f_locals.items():
                if seen.get(name) != id(obj):
                    seen[name] = id(obj)
                    captured[name] = copy(obj)
        return local_trace

    def trace(frame, event, arg):
        return local_trace if frame.f_code is code else None

    old = sys.gettrace()
    sys.settrace(trace)
    try:
        fn(*args)
    finally:
        sys.settrace(old)
    return captured
