"""TFLite <-> IR: QUANTIZE and DEQUANTIZE.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.tflite.base import builtin


@builtin("DEQUANTIZE", produces="DequantizeLinear")
def read_dequantize(imp, ins, opts):
    """A quantized tensor's float value; of float16 storage (weights, also as DENSIFY expands them), float32."""
    x = ins[0]
    if x.const is not None and x.const.dtype == np.float16:
        v = imp.graph.add_constant(f"{x.name}.float32", np.asarray(x.const, np.float32))
        return v
    if x.dtype == np.float16:
        return imp.emit("Cast", [x], {"to": "float32"})
    q = x.quant
    if q is None:
        raise ModelError("DEQUANTIZE of a tensor without quantization parameters")
    scale = imp.const(q.scale if q.axis is not None else q.scale.reshape(()))
    zp = imp.const(q.zero_point if q.axis is not None else q.zero_point.reshape(()), q.storage)
    return imp.emit("DequantizeLinear", [x, scale, zp], {"axis": q.axis if q.axis is not None else 1})


@builtin("QUANTIZE", produces="QuantizeLinear")
def read_quantize(imp, ins, opts):
    x = ins[0]
    if x.dtype is not None and x.dtype.kind in "iu":  # a requantization (uint8 <-> int8 I/O): DQ, then Q
        x = dequantized(imp, x)
    out_t = imp.subgraph.Tensors(int(imp.op.OutputsAsNumpy()[0]))
    q = imp.tensor_quant(out_t)
    if q is None:
        raise ModelError("QUANTIZE output has no quantization parameters")
    scale = imp.const(q.scale if q.axis is not None else q.scale.reshape(()))
    zp = imp.const(q.zero_point if q.axis is not None else q.zero_point.reshape(()), q.storage)
    return imp.emit("QuantizeLinear", [x, scale, zp], {"axis": q.axis if q.axis is not None else 1})


# -- integer kernels read in the IR's QDQ form: DequantizeLinear -> float op -> QuantizeLinear ----------------
def _is_quantized(q, dt) -> bool:
    return q is not None and dt is not None and dt.kind in "iu"


def _qparams(imp, q):
    per_axis = q.axis is not None
    scale = imp.const(q.scale if per_axis else q.scale.reshape(()), np.float32)
    zp = imp.const(q.zero_point if per_axis else q.zero_point.reshape(()), q.storage)
    return scale, zp, {"axis": q.axis if per_axis else 1}


def dequantized(imp, v):
    """The float value of a quantized operand (one DequantizeLinear per tensor); other operands as they are."""
    if v is None or not _is_quantized(v.quant, v.dtype):
        return v
    key = ("dq", id(v))
    if key not in imp.values:
        scale, zp, attrs = _qparams(imp, v.quant)
        imp.values[key] = imp.emit("DequantizeLinear", [v, scale, zp], attrs, suffix=f"dq_{len(imp.values)}")
    return imp.values[key]


def requantized(imp, index: int, v):
    """A float result written to quantized tensor `index`: quantized with the tensor's parameters."""
    q, dt = imp.quant_of(index)
    if not _is_quantized(q, dt) or (v.dtype is not None and v.dtype.kind in "iu"):
        return v
    scale, zp, attrs = _qparams(imp, q)
    y = imp.emit("QuantizeLinear", [v, scale, zp], attrs, suffix="q")
    y.quant = q
    return y
