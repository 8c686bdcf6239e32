"""The TFLite registry: builtin operators <-> IR ops, and the int8 kernels of quantized graphs.

`REGISTRY` is read by the TFLite frontend (import rules), the integer TFLite writer (export
rules: `kernel.Rule`s), the support matrix and the per-op corpus. Records live in one module per
op family; `base.py` holds the registry object and its tables, `kernel.py` what the integer
kernels share.
"""

from tensorbridge.rules.tflite import (  # noqa: F401 (registers)
    control,
    converter,
    custom,
    custom_face_mesh,
    elementwise,
    nn,
    quant,
    recurrent,
    reduce,
    shape,
    state,
)
from tensorbridge.rules.tflite.base import R as REGISTRY
from tensorbridge.rules.tflite.base import signature_name

__all__ = ["REGISTRY", "signature_name"]
