"""The TFLite registry object, its tables, and what its import converters share.

Builtin operators that are one IR op are rows (`builtin_row`); the rest are converters taking
(importer, input values, builtin options) and returning the output value(s). TFLite tensors are
channels-last: layout-carrying ops keep `layout="NHWC"`; filters are permuted once at import
(OHWI -> OIHW, depthwise [1, H, W, C*M] -> [C*M, 1, H, W]). Export records are the int8 kernels
(`kernel.Rule`) that the integer writer uses for quantized graphs; float graphs are written
through the Keras registry and TensorFlow's own converter.
"""

from __future__ import annotations

import functools

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.core import ImportRule, Registry

R = Registry("tflite")
R.refuses_strings("LiteRT's built-in operators have no string operations")
builtin = functools.partial(R.imports, kind="builtin")

#: TensorType enum value -> IR dtype name
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool", 7: "int16",
          9: "int8", 10: "float64", 12: "uint64", 15: "uint32", 16: "uint16", 17: "int4"}

#: ActivationFunctionType -> (IR op, attrs) applied after the op; None = no activation
FUSED = {0: None, 1: ("Relu", {}), 2: ("Clip", {"min": -1.0, "max": 1.0}), 3: ("Clip", {"min": 0.0, "max": 6.0}),
         4: ("Tanh", {})}

#: control-flow operators -> the option fields naming the subgraphs they run
CONTROL_FLOW = {"IF": ("ThenSubgraphIndex", "ElseSubgraphIndex"), "WHILE": ("CondSubgraphIndex", "BodySubgraphIndex"),
                "CALL_ONCE": ("InitSubgraphIndex",)}

#: stateful kernels -> their variable-tensor operands' roles (the names of the state they carry between calls)
STATE_OPERANDS = {"UNIDIRECTIONAL_SEQUENCE_LSTM": {18: "hidden", 19: "cell"},
                  "UNIDIRECTIONAL_SEQUENCE_RNN": {4: "hidden"}}

#: operators over resource variables (rules/tflite/state.py): their converters take tensor indices
RESOURCE_OPS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"})


def signature_name(name: str) -> str:
    """'serving_default_input_ids:0' -> 'input_ids': TF's converter names inputs after the Keras inputs."""
    if name.startswith("serving_default_"):
        name = name[len("serving_default_"):]
    return name.rsplit(":", 1)[0] if name.endswith(":0") else name


def builtin_row(names: str, ir_op: str) -> None:
    """Builtin operator(s) `names` are the IR op `ir_op` over the same inputs."""
    R.add_import(ImportRule("builtin", tuple(names.split()), (ir_op,), convert=_read_row(ir_op), ir_op=ir_op))


def _read_row(ir_op):
    def convert(imp, ins, opts):
        return imp.emit(ir_op, ins)
    return convert


def output_dtype(imp, i: int = 0) -> np.dtype:
    """The dtype of the operator's output `i` as the flatbuffer types it."""
    return imp.tensor_dtype(imp.subgraph.Tensors(int(imp.op.OutputsAsNumpy()[i])))


def litert_arithmetic(imp) -> dict:
    """The attribute that gives an integer kernel (quantized operands, or int8 weights of a dynamic-range one)
    LiteRT's own arithmetic (ops/litert.py); none for a float kernel."""
    return {"int_arithmetic": "litert"} if imp.integer_kernel else {}


def fused(imp, y, code: int):
    """The op's fused activation as its own IR op."""
    spec = FUSED.get(code, "unknown")
    if spec == "unknown":
        raise ModelError(f"{imp.op_name}: fused activation {code} is not supported")
    if spec is None:
        return y
    op, attrs = spec
    if op == "Clip":
        return imp.emit("Clip", [y, imp.const(attrs["min"]), imp.const(attrs["max"])], suffix="act")
    return imp.emit(op, [y], suffix="act")


NHWC = "NHWC"


def padding_attrs(opts, attrs):
    if opts.Padding() == 0:
        attrs["auto_pad"] = "SAME_UPPER"
    return attrs


def filter_weight(imp, v, perm, name_suffix):
    """A filter in IR layout: permute the constant once (dequantizing float16 storage)."""
    if v.const is None:
        return imp.emit("Transpose", [v], {"perm": list(perm)}, suffix=name_suffix)
    arr = np.asarray(v.const)
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    out = imp.graph.add_constant(f"{v.name}.{name_suffix}", np.ascontiguousarray(np.transpose(arr, perm)))
    if v.quant is not None and v.quant.axis is not None:
        q = v.quant
        out.quant = type(q)(q.scale, q.zero_point, q.storage, list(perm).index(q.axis))
    else:
        out.quant = v.quant
    return out
