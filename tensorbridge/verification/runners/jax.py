"""Runs a generated Flax NNX code folder (model.py + weights.safetensors) with JAX.

Loading the folder imports its `model.py`, so it loads only when trusted (`tensorbridge.trust`). `run` calls
the model under `jax.jit`, as it would be deployed; `run_intermediates` runs `__call__` eagerly and collects
every local, for `verify --per-layer`. `run_without_library_fusion` compiles with XLA CPU's YNNPACK fusion off:
jaxlib 0.10's fusion computes some convolution blocks wrongly (channels of a pooled sum of a padded value and a
convolution of it), so where only the default compilation differs, the verdict names the compiler, not the code.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from tensorbridge.verification.runners.generated import GeneratedModuleRunner, capture_locals

#: the `jax.jit(..., compiler_options=...)` that turns XLA CPU's YNNPACK library fusion off
NO_LIBRARY_FUSION = {"xla_cpu_experimental_ynn_fusion_type": ""}

#: what a user is told when only XLA CPU's library fusion makes the written code compute something else
LIBRARY_FUSION_FAULT = (
    "XLA's CPU compiler computes this model differently with its YNNPACK library fusion on (jax.jit's default in "
    "jaxlib {version}): compiled with it off, the written code matches the source (max|d|/max|y| = {rel:.3g}). The "
    "conversion is right; run it under jax.jit(..., compiler_options={options}) or with "
    "XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= set before JAX starts")


@functools.cache
def has_library_fusion() -> bool:
    """Whether the installed jaxlib's XLA has the CPU library fusion NO_LIBRARY_FUSION turns off."""
    import jax

    try:
        jax.jit(lambda x: x, compiler_options=NO_LIBRARY_FUSION).lower(np.float32(0)).compile()
    except Exception:  # noqa: BLE001 - an XLA without the option refuses it
        return False
    return jax.default_backend() == "cpu"


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
        return self._outputs(self._call(self.module, *self._arguments(feeds)))

    def run_without_library_fusion(self, feeds):
        """The outputs compiled with XLA CPU's library fusion off (NO_LIBRARY_FUSION); None where the installed
        jaxlib has no such fusion."""
        import jax
        from flax import nnx

        if not has_library_fusion():
            return None
        graphdef, state = nnx.split(self.module)
        call = jax.jit(lambda state, *args: nnx.merge(graphdef, state)(*args), compiler_options=NO_LIBRARY_FUSION)
        return self._outputs(call(state, *self._arguments(feeds)))

    def library_fusion_fault(self, rel: float) -> str:
        import jaxlib

        return LIBRARY_FUSION_FAULT.format(version=jaxlib.__version__, rel=rel, options=NO_LIBRARY_FUSION)

    def _outputs(self, out) -> dict:
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
