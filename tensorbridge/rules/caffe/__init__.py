"""The Caffe registry: layer types <-> IR ops.

`REGISTRY` is read by the Caffe frontend (import rules of kind "layer", keyed by the layer's type string), the
Caffe writer (export rules), the support matrix and the per-op corpus. `base.py` holds the registry and what
the layers share; `layers.py` the layers that carry weights or windows; `elementwise.py` activations,
arithmetic and the layers that only move data; `detection.py` the SSD layers; `export.py` the way back.
"""

from tensorbridge.rules.caffe import detection, elementwise, export, layers  # noqa: F401 (registers)
from tensorbridge.rules.caffe.base import R as REGISTRY

__all__ = ["REGISTRY"]
