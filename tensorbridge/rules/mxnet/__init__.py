"""The MXNet registry: symbol ops <-> IR ops.

`REGISTRY` is read by the MXNet frontend (import rules of kind "op", keyed by the symbol's op name), the MXNet
writer (export rules), the support matrix and the per-op corpus. `base.py` holds the registry and attribute
parsing; `nn.py` the ops with weights or windows; `tensor.py` activations, arithmetic and the ops that only
move data; `rnn.py` the fused recurrent op; `export.py` the way back.
"""

from tensorbridge.rules.mxnet import export, nn, rnn, tensor  # noqa: F401 (registers)
from tensorbridge.rules.mxnet.base import R as REGISTRY

__all__ = ["REGISTRY"]
