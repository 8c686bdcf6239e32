"""The PyTorch registry: ATen (and PT2E, and symbolic-size) ops <-> IR ops <-> generated torch code.

`REGISTRY` is read by the PyTorch frontend (import rules), the PyTorch code generator (export
rules), the support matrix and the per-op corpus. The records live in one module per op
family, beside each other per IR op; `base.py` holds the registry object and its row helpers.
"""

from tensorbridge.rules.torch import (  # noqa: F401 (registers)
    code,
    code_tensor_functions,
    code_write,
    complex,
    control,
    elementwise,
    experts,
    nn,
    quant,
    reduce,
    shape,
    signal,
    transformer,
    vision,
)
from tensorbridge.rules.torch.base import R as REGISTRY

__all__ = ["REGISTRY"]
