"""Runs a generated Flax NNX code folder (model.py + weights.safetensors) with JAX.

Loading the folder imports its `model.py`, so it loads only when trusted (`tensorbridge.trust`). `run` calls
the model under `jax.jit`, as it would be deployed; `run_intermediates` runs `__call__` eagerly and collects
every local, for `verify --per-layer`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.codegen.folder import load_model, read_signature
from tensorbridge.verification.runners.frames import capture_locals


class FlaxRunner:
    name = "JAX (generated Flax NNX module)"

    def __init__(self, source, **_options):
        from flax import nnx

        path = Path(source)
        signature = read_signature(path)
        self.module = load_model(path)
        self.inputs = [(i["name"], i["dtype"], tuple(i["shape"])) for i in signature["inputs"]]
        self.outputs = list(signature["outputs"])
        self.value_names = dict(signature.get("values", {}))
        self._layouts = dict(signature.get("layouts", {}))
        self._call = nnx.jit(lambda model, *args: model(*args))

    def _arguments(self, feeds) -> list:
        import jax.numpy as jnp

        return [jnp.asarray(feeds[n]) for n, _, _ in self.inputs]

    def run(self, feeds):
        out = self._call(self.module, *self._arguments(feeds))
        out = out if isinstance(out, (tuple, list)) else (out,)
        return {n: np.asarray(t) for n, t in zip(self.outputs, out)}

    def layouts(self) -> dict:
        """IR value name -> the layout the generated code holds it in, where permuted."""
        return self._layouts

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every value __call__ computes, by IR value name (each op writes its own local)."""
        import jax

        frame_locals = capture_locals(type(self.module).__call__, self.module, *self._arguments(feeds))
        return {self.value_names.get(local, local): np.asarray(t) for local, t in frame_locals.items()
                if isinstance(t, jax.Array)}
