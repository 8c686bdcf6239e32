"""PyTorch <-> IR: PT2E quantize/dequantize and their code.

Each IR op's import converters (ATen -> IR) and export writer (IR -> torch code) sit together.
"""
from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.emitter import CodeEmitter
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.value import Value
from tensorbridge.rules.torch.base import (
    TORCH_DTYPES,
    R,
    const_data,
    dtype_name,
    pt2e,
)
from tensorbridge.rules.torch.elementwise import read_to


def _qparam(imp, arg, dtype, what: str) -> Value:
    """A scale or zero point (python number or constant tensor) as an IR constant of `dtype`."""
    if hasattr(arg, "name"):
        data = const_data(imp, arg)
        if data is None:
            raise ModelError(f"{imp.node.name}: the {what} is computed at run time (dynamic quantization); "
                             "only static PT2E quantization is supported")
        return imp.const(np.asarray(data).astype(dtype))
    return imp.const(np.asarray(arg).astype(dtype))


def _storage(dtype) -> np.dtype:
    return np.dtype(dtype_name(dtype))


@pt2e("quantize_per_tensor", "quantize_per_channel", produces="QuantizeLinear")
def read_quantize(imp, node, input, scale, zero_point, *rest, **kw):
    """QuantizeLinear with the program's scale and zero point, rounding as PT2E does (x * (1 / scale)); a quant
    range narrower than the storage type is a Clip."""
    axis, (quant_min, quant_max, dtype) = (rest[0], rest[1:4]) if "per_channel" in str(node.target) else (1, rest[:3])
    storage = _storage(dtype)
    y = imp.emit("QuantizeLinear", [imp.value(input), _qparam(imp, scale, np.float32, "scale"),
                                    _qparam(imp, zero_point, storage, "zero point")],
                 {"axis": int(axis), "rounding": "reciprocal"})
    info = np.iinfo(storage)
    if (quant_min, quant_max) == (info.min, info.max):
        return y
    return imp.emit("Clip", [y, imp.const(quant_min, dtype=storage), imp.const(quant_max, dtype=storage)],
                    suffix="range")


def _quant_blocker(node) -> str | None:
    """Why torch's per-tensor quantizer (or the PT2E formula) cannot write this Q/DQ: other forms decompose."""
    if any(v is not None and CodeEmitter.scalar(v) is None for v in node.inputs[1:3]):
        return "per-channel or computed quantization parameters on an activation"
    if node.op == "DequantizeLinear":
        x, y = node.inputs[0].dtype, node.outputs[0].dtype
        return None if x.kind in "iu" and y == np.float32 else f"DequantizeLinear from {x} to {y}"
    storage = dtypes.name(node.outputs[0].dtype)
    return None if storage in TORCH_DTYPES and np.dtype(storage).kind in "iu" else f"QuantizeLinear to {storage}"


def _per_tensor(em, node) -> tuple[float, int]:
    zp = em.scalar(node.input(2)) if node.input(2) is not None else 0
    return float(em.scalar(node.input(1))), int(zp)


@R.exports("QuantizeLinear", check=_quant_blocker)
def write_quantize_linear(em, node):
    """round(x / scale) + zero_point, saturated (`rounding="reciprocal"`, PT2E's formula: x * (1 / scale)), in
    plain tensor ops: torch's quantized tensors are deprecated and torch.export has no kernel reading them."""
    storage = dtypes.name(node.outputs[0].dtype)
    scale, zp = _per_tensor(em, node)
    x = em.tensor(node.inputs[0])
    scaled = P.binop(x, "*", P.lit(1.0 / scale)) if node.attrs.get("rounding") == "reciprocal" else \
        P.binop(x, "/", P.lit(scale))
    info = np.iinfo(storage)
    q = _shifted(P.call("torch.round", scaled), zp)
    em.out(node, P.method(P.call("torch.clamp", q, int(info.min), int(info.max)), "to", P.name(TORCH_DTYPES[storage])))


def _shifted(expr, offset: int):
    """expr + offset, written without `+ -n` or `- -n`."""
    if not offset:
        return expr
    return P.binop(expr, "+", offset) if offset > 0 else P.binop(expr, "-", -offset)


@pt2e("dequantize_per_tensor", "dequantize_per_channel", produces="DequantizeLinear")
def read_dequantize(imp, node, input, scale, zero_point, *rest, out_dtype=None, **kw):
    """(x - zero_point) * scale; PyTorch ignores quant_min/quant_max here, and so does the IR."""
    axis, dtype = (rest[0], rest[3]) if "per_channel" in str(node.target) else (1, rest[2])
    storage = _storage(dtype)
    zp = _qparam(imp, zero_point, storage, "zero point") if zero_point is not None else None
    inputs = [imp.value(input), _qparam(imp, scale, np.float32, "scale")] + ([zp] if zp is not None else [])
    y = imp.emit("DequantizeLinear", inputs, {"axis": int(axis)}, suffix="" if out_dtype is None else "dq")
    if out_dtype is None:
        return y
    return read_to(imp, node, y)


@R.exports("DequantizeLinear", check=_quant_blocker)
def write_dequantize_linear(em, node):
    scale, zp = _per_tensor(em, node)
    em.out(node, P.binop(_shifted(P.method(em.tensor(node.inputs[0]), "float"), -zp), "*", P.lit(scale)))
