"""The TensorFlow registry: GraphDef ops (of a frozen SavedModel) -> IR ops. Import only.

`REGISTRY` is read by the TensorFlow frontend, the support matrix and the per-op corpus.
"""

from tensorbridge.rules.tf import control, elementwise, nn, reduce, shape  # noqa: F401 (registers)
from tensorbridge.rules.tf.base import R as REGISTRY

__all__ = ["REGISTRY"]
