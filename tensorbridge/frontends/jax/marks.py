"""Marks in the trace: NNX layer calls and jax.nn activations traced as named calls, so the importer reads
`nnx.BatchNorm` as one BatchNormalization and `jax.nn.gelu` as one Gelu instead of their arithmetic.

While `Marks.installed()` is active, each marked callable runs as `jax.jit(fn)` under a unique name
(`tensorbridge_mark_<n>`); the jaxpr then holds a `jit` equation of that name whose last operands are the
call's tensors (input, then the layer's parameters), and `Marks.calls` says what was called with which
settings. A configuration a mark does not describe (BatchNorm in training mode, softmax over several axes)
is traced unmarked, as plain arithmetic.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect

#: jax.nn activations marked, with the keyword settings their IR op keeps
ACTIVATIONS = {"relu": (), "relu6": (), "silu": (), "swish": (), "sigmoid": (), "gelu": ("approximate",),
               "softmax": ("axis",), "log_softmax": ("axis",), "hard_swish": (), "hard_sigmoid": (),
               "leaky_relu": ("negative_slope",), "elu": ("alpha",)}
#: functions of (x, fixed settings...) marked with every argument after x as a setting: module -> names
FUNCTIONS = {"flax.nnx": ("max_pool", "avg_pool"), "jax.numpy": ("mean",)}
#: NNX layers marked, and the parameters passed as the call's tensors (in this order, absent ones skipped)
LAYERS = {"Linear": ("kernel", "bias"), "Conv": ("kernel", "bias"), "BatchNorm": ("scale", "bias", "mean", "var"),
          "LayerNorm": ("scale", "bias"), "RMSNorm": ("scale",), "Embed": ("embedding",)}
PREFIX = "tensorbridge_mark_"


class Marks:
    def __init__(self):
        self.calls: dict[str, tuple[str, dict, tuple[str, ...], object]] = {}  # name -> (kind, settings, tensors,
        # layer)

    def _named(self, kind: str, settings: dict, tensors: tuple[str, ...], layer, fn):
        import jax

        name = f"{PREFIX}{len(self.calls)}"
        self.calls[name] = (kind, settings, tensors, layer)
        fn.__name__ = fn.__qualname__ = name
        return jax.jit(fn)

    @contextlib.contextmanager
    def installed(self):
        import jax
        from flax import nnx

        saved = []
        try:
            for kind in ACTIVATIONS:
                for module in (jax.nn, nnx):
                    original = getattr(module, kind, None)
                    if original is not None:
                        saved.append((module, kind, original))
                        setattr(module, kind, self._activation(kind, original))
            for module_name, names in FUNCTIONS.items():
                module = importlib.import_module(module_name)
                for kind in names:
                    original = getattr(module, kind)
                    saved.append((module, kind, original))
                    setattr(module, kind, self._function(kind, original))
            for kind, tensors in LAYERS.items():
                cls = getattr(nnx, kind)
                saved.append((cls, "__call__", cls.__call__))
                cls.__call__ = self._layer(kind, tensors, cls.__call__)
            yield self
        finally:
            for owner, attr, original in reversed(saved):
                setattr(owner, attr, original)

    def _activation(self, kind: str, original):
        kept = ACTIVATIONS[kind]

        @functools.wraps(original)
        def call(x, *args, **kwargs):
            if args or set(kwargs) - set(kept) or not isinstance(kwargs.get("axis", -1), int):
                return original(x, *args, **kwargs)
            return self._named(kind, dict(kwargs), ("x",), None, lambda v: original(v, **kwargs))(x)
        return call

    def _function(self, kind: str, original):
        parameters = list(inspect.signature(original).parameters)[1:]

        @functools.wraps(original)
        def call(x, *args, **kwargs):
            settings = {**dict(zip(parameters, args)), **kwargs}
            return self._named(kind, settings, ("x",), None, lambda v: original(v, *args, **kwargs))(x)
        return call

    def _layer(self, kind: str, tensors: tuple[str, ...], original):
        @functools.wraps(original)
        def call(layer, x, *args, **kwargs):
            if args or kwargs or (kind == "BatchNorm" and not layer.use_running_average):
                return original(layer, x, *args, **kwargs)
            present = tuple(t for t in tensors if getattr(layer, t, None) is not None)
            values = [getattr(layer, t)[...] for t in present]
            return self._named(kind, {}, ("x", *present), layer, lambda v, *_: original(layer, v))(x, *values)
        return call
