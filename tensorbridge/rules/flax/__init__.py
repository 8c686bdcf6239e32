"""The Flax registry: JAX primitives and NNX layers <-> IR ops <-> Flax NNX layers and `jax.numpy` code.

`REGISTRY` is read by the JAX frontend (import rules keyed by jaxpr primitive, namespace `jax`, and by
marked NNX layer or jax.nn call, namespace `nnx`), the Flax code generator, the support matrix and the
per-op corpus. Records live in one module per op family; `base.py` holds the registry object and its
row helpers.
"""

from tensorbridge.rules.flax import (  # noqa: F401 (registers)
    attention,
    code,
    code_read,
    control,
    elementwise,
    jaxpr,
    nn,
    shape,
    stablehlo,
)
from tensorbridge.rules.flax.base import R as REGISTRY

__all__ = ["REGISTRY"]
