"""The Paddle registry: PIR ops (and the legacy ProgramDesc ops, by their signatures in base.LEGACY) <-> IR ops.

`REGISTRY` is read by the Paddle frontend (import rules of kind "op", keyed by PIR's op name), the Paddle writer
(export rules), the support matrix and the per-op corpus. `base.py` holds the registry, attribute tracking and
the legacy signatures; `nn.py` the ops with weights or windows; `tensor.py` activations, arithmetic, constants
and data movement; `rnn.py` the fused recurrent op; `export.py` the way back, as legacy ops.
"""

from tensorbridge.rules.paddle import export, nn, rnn, tensor  # noqa: F401 (registers)
from tensorbridge.rules.paddle.base import R as REGISTRY

__all__ = ["REGISTRY"]
