"""A TFLite flatbuffer (schema v3) written directly, through the `tflite` package's generated builders.

`FlatbufferWriter` collects tensors, constant buffers and operators, then `finish()` lays them out:
buffer 0 is the empty one TFLite reserves, constant data is 16-byte aligned, operator codes are
deduplicated by (builtin, version). Options are given by table name and field values, e.g.
`("Conv2DOptions", {"Padding": VALID, "StrideH": 2})`; the builder functions are looked up by name.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass

import numpy as np

SAME, VALID = 0, 1
#: the model metadata entry where tensorbridge records what verification needs (value layouts, ...)
METADATA_KEY = "tensorbridge"
ACTIVATIONS = {None: 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
TENSOR_TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6, "int16": 7, "int8": 9}


@dataclass
class Quant:
    """Per-tensor (`axis` None, one scale) or per-channel quantization of a stored tensor."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None = None
    dtype: str | None = None  # storage type, where known

    def same(self, other: Quant | None) -> bool:
        return other is not None and self.axis == other.axis and np.array_equal(self.zero_point, other.zero_point) \
            and np.array_equal(np.float32(self.scale), np.float32(other.scale))


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    quant: Quant | None
    variable: bool = False


@dataclass
class _Operator:
    opcode: int
    inputs: list[int]
    outputs: list[int]
    options: tuple[str, dict] | None
    custom_options: bytes = b""


def _module(name: str):
    return importlib.import_module(f"tflite.{name}")


