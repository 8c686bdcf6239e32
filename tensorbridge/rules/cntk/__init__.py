"""The CNTK registry: CNTK 2.x primitive ops -> IR ops (CNTK is read, not written).

`REGISTRY` is read by the CNTK frontend (import rules of kind "op", keyed by CNTK's name of the primitive op) and
the support matrix. `base.py` holds the registry, the op codes and attribute tracking; `tensor.py` element-wise
ops, reductions and data movement; `nn.py` Times, convolution, pooling and batch normalisation; `sequence.py`
delays, recurrences and the selections of steps.
"""

from tensorbridge.rules.cntk import nn, sequence, tensor  # noqa: F401 (registers)
from tensorbridge.rules.cntk.base import R as REGISTRY

__all__ = ["REGISTRY"]
