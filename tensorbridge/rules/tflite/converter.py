"""What TensorFlow's TFLite converter cannot turn into LiteRT builtins, for the float path (IR -> Keras code ->
converter): such nodes are decomposed before the Keras code is written, or refused with the reason.

Without this, the converter fails late with an MLIR error (or, for some ops, writes a file that computes
something else), so the float path asks `float_blocker(node)` first: LiteRT's reason, else Keras's own.
"""

from __future__ import annotations

from tensorbridge.rules.keras import REGISTRY as KERAS
from tensorbridge.rules.tflite.base import R as TFLITE

#: IR ops whose Keras call the converter lowers to no builtin (or to a wrong one), with the reason
LACKS = {
    "Acos": "LiteRT has no ACOS kernel",
    "Asin": "LiteRT has no ASIN kernel",
    "Atan": "LiteRT has no ATAN kernel (only ATAN2)",
    "Acosh": "LiteRT has no ACOSH kernel",
    "Asinh": "LiteRT has no ASINH kernel",
    "Atanh": "LiteRT has no ATANH kernel",
    "Cosh": "LiteRT has no COSH kernel",
    "Sinh": "LiteRT has no SINH kernel",
    "Tan": "LiteRT has no TAN kernel",
    "IsInf": "the converter's IS_INF lowering computes something else",
    "ArgMax": "Keras's argmax guards -0.0 with bitwise ops LiteRT lacks",
    "ArgMin": "Keras's argmin guards -0.0 with bitwise ops LiteRT lacks",
    "Hardmax": "Keras's argmax guards -0.0 with bitwise ops LiteRT lacks",
    "CumProd": "LiteRT has no CUMPROD kernel",
    "BitwiseAnd": "LiteRT has no bitwise AND kernel",
    "BitwiseOr": "LiteRT has no bitwise OR kernel",
    "BitwiseNot": "LiteRT has no bitwise NOT kernel",
    "Einsum": "LiteRT has no EINSUM kernel",
    "Det": "LiteRT has no determinant kernel",
    "Erf": "LiteRT has no ERF kernel (only GELU, which uses erf inside)",
    "NonZero": "LiteRT has no UNPACK of a computed length (Keras's nonzero splits WHERE's indices that way)",
    "Compress": "LiteRT has no UNPACK of a computed length (Keras's nonzero splits WHERE's indices that way)",
    "Unique": "LiteRT's UNIQUE gives no counts (Keras's unique asks TensorFlow's UniqueWithCounts)",
}

#: of those, what no arrangement of LiteRT's builtins computes exactly: the registry says it cannot express them
for _op in ("BitwiseAnd", "BitwiseOr", "BitwiseNot", "Det", "Erf"):
    TFLITE.refuses(_op, LACKS[_op])
TFLITE.refuses("MelWeightMatrix", KERAS.refused["MelWeightMatrix"])

#: dtypes LiteRT's float builtins do not take
NO_KERNELS_FOR = {"float64": "LiteRT has no float64 kernels", "bfloat16": "LiteRT has no bfloat16 kernels",
                  "float16": "LiteRT computes in float32 (float16 only stores weights)",
                  "uint64": "LiteRT has no uint64 kernels",
                  "uint32": "LiteRT has few uint32 kernels", "uint16": "LiteRT has no uint16 kernels"}


#: IR op -> the 8/16-bit integer types its LiteRT kernel takes only in quantized models, as measured (the
#: converter fails on them, or, for a uint8 EQUAL, the interpreter aborts); comparisons, Max, Min and Clip
#: decompose to int32 ones before this refuses them
_NARROW = frozenset({"int8", "int16", "uint8"})
_BYTES = frozenset({"int8", "uint8"})
NO_NARROW_INTEGER_KERNELS = {
    **dict.fromkeys(("Max", "Min", "Clip", "Div", "Abs", "Neg", "Pad", "Equal", "Less", "LessOrEqual", "Greater",
                     "GreaterOrEqual"), _NARROW),
    "Sub": _NARROW, "Add": _BYTES, "Mul": _BYTES, "Mod": frozenset({"uint8"}), "MaxPool": frozenset({"uint8"})}


def float_blocker(node) -> str | None:
    """Why the float TFLite path cannot write `node` as it is (None: it can)."""
    from tensorbridge.ir import dtypes

    if node.op in LACKS:
        return LACKS[node.op]
    if node.op == "Pow" and all(v.dtype is not None and dtypes.name(v.dtype) == "int64" for v in node.inputs):
        return "LiteRT's POW takes no int64 exponent"
    if node.op in ("Div", "Abs") and node.inputs[0].dtype is not None and dtypes.name(node.inputs[0].dtype) == "int64":
        return f"LiteRT has no int64 {'division' if node.op == 'Div' else 'ABS'} kernel (its FLOOR_DIV and ABS " \
               "take at most int32)"
    if node.op == "BitShift" and node.attrs.get("direction") == "LEFT":
        return "LiteRT has no left-shift kernel"
    if node.op == "ConvTranspose" and any(d != 1 for d in node.attrs.get("dilations") or []):
        return "LiteRT's TRANSPOSE_CONV has no dilation"
    if node.op in ("MaxPool", "AveragePool", "LpPool") and len(node.attrs.get("kernel_shape") or ()) == 3:
        return "LiteRT has no 3-D pooling kernels"
    if node.op == "BitCast" and node.inputs[0].shape is not None and len(node.inputs[0].shape) == 0:
        return "a BitCast of a scalar (TensorFlow's converter fails on it)"
    if node.op == "Scan" and any(v.shape is not None and len(v.shape) == 0 for v in node.attrs["body"].outputs):
        return "a Scan step of rank 0 (the converter's tensor lists need a shaped element)"
    if any(v is not None and v.const is None and v.shape is not None and 0 in v.shape
           for v in [*node.inputs, *node.outputs]):  # an empty constant (no axes) is a literal of the Keras code
        return "an empty tensor (a dim of size 0: LiteRT's interpreter allocates none)"
    if any(v is not None and v.shape is not None and len(v.shape) > 6 for v in [*node.inputs, *node.outputs]):
        return "a tensor of more than 6 dims (LiteRT's kernels, its TRANSPOSE among them, take at most 6)"
    for v in [*node.inputs, *node.outputs]:
        if v is not None and v.dtype is not None and dtypes.name(v.dtype) in NO_KERNELS_FOR:
            return NO_KERNELS_FOR[dtypes.name(v.dtype)]
    narrow = node.op in NO_NARROW_INTEGER_KERNELS and node.inputs[0].dtype is not None and \
        dtypes.name(node.inputs[0].dtype) in NO_NARROW_INTEGER_KERNELS[node.op] and \
        (node.op != "Clip" or any(node.inputs[1:]))
    if narrow:
        return f"LiteRT's {node.op} takes {dtypes.name(node.inputs[0].dtype)} only in quantized models"
    return KERAS.blocker(node)
