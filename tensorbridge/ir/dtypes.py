"""Element types of the IR: NumPy dtypes plus the `ml_dtypes` low-precision family.

The IR stores a dtype as a `numpy.dtype`. This module owns the one table that names them
(`"float32"`, `"bfloat16"`, `"float8e4m3fn"`, `"int4"`, `"string"`, ...) so serialisation, the
printer and the framework rules all spell a dtype the same way. Framework-specific codes
(ONNX `TensorProto` enums, ...) live in `rules/`, not here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tensorbridge.errors import ModelError

# IR name -> numpy dtype. Names follow ONNX spelling, lower case.
_BY_NAME: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "float8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "float8e8m0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "float4e2m1": np.dtype(ml_dtypes.float4_e2m1fn),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "int4": np.dtype(ml_dtypes.int4),
    "uint4": np.dtype(ml_dtypes.uint4),
    "int2": np.dtype(ml_dtypes.int2),
    "uint2": np.dtype(ml_dtypes.uint2),
    "bool": np.dtype(np.bool_),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
    "string": np.dtype(object),
}
_NAME_OF: dict[np.dtype, str] = {dt: name for name, dt in _BY_NAME.items()}

#: every dtype name the IR knows
NAMES = frozenset(_BY_NAME)
FLOAT_NAMES = frozenset(
    {"float32", "float64", "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
     "float8e5m2fnuz", "float8e8m0", "float4e2m1"}
)
#: dtypes whose NumPy arithmetic is unreliable, computed in float32 by the reference kernels.
LOW_PRECISION_NAMES = FLOAT_NAMES - {"float32", "float64", "float16"}
SUB_BYTE_NAMES = frozenset({"int4", "uint4", "int2", "uint2", "float4e2m1"})


def dtype(spec) -> np.dtype:
    """Normalise a dtype name, numpy dtype or scalar type to a `numpy.dtype`."""
    if isinstance(spec, str):
        try:
            return _BY_NAME[spec]
        except KeyError:
            raise ModelError(f"unknown dtype {spec!r}; known: {', '.join(_BY_NAME)}") from None
    dt = np.dtype(spec)
    if dt.kind in "US":
        return _BY_NAME["string"]
    if dt not in _NAME_OF:
        raise ModelError(f"dtype {dt} is not supported by the IR")
    return dt


def name(dt) -> str:
    """The IR name of a dtype (`np.float32` -> `"float32"`)."""
    return _NAME_OF[dtype(dt)]



def is_float(dt) -> bool:
    return name(dt) in FLOAT_NAMES
