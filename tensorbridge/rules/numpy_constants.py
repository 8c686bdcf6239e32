"""Tensor code that runs once, in `__init__`, written with NumPy for the targets whose tensors cannot be written
in place (Keras, Flax NNX).

A source computes constants there (a sinusoidal position table, a relative-position index) by writing into
slices (`pe[:, 0::2] = torch.sin(...)`) and updating views in place; NumPy arrays are written and share memory
through views as PyTorch tensors do, so the statements keep their meaning as written. What leaves `__init__`
(a buffer, a parameter, an attribute) passes through `as_float32`: NumPy computes in float64 where the source's
default float is float32 (integer arrays are kept).
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import CodeTable, definition
from tensorbridge.rules.numpy_code import dtype_keyword, numpy_writers

TABLE = CodeTable("NumPy")
numpy_writers(TABLE, "np", lambda x: ast.Attribute(x, "shape", ast.Load()), "np.linalg.norm", mutable=True)
# a cast to the dtype the array has returns the array itself, as PyTorch's does
TABLE.writes("Cast", "ndarray.astype")(lambda c: P.method(c.inputs[0], "astype", c.attrs["to"], copy=False))
TABLE.writes("CastLike", "(ndarray.astype to an array's dtype)")(
    lambda c: P.method(c.inputs[0], "astype", ast.Attribute(c.inputs[1], "dtype", ast.Load()), copy=False))
TABLE.writes("Constant", "np.asarray")(lambda c: P.call("np.asarray", c.attrs["value"], **dtype_keyword(c)))

AS_FLOAT32 = "as_float32"
HELPERS = {AS_FLOAT32: definition('''def as_float32(value):
    """A constant computed with NumPy in __init__, in the source's dtypes: float64 arrays as float32."""
    value = np.asarray(value)
    return value.astype("float32") if value.dtype == "float64" else value''')}


def as_float32(value: ast.expr) -> ast.expr:
    """`as_float32(value)`, or the value itself when it is made with an explicit dtype other than float64."""
    dtype = next((k.value for k in getattr(value, "keywords", []) if k.arg == "dtype"), None)
    if isinstance(dtype, ast.Constant) and dtype.value not in ("float64", "double"):
        return value
    return P.call(AS_FLOAT32, value)