class FlatbufferWriter:
    def __init__(self, description: str = "tensorbridge"):
        self.description = description
        self.tensors: list[_Tensor] = []
        self.buffers: list[bytes] = [b""]
        self.opcodes: dict[tuple[int, int, str], int] = {}  # (builtin, version, custom code) -> index
        self.operators: list[_Operator] = []
        self._names: set[str] = set()

    def tensor(self, name: str, shape, dtype: str, data: np.ndarray | None = None, quant: Quant | None = None,
               variable: bool = False) -> int:
        """Add a tensor (constant when `data` is given; a stateful kernel's state when `variable`; a taken name gets
        a suffix); returns its index."""
        if dtype not in TENSOR_TYPES:
            raise ValueError(f"TFLite has no tensor type for {dtype}")
        base, n = name, 0
        while name in self._names:
            n += 1
            name = f"{base}.{n}"
        self._names.add(name)
        buffer = 0
        if data is not None:
            self.buffers.append(np.ascontiguousarray(data, dtype=np.dtype(dtype)).tobytes())
            buffer = len(self.buffers) - 1
        self.tensors.append(_Tensor(name, tuple(int(d) for d in shape), dtype, buffer, quant, variable))
        return len(self.tensors) - 1

    def op(self, builtin: str, inputs, outputs, options: tuple[str, dict] | None = None, version: int = 1) -> None:
        """Add an operator; `inputs` may hold -1 for an omitted optional input."""
        code = getattr(_module("BuiltinOperator").BuiltinOperator, builtin)
        index = self.opcodes.setdefault((code, version, ""), len(self.opcodes))
        self.operators.append(_Operator(index, list(inputs), list(outputs), options))

    def custom_op(self, custom_code: str, inputs, outputs, options: bytes = b"", version: int = 1) -> None:
        """Add a CUSTOM operator named `custom_code` (of `version`) with its raw `custom_options`."""
        code = _module("BuiltinOperator").BuiltinOperator.CUSTOM
        index = self.opcodes.setdefault((code, version, custom_code), len(self.opcodes))
        self.operators.append(_Operator(index, list(inputs), list(outputs), None, bytes(options)))

    def finish(self, inputs: list[int], outputs: list[int], metadata: dict | None = None) -> bytes:
        """The flatbuffer; `metadata` (JSON-able) is stored as the model's `tensorbridge` metadata entry."""
        import flatbuffers

        b = flatbuffers.Builder(1 << 16)
        entries = []
        if metadata:
            self.buffers.append(json.dumps(metadata, separators=(",", ":")).encode())
            entries.append((METADATA_KEY, len(self.buffers) - 1))
        buffers = [self._buffer(b, data) for data in self.buffers]
        tensors = [self._tensor(b, t) for t in self.tensors]
        operators = [self._operator(b, o) for o in self.operators]
        sg = _module("SubGraph")
        vectors = {"Tensors": _tables(b, tensors), "Inputs": _ints(b, inputs), "Outputs": _ints(b, outputs),
                   "Operators": _tables(b, operators)}
        name = b.CreateString("main")
        sg.SubGraphStart(b)
        for field, vec in vectors.items():
            getattr(sg, f"SubGraphAdd{field}")(b, vec)
        sg.SubGraphAddName(b, name)
        subgraph = sg.SubGraphEnd(b)

        oc = _module("OperatorCode")
        codes = []
        for (code, version, custom), _ in sorted(self.opcodes.items(), key=lambda kv: kv[1]):
            custom_code = b.CreateString(custom) if custom else None
            oc.OperatorCodeStart(b)
            if custom_code is not None:
                oc.OperatorCodeAddCustomCode(b, custom_code)
            oc.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            oc.OperatorCodeAddBuiltinCode(b, code)
            oc.OperatorCodeAddVersion(b, version)
            codes.append(oc.OperatorCodeEnd(b))
        md = _module("Metadata")
        tables = []
        for key, index in entries:
            name = b.CreateString(key)
            md.MetadataStart(b)
            md.MetadataAddName(b, name)
            md.MetadataAddBuffer(b, index)
            tables.append(md.MetadataEnd(b))
        m = _module("Model")
        vectors = {"OperatorCodes": _tables(b, codes), "Subgraphs": _tables(b, [subgraph]),
                   "Buffers": _tables(b, buffers)}
        if tables:
            vectors["Metadata"] = _tables(b, tables)
        description = b.CreateString(self.description)
        m.ModelStart(b)
        m.ModelAddVersion(b, 3)
        for field, vec in vectors.items():
            getattr(m, f"ModelAdd{field}")(b, vec)
        m.ModelAddDescription(b, description)
        b.Finish(m.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _buffer(self, b, data: bytes) -> int:
        buf = _module("Buffer")
        vec = None
        if data:
            b.StartVector(1, len(data), 16)
            b.head -= len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vec = b.EndVector(len(data))
        buf.BufferStart(b)
        if vec is not None:
            buf.BufferAddData(b, vec)
        return buf.BufferEnd(b)

    def _tensor(self, b, t: _Tensor) -> int:
        tm = _module("Tensor")
        name = b.CreateString(t.name)
        shape = _ints(b, t.shape)
        quant = self._quant(b, t.quant) if t.quant is not None else None
        tm.TensorStart(b)
        tm.TensorAddShape(b, shape)
        tm.TensorAddType(b, TENSOR_TYPES[t.dtype])
        tm.TensorAddBuffer(b, t.buffer)
        tm.TensorAddName(b, name)
        if quant is not None:
            tm.TensorAddQuantization(b, quant)
        if t.variable:
            tm.TensorAddIsVariable(b, True)
        return tm.TensorEnd(b)

    @staticmethod
    def _quant(b, q: Quant) -> int:
        qm = _module("QuantizationParameters")
        scale = b.CreateNumpyVector(np.asarray(q.scale, np.float32).ravel())
        zero_point = b.CreateNumpyVector(np.asarray(q.zero_point, np.int64).ravel())
        qm.QuantizationParametersStart(b)
        qm.QuantizationParametersAddScale(b, scale)
        qm.QuantizationParametersAddZeroPoint(b, zero_point)
        qm.QuantizationParametersAddQuantizedDimension(b, q.axis or 0)
        return qm.QuantizationParametersEnd(b)

    def _operator(self, b, o: _Operator) -> int:
        om = _module("Operator")
        inputs, outputs = _ints(b, o.inputs), _ints(b, o.outputs)
        custom = b.CreateNumpyVector(np.frombuffer(o.custom_options, np.uint8)) if o.custom_options else None
        options = kind = None
        if o.options is not None:
            table, fields = o.options
            tm = _module(table)
            getattr(tm, f"{table}Start")(b)
            for field, value in fields.items():
                getattr(tm, f"{table}Add{field}")(b, value)
            options = getattr(tm, f"{table}End")(b)
            kind = getattr(_module("BuiltinOptions").BuiltinOptions, table)
        om.OperatorStart(b)
        om.OperatorAddOpcodeIndex(b, o.opcode)
        om.OperatorAddInputs(b, inputs)
        om.OperatorAddOutputs(b, outputs)
        if options is not None:
            om.OperatorAddBuiltinOptionsType(b, kind)
            om.OperatorAddBuiltinOptions(b, options)
        if custom is not None:
            om.OperatorAddCustomOptions(b, custom)
        return om.OperatorEnd(b)


def _ints(b, values) -> int:
    return b.CreateNumpyVector(np.asarray(list(values), np.int32))


def _tables(b, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector(len(offsets))


def _in_source_order(subgraph, signature, inputs: list[str]) -> None:
    """Subgraph inputs in the order of `inputs` (the signature's names), outputs in the signature's output_<i>."""
    by_name = {entry.name.decode(): entry.tensorIndex for entry in signature.inputs}
    if sorted(by_name) == sorted(inputs):
        subgraph.inputs = [by_name[name] for name in inputs]
    outputs = {entry.name.decode(): entry.tensorIndex for entry in signature.outputs}
    ordered = [outputs.get(f"output_{i}") for i in range(len(outputs))]
    if None not in ordered:
        subgraph.outputs = ordered


def read_metadata(path) -> dict:
    """The `tensorbridge` metadata entry of a .tflite file (empty when it has none, or when the flatbuffer is too
    damaged to find it: the runtime that loads the file then says what is wrong)."""
    import struct

    import tflite

    data = bytearray(open(path, "rb").read())
    try:
        model = tflite.Model.GetRootAs(data, 0)
        for i in range(model.MetadataLength()):
            entry = model.Metadata(i)
            if (entry.Name() or b"").decode() == METADATA_KEY:
                doc = json.loads(bytes(model.Buffers(entry.Buffer()).DataAsNumpy()).decode())
                return doc if isinstance(doc, dict) else {}
    except (ValueError, TypeError, IndexError, AttributeError, struct.error, RecursionError):
        return {}
    return {}


def with_metadata(flatbuffer: bytes, metadata: dict, inputs: list[str] | None = None) -> bytes:
    """A flatbuffer written by TensorFlow's converter, with tensorbridge's metadata entry added and, given the
    source's input names, its inputs and outputs in the source's order (the converter orders them its own way)."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    if inputs is not None and model.signatureDefs:
        _in_source_order(model.subgraphs[0], model.signatureDefs[0], inputs)
    buffer = schema.BufferT()
    buffer.data = list(json.dumps(metadata, separators=(",", ":")).encode())
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = METADATA_KEY, len(model.buffers) - 1
    model.metadata = [*(model.metadata or []), entry]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))
