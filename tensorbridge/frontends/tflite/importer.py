"""TFLite frontend: `.tflite` flatbuffer -> IR `Graph`, without TensorFlow.

The flatbuffer is read through the `tflite` package's generated accessors over a memory
map. Weights are NumPy views of their buffers, float16-stored weights are dequantized at
import, int8/uint8 quantization parameters (per tensor or per channel) are carried on the IR
values untouched, fused activations become their own IR ops, and the shape-computing chains
the converter emits (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE, as for Keras 3 Flatten) fold
to constants when shapes are static. Sparse constants (pruned weights, read through DENSIFY)
are made dense at import. Resource variables (a streaming model's state) become explicit state inputs and
outputs (frontends/tflite/state.py). The CUSTOM ops of published models that the registry reads
(rules/tflite/custom.py) are imported; other CUSTOM and Flex ops are listed, with every other
unsupported operator, in one error. Integer (quantized) kernels are imported in the IR's
canonical form: DequantizeLinear on their quantized inputs, the float op, QuantizeLinear on
their quantized outputs, with the scales and zero points of the flatbuffer.
"""

from __future__ import annotations

import logging
import mmap
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError, TensorbridgeError
from tensorbridge.frontends.tflite.sparse import read_sparse
from tensorbridge.frontends.tflite.state import ResourceVariables
from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import QuantParams, Value
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.tflite import REGISTRY
from tensorbridge.rules.tflite import base as rules
from tensorbridge.rules.tflite.quant import dequantized, requantized

log = logging.getLogger(__name__)


def _names(enum_cls) -> dict[int, str]:
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith("_") and isinstance(v, int)}


def _rule(name: str):
    """The import rule of an operator as `Importer.opcode` names it ("CONV_2D", "CUSTOM:<code>"), or None."""
    if name.startswith("CUSTOM:"):
        return REGISTRY.import_rule(name.removeprefix("CUSTOM:"), "custom")
    return REGISTRY.import_rule(name, "builtin")


def load(source) -> Graph:
    import tflite

    path = Path(source)
    try:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot read {path}: {e}") from None
    if len(mm) < 8 or mm[4:8] != b"TFL3":
        raise ModelError(f"{path} is not a TFLite flatbuffer (no TFL3 identifier)")
    try:
        model = tflite.Model.GetRootAs(mm, 0)
        graph = Importer(model, mm, path).run()
    except TensorbridgeError:  # a clear refusal (unsupported ops, malformed parts) stays what it is
        raise
    except Exception as e:  # noqa: BLE001 - a damaged flatbuffer fails in many ways inside the accessors
        raise ModelError(f"{path} is not a valid TFLite model ({type(e).__name__}: {e})") from None
    return graph


