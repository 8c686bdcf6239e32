"""The Darknet registry: cfg sections and activations <-> IR ops.

`REGISTRY` is read by the Darknet frontend (import rules of kinds "section" and "activation"), the Darknet
writer (export rules), the support matrix and the per-op corpus. `base.py` holds the registry object and the
options each section takes; `layers.py` the sections; `activations.py` the activations.
"""

from tensorbridge.rules.darknet import activations, layers  # noqa: F401 (registers)
from tensorbridge.rules.darknet.base import R as REGISTRY

__all__ = ["REGISTRY"]
