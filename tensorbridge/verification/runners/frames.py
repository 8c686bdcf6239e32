"""Every value a generated function's locals held, for `verify --per-layer` on code targets."""

from __future__ import annotations

import sys


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