class Importer:
    def __init__(self, model, buf, path: Path):
        import tflite

        self.model = model
        self.buf = buf
        self.path = path
        self.op_names = _names(tflite.BuiltinOperator)
        self.option_names = _names(tflite.BuiltinOptions)
        self.graph = Graph(path.stem)
        self.report = BlockerReport("TFLite import", "tflite")
        self.values: dict[int, Value] = {}
        self.subgraph = None
        self._active: set[int] = set()  # subgraphs being imported (a call cycle is an error)
        self.op = None
        self.op_name = ""
        self.integer_kernel = False  # the operator being read has quantized operands
        self.build = Builder(self.graph)
        self.state = ResourceVariables(self)

    def opcode(self, op) -> str:
        code = self.model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        name = self.op_names.get(builtin, f"BUILTIN_{builtin}")
        if name == "CUSTOM":
            custom = (code.CustomCode() or b"").decode("utf-8", "replace")
            return ("FLEX:" if custom.startswith("Flex") else "CUSTOM:") + custom
        return name

    def run(self) -> Graph:
        if self.model.SubgraphsLength() < 1:
            raise ModelError(f"{self.path} has no subgraph")
        reached = self._preflight()
        if self.model.SubgraphsLength() > len(reached) and not self.report.blockers:
            log.info("%s: subgraphs no IF/WHILE of the main one calls are not imported", self.path)
        self.report.raise_if_any("Nothing was written.")
        outputs = self.import_subgraph(0, self.graph, None)
        self.graph.outputs.extend(outputs)
        self.state.finish()
        self.graph.metadata["source_framework"] = "tflite"
        # shape chains the converter emits; quantized weights stay in QDQ form with their parameters
        fold_constants(self.graph, max_bytes=1 << 20, keep=frozenset({"DequantizeLinear"}))
        recover_patterns(self.graph)  # the layers TensorFlow's converter writes as plain ops (PReLU)
        infer_shapes(self.graph)
        return self.graph

    def _preflight(self) -> set[int]:
        """List every unsupported operator of the main subgraph and of the subgraphs its control flow
        calls (with the tensor each writes); return the indices of the subgraphs reached."""
        reached, todo = set(), [(0, False)]
        while todo:
            index, in_body = todo.pop()  # in_body: run by IF/WHILE (not the main call or CALL_ONCE's)
            if index in reached:
                continue
            reached.add(index)
            sg = self._subgraph(index)
            for i in range(sg.OperatorsLength()):
                op = sg.Operators(i)
                name = self.opcode(op)
                named = tensor_indices(op, "Outputs") or tensor_indices(op, "Inputs")
                label = sg.Tensors(int(named[0])).Name().decode("utf-8", "replace") if len(named) else f"op{i}"
                if name.startswith("FLEX:"):
                    self.report.add(name[5:], label, "Flex (TensorFlow) op: needs the TF runtime")
                elif _rule(name) is None:
                    custom = name.startswith("CUSTOM:")
                    self.report.add(name.removeprefix("CUSTOM:"), label,
                                    "CUSTOM op without a reading" if custom else "no IR mapping yet")
                elif in_body and name in rules.RESOURCE_OPS:
                    self.report.add(name, label, "a resource variable inside IF/WHILE: state is carried only "
                                                 "through the main subgraph")
                todo.extend((i, in_body or name != "CALL_ONCE") for i in self._called(op, name))
        return reached

    def _called(self, op, name: str) -> list[int]:
        """The subgraphs an IF or WHILE runs (then, else / cond, body)."""
        import tflite

        fields = rules.CONTROL_FLOW.get(name)
        if fields is None:
            return []
        opts = getattr(tflite, self.option_names[op.BuiltinOptionsType()])()
        opts.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
        return [getattr(opts, f)() for f in fields]

    def _subgraph(self, index: int):
        if not 0 <= index < self.model.SubgraphsLength():
            raise ModelError(f"{self.path}: subgraph {index} does not exist")
        return self.model.Subgraphs(index)

    def input_types(self, index: int) -> list[tuple[np.dtype, tuple]]:
        """(dtype, shape) of each input of subgraph `index`."""
        sg = self._subgraph(index)
        return [(self.tensor_dtype(sg.Tensors(t)), self._shape(sg.Tensors(t))) for t in tensor_indices(sg, "Inputs")]

    def import_subgraph(self, index: int, graph: Graph, bound: list[Value] | None) -> list[Value]:
        """Import subgraph `index` into `graph` and return its outputs. `bound` gives the values of its
        inputs (a control-flow body); None makes them inputs of `graph` (the main subgraph)."""
        if index in self._active:
            raise ModelError(f"{self.path}: subgraph {index} calls itself")
        saved = self.graph, self.subgraph, self.values, self.op, self.op_name, self.build
        self._active.add(index)
        self.graph, self.subgraph, self.values = graph, self._subgraph(index), {}
        try:
            sg = self.subgraph
            inputs = tensor_indices(sg, "Inputs")
            if bound is not None and len(bound) != len(inputs):
                raise ModelError(f"{self.path}: subgraph {index} takes {len(inputs)} inputs, its caller "
                                 f"passes {len(bound)}")
            for k, t in enumerate(inputs):
                self.values[t] = self._input(t) if bound is None else bound[k]
            for op in [sg.Operators(i) for i in range(sg.OperatorsLength())]:
                self._import_op(op)
            order = self._output_order(sg) if index == 0 else tensor_indices(sg, "Outputs")
            return [self.value(t) for t in order]
        finally:
            self._active.discard(index)
            self.graph, self.subgraph, self.values, self.op, self.op_name, self.build = saved

    def _import_op(self, op) -> None:
        self.op, self.op_name = op, self.opcode(op)
        if self.op_name in rules.RESOURCE_OPS:  # their operands are variable handles, not tensors
            _rule(self.op_name).convert(self, tensor_indices(op, "Inputs"), self.options())
            return
        ins = [None if t < 0 else self.value(t) for t in tensor_indices(op, "Inputs")]
        outs_idx = tensor_indices(op, "Outputs")
        # integer kernels: dequantize -> float op -> requantize (the IR's QDQ form)
        quantized = self.op_name not in ("QUANTIZE", "DEQUANTIZE") and self.op_name not in rules.CONTROL_FLOW
        base = self.tensor_name(outs_idx[0]) if outs_idx and outs_idx[0] >= 0 else self.op_name.lower()
        self.build = Builder(self.graph, base, {"framework": "tflite", "source_op": self.op_name, "source_name": base})
        self.integer_kernel = any(v is not None and v.quant is not None and v.dtype is not None
                                  and v.dtype.kind in "iu" for v in ins)
        if quantized:
            ins = [dequantized(self, v) for v in ins]
        options = self.custom_options() if self.op_name.startswith("CUSTOM:") else self.options()
        outs = _rule(self.op_name).convert(self, ins, options)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        for t, v in zip(outs_idx, outs):
            if quantized and v is not None:
                v = requantized(self, t, v)
            self.adopt(t, v)

    # -- tensors --------------------------------------------------------------------------
    def tensor_name(self, index: int) -> str:
        return self.subgraph.Tensors(int(index)).Name().decode("utf-8", "replace")

    def _shape(self, t):
        shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
        sig = [int(d) for d in t.ShapeSignatureAsNumpy()] if t.ShapeSignatureLength() else shape
        return tuple(("batch" if i == 0 else None) if s == -1 else d for i, (d, s) in enumerate(zip(shape, sig)))

    def tensor_dtype(self, t) -> np.dtype:
        name = rules.DTYPES.get(t.Type())
        if name is None:
            raise ModelError(f"tensor {t.Name()!r}: TFLite type {t.Type()} is not supported")
        return dtypes.dtype(name)

    def _input(self, index: int) -> Value:
        t = self.subgraph.Tensors(index)
        v = self.graph.add_input(rules.signature_name(self.tensor_name(index)), self.tensor_dtype(t), self._shape(t))
        v.quant = self.tensor_quant(t)
        return v

    def tensor_quant(self, t):
        q = t.Quantization()
        if q is None or q.ScaleLength() == 0:
            return None
        scale = q.ScaleAsNumpy().astype(np.float32)
        zp = q.ZeroPointAsNumpy() if q.ZeroPointLength() else np.zeros_like(scale, dtype=np.int64)
        storage = self.tensor_dtype(t)
        return QuantParams(scale, zp.astype(storage if storage.kind in "iu" else np.int64), storage,
                           int(q.QuantizedDimension()) if scale.size > 1 else None)

    def _data(self, t) -> np.ndarray | None:
        b = self.model.Buffers(t.Buffer())
        dt = self.tensor_dtype(t)
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        if b.Offset() > 1:  # large models keep buffers after the flatbuffer
            raw = np.frombuffer(self.buf, dtype=np.uint8, count=b.Size(), offset=b.Offset())
        elif b.DataLength():
            raw = b.DataAsNumpy()
        elif 0 in shape:  # an empty constant (a reshape to a scalar's shape) has no bytes, in its own buffer or in
            raw = np.zeros(0, np.uint8)  # the empty buffer 0: a tensor of no elements holds nothing to write
        else:
            return None
        if dt == np.dtype(object):
            raise ModelError(f"tensor {t.Name()!r}: string constants are not supported")
        if t.Sparsity() is not None:  # what DENSIFY expands: made dense here, once
            return read_sparse(t, raw.view(dt), shape)
        return raw.view(dt).reshape(shape)

    def value(self, index: int) -> Value:
        if index in self.values:
            return self.values[index]
        t = self.subgraph.Tensors(index)
        data = self._data(t)
        if data is None and t.IsVariable():  # a stateful kernel's state, named after the kernel's role for it
            position = tensor_indices(self.op, "Inputs").index(index)
            role = rules.STATE_OPERANDS.get(self.op_name, {}).get(position, f"state{position}")
            base = self.tensor_name(tensor_indices(self.op, "Outputs")[0])
            self.values[index] = self.state.variable_tensor(index, f"{base}_{role}")
            return self.values[index]
        if data is None:
            raise ModelError(f"tensor {self.tensor_name(index)!r} is read before any op writes it")
        v = self.graph.add_constant(self.tensor_name(index), data)
        v.quant = self.tensor_quant(t)
        self.values[index] = v
        return v

    def _output_order(self, sg) -> list[int]:
        """The main subgraph's output tensors, in its serving signature's order when it has exactly one
        (the converter's flatbuffer order may differ; LiteRT and TF report the signature's)."""
        flat = tensor_indices(sg, "Outputs")
        if self.model.SignatureDefsLength() != 1 or self.model.SignatureDefs(0).SubgraphIndex() != 0:
            return flat
        sig = self.model.SignatureDefs(0)
        order = [sig.Outputs(i).TensorIndex() for i in range(sig.OutputsLength())]
        return order if sorted(order) == sorted(flat) else flat

    def adopt(self, index: int, v: Value) -> None:
        """The IR value for TFLite tensor `index`: keep its name and quantization."""
        t = self.subgraph.Tensors(index)
        if v.producer is not None and not v.name.startswith(self.tensor_name(index)):
            name = self.graph.unique_name(self.tensor_name(index))
            v.name = name
        v.quant = v.quant or self.tensor_quant(t)
        if v.dtype is None:  # what no shape rule gives (control-flow results): the flatbuffer's types
            v.dtype, v.shape = self.tensor_dtype(t), v.shape or self._shape(t)
        self.values[index] = v

    # -- helpers for converters -------------------------------------------------------------
    def options(self):
        import tflite

        kind = self.op.BuiltinOptionsType()
        if kind == 0:
            return None
        cls = getattr(tflite, self.option_names[kind])
        table = self.op.BuiltinOptions()
        opts = cls()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def op_version(self) -> int:
        """The version of the operator being read (a custom op's kernels differ by it)."""
        return self.model.OperatorCodes(self.op.OpcodeIndex()).Version()

    def custom_options(self) -> bytes:
        return self.op.CustomOptionsAsNumpy().tobytes() if self.op.CustomOptionsLength() else b""

    def emit(self, op: str, inputs, attrs=None, outputs: int = 1, suffix: str = ""):
        return self.build.emit(op, inputs, attrs, outputs, suffix)

    def const(self, value, dtype=np.float32) -> Value:
        return self.build.const(value, f"{self.op_name.lower()}.const", dtype=dtype)

    def fused(self, y: Value, code: int) -> Value:
        return rules.fused(self, y, code)

    def quant_of(self, index: int):
        """(quantization, dtype) of tensor `index` of the subgraph being read."""
        t = self.subgraph.Tensors(index)
        return self.tensor_quant(t), self.tensor_dtype(t)


def tensor_indices(table, field: str) -> list[int]:
    """A subgraph's or an operator's `field` ("Inputs", "Outputs") as tensor indices; an absent vector (which
    the flatbuffer reader gives as 0, not as an empty array) is none."""
    return [int(t) for t in getattr(table, f"{field}AsNumpy")()] if getattr(table, f"{field}Length")() else []
