"""The Flax registry: IR ops <-> Flax NNX layers and `jax.numpy` code.

`REGISTRY` is read by the Flax code generator, the support matrix and the per-op corpus. Records live
in one module per op family; `base.py` holds the registry object and its row helpers.
"""

from tensorbridge.rules.flax import elementwise, nn, shape  # noqa: F401 (registers)
from tensorbridge.rules.flax.base import R as REGISTRY

__all__ = ["REGISTRY"]
