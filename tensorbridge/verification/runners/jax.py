"""Runs a generated Flax NNX code folder (model.py + weights.safetensors) with JAX.

Loading the folder imports its `model.py`, so it loads only when trusted (`tensorbridge.trust`). `run` calls
the model under `jax.jit`, as it would be deployed; `run_intermediates` runs `__call__` eagerly and collects
every local, for `verify --per-layer`.
"""

from __future__ import annotations

import os

import numpy as np

from tensorbridge.verification.runners.generated import GeneratedModuleRunner, capture_locals


class FlaxRunner(GeneratedModuleRunner):
    name = "JAX (generated Flax NNX module)"

    def __init__(self, source, **options):
        from flax import nnx

        super().__init__(source, **options)
        self._call = nnx.jit(lambda model, *args: model(*args))

    def _arguments(self, feeds) -> list:
        import jax.numpy as jnp

        return [jnp.asarray(feeds[n]) for n, _, _ in self.inputs]

    def run(self, feeds):
        out = self._call(self.module, *self._arguments(feeds))
        out = out if isinstance(out, (tuple, list)) else (out,)
        return {n: np.asarray(t) for n, t in zip(self.outputs, out)}

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every value __call__ computes, by IR value name (each op writes its own local)."""
        import jax

        frame_locals = capture_locals(type(self.module).__call__, self.module, *self._arguments(feeds))
        return self.by_value_name(frame_locals, lambda t: isinstance(t, jax.Array), np.asarray)


class JaxExportRunner:
    """Runs a serialized `jax.export` artifact (or an `Exported`) with jax, on its recorded input types."""

    name = "JAX (jax.export artifact)"

    def __init__(self, source, **_options):
        from jax import export

        from tensorbridge.frontends.jax.stablehlo import signature

        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                source = export.deserialize(bytearray(f.read()))
        self.exported = source
        input_names, self.outputs = signature(source)
        self.inputs = [(name, str(a.dtype), tuple(a.shape)) for name, a in zip(input_names, source.in_avals)]

    def run(self, feeds):
        import jax

        out = self.exported.call(*[feeds[n] for n, _, _ in self.inputs])
        return {n: np.asarray(t) for n, t in zip(self.outputs, jax.tree_util.tree_leaves(out))}
