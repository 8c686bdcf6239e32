"""The ONNX registry object, dtype codes and the opset-history table.

The IR uses current ONNX op names and semantics, so every ONNX op the catalogue has maps to
itself both ways (the identity rows, registered in `__init__`). A history row exists only where
an older opset spelled the op differently (attributes that later became inputs, renamed or
retired ops, dropped legacy attributes). Rows are data; the few cases that need code name a
function in `history.py`. No opset numbers travel past this border into the IR.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from tensorbridge.ir import dtypes
from tensorbridge.rules.core import Registry

R = Registry("onnx")

#: ONNX TensorProto element type -> IR dtype name.
ONNX_TO_IR_DTYPE = {
    onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.FLOAT16: "float16", onnx.TensorProto.BFLOAT16: "bfloat16",
    onnx.TensorProto.FLOAT8E4M3FN: "float8e4m3fn", onnx.TensorProto.FLOAT8E4M3FNUZ: "float8e4m3fnuz",
    onnx.TensorProto.FLOAT8E5M2: "float8e5m2", onnx.TensorProto.FLOAT8E5M2FNUZ: "float8e5m2fnuz",
    onnx.TensorProto.FLOAT8E8M0: "float8e8m0", onnx.TensorProto.FLOAT4E2M1: "float4e2m1",
    onnx.TensorProto.INT8: "int8", onnx.TensorProto.INT16: "int16", onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64", onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.UINT16: "uint16",
    onnx.TensorProto.UINT32: "uint32", onnx.TensorProto.UINT64: "uint64", onnx.TensorProto.INT4: "int4",
    onnx.TensorProto.UINT4: "uint4", onnx.TensorProto.INT2: "int2", onnx.TensorProto.UINT2: "uint2",
    onnx.TensorProto.BOOL: "bool", onnx.TensorProto.STRING: "string",
    onnx.TensorProto.COMPLEX64: "complex64", onnx.TensorProto.COMPLEX128: "complex128",
}
IR_TO_ONNX_DTYPE = {v: k for k, v in ONNX_TO_IR_DTYPE.items()}

#: Opset the ONNX backend writes unless the graph needs a newer one.
DEFAULT_EXPORT_OPSET = 21
#: Oldest opset the frontend accepts.
MIN_IMPORT_OPSET = 1


def onnx_dtype(dt) -> int:
    return IR_TO_ONNX_DTYPE[dtypes.name(dt)]


def ir_dtype(code: int) -> str | None:
    return ONNX_TO_IR_DTYPE.get(code)


@dataclass(frozen=True)
class Rule:
    """How ONNX op `onnx_op` in opsets [since, until] maps onto the IR.

    attrs_to_inputs: (attribute, input position, dtype) moves of legacy attributes to inputs.
    drop_attrs: legacy attributes with no meaning today. set_attrs: constant IR attributes.
    special: name of a function in rules/onnx/history.py for what data cannot say.
    """

    onnx_op: str
    ir_op: str | None = None
    since: int = 1
    until: int = 10_000
    attrs_to_inputs: tuple[tuple[str, int, str], ...] = ()
    drop_attrs: tuple[str, ...] = ()
    set_attrs: dict = field(default_factory=dict)
    special: str | None = None


_REDUCE = ("ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")

RULES: list[Rule] = [
    *[Rule(op, until=17, attrs_to_inputs=(("axes", 1, "int64"),)) for op in _REDUCE],
    Rule("ReduceSum", until=12, attrs_to_inputs=(("axes", 1, "int64"),)),
    Rule("Squeeze", until=12, attrs_to_inputs=(("axes", 1, "int64"),)),
    Rule("Unsqueeze", until=12, attrs_to_inputs=(("axes", 1, "int64"),)),
    Rule("Split", until=12, attrs_to_inputs=(("split", 1, "int64"),), special="split_equal_parts"),
    Rule("Split", since=13, until=17, special="split_equal_parts"),
    Rule("Slice", until=9, attrs_to_inputs=(("starts", 1, "int64"), ("ends", 2, "int64"), ("axes", 3, "int64"))),
    Rule("Pad", until=10, attrs_to_inputs=(("pads", 1, "int64"), ("value", 2, "like:0"))),
    Rule("Clip", until=10, attrs_to_inputs=(("min", 1, "like:0"), ("max", 2, "like:0"))),
    Rule("TopK", until=9, attrs_to_inputs=(("k", 1, "int64"),)),
    Rule("Reshape", until=4, attrs_to_inputs=(("shape", 1, "int64"),)),
    Rule("Upsample", "Resize", special="upsample"),
    Rule("Resize", until=10, special="resize_v10"),
    Rule("Scatter", "ScatterElements"),
    Rule("BatchNormalization", until=13, drop_attrs=("spatial", "is_test", "consumed_inputs"),
         special="batchnorm_legacy_outputs"),
    Rule("Dropout", until=11, drop_attrs=("ratio", "is_test")),
    Rule("Gemm", until=6, drop_attrs=("broadcast",)),
    *[Rule(op, until=6, special="legacy_broadcast") for op in ("Add", "Sub", "Mul", "Div", "Pow")],
    Rule("Concat", until=3, set_attrs={"axis": 1}),
    Rule("Cast", until=5, special="cast_legacy"),
    *[Rule(op, until=12, special="softmax_legacy") for op in ("Softmax", "LogSoftmax", "Hardmax")],
    Rule("GroupNormalization", until=20, special="group_norm_per_group"),
    Rule("Constant", special="constant"),
]


#: onnxruntime's channels-last integer ops (domain com.microsoft, as `--layout nhwc` writes them) -> IR op;
#: read with layout NHWC when their `channels_last` attribute says so (NhwcMaxPool always)
CONTRIB_DOMAIN = "com.microsoft"
CHANNELS_LAST_CONTRIB = {"QLinearConv": "QLinearConv", "NhwcMaxPool": "MaxPool"}


def contrib_as_ir(op_type: str, attrs: dict) -> str:
    """The IR op for a channels-last com.microsoft op; `attrs` loses `channels_last` and gains `layout`."""
    if attrs.pop("channels_last", 1 if op_type == "NhwcMaxPool" else 0):
        attrs["layout"] = "NHWC"
    return CHANNELS_LAST_CONTRIB[op_type]


def find_rule(op_type: str, opset: int) -> Rule | None:
    for r in RULES:
        if r.onnx_op == op_type and r.since <= opset <= r.until:
            return r
    return None


def check_rules() -> None:
    """Overlapping version ranges for one op are a table bug."""
    seen: dict[str, list[Rule]] = {}
    for r in RULES:
        for other in seen.get(r.onnx_op, []):
            if r.since <= other.until and other.since <= r.until:
                raise RuntimeError(f"overlapping ONNX rules for {r.onnx_op}")
        seen.setdefault(r.onnx_op, []).append(r)


check_rules()


#: IR attributes ONNX's ops lack that the ONNX writer handles: the layout pass rewrites `layout`, lowerings
#: (ops/schema.set_lowering) take `int_arithmetic` and `epsilon_on`, `rounding` is written as ONNX's nearest form
WRITER_HANDLES = frozenset({"layout", "int_arithmetic", "epsilon_on", "rounding"})


#: ONNX ops onnxruntime runs only time-major: with layout=1 (batch-major) its CPU kernels refuse the model
TIME_MAJOR_ONLY = frozenset({"LSTM", "GRU", "RNN"})


def beyond_onnx(node) -> str | None:
    """Why ONNX's op cannot state `node` as onnxruntime runs it: an IR attribute the op does not have is set
    (an LSTM's cell_clip), or a recurrent op is batch-major; the node then decomposes into ops ONNX has."""
    import onnx

    known = onnx.defs.get_schema(node.op).attributes
    extra = sorted(k for k, v in node.attrs.items() if v is not None and k not in known and k not in WRITER_HANDLES)
    if extra:
        return f"{node.op} with {', '.join(extra)} (ONNX's {node.op} has no such attribute)"
    if node.op in TIME_MAJOR_ONLY and node.attrs.get("layout"):
        return f"a batch-major {node.op} (onnxruntime runs layout=0 only)"
    if node.op == "Clip" and any(v is not None and v.shape != () for v in node.inputs[1:]):
        return "Clip with bounds that are not scalars (ONNX's Clip takes a scalar min and max)"
    if node.op == "Attention" and _mask_broadcasts(node):
        return "an Attention mask the same for every query or every key (onnxruntime takes one entry per query " \
               "and key)"
    return None


def _mask_broadcasts(node) -> bool:
    """Whether an Attention's mask has one row for several queries ([B, 1, 1, S], a padding mask) or one column
    for several keys ([B, 1, S, 1], ESM's and RoFormer's query padding)."""
    q, k, mask = node.inputs[0], node.inputs[1], node.input(3)
    if mask is None or mask.shape is None or len(mask.shape) < 2 or q.shape is None or k.shape is None:
        return False
    sequence = 2 if len(q.shape) == 4 else 1
    return mask.shape[-2] == 1 and q.shape[sequence] != 1 or mask.shape[-1] == 1 and k.shape[sequence] != 1


def attr_array(values, dtype_spec: str, like: np.dtype | None) -> np.ndarray:
    """A legacy attribute value as a constant input array."""
    if dtype_spec.startswith("like:"):
        return np.asarray(values, dtype=like if like is not None else np.float32)
    return np.asarray(values, dtype=dtypes.dtype(dtype_spec))
