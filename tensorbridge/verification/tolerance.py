"""The one tolerance policy: default (rtol, atol) per output dtype.

An output passes when max|z - y| <= atol + rtol * max|y| (z: target, y: reference), shapes
match and NaNs sit in the same places. Quantized outputs (int8, uint8, int16, uint16) may differ
by 1 LSB: frameworks round requantization differently (TFLite's fixed-point multiplier against
ONNX's float scale); `verify` reports their max difference in LSBs and the share of exactly equal
elements. Other integer and boolean outputs must match exactly.
"""

from __future__ import annotations

from tensorbridge.ir import dtypes

#: dtype name -> (rtol, atol)
DEFAULTS = {
    "float64": (1e-9, 1e-12),
    "float32": (1e-4, 1e-6),
    "float16": (1e-2, 1e-4),
    "bfloat16": (2e-2, 1e-3),
}
LOW_PRECISION = (1e-1, 1e-2)  # float8 / float4
EXACT = (0.0, 0.0)
QUANTIZED = {"int8", "uint8", "int16", "uint16"}
ONE_LSB = (0.0, 1.0)


def default_tolerance(dt) -> tuple[float, float]:
    name = dtypes.name(dt)
    if name in DEFAULTS:
        return DEFAULTS[name]
    if dtypes.is_float(dt):
        return LOW_PRECISION
    return ONE_LSB if name in QUANTIZED else EXACT
