"""An ML Program (the `mlProgram` of a Core ML spec) read into an IR `Graph`.

The program's `main` function is one block of ops in order; every op names its outputs and takes named
arguments, each bound to an earlier op's output or a value written in place. `const` ops hold the constants
(large ones in the package's weights blob). Every op is checked before any is read, and every blocker is
reported together: an op without a rule, or an argument its rule does not read.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError, TensorbridgeError
from tensorbridge.formats.coreml import MIL_DTYPES, blob
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.rules.coreml import REGISTRY

#: arguments that name or document an op rather than change what it computes
IGNORED = frozenset({"name"})


def read_program(spec, folder, graph: Graph) -> None:
    program = spec.mlProgram
    if "main" not in program.functions:
        raise ModelError(f"the ML Program has no main function (it has {sorted(program.functions)})")
    function = program.functions["main"]
    if function.opset not in function.block_specializations:
        raise ModelError(f"the main function has no block for its opset {function.opset!r}")
    ProgramReader(folder, graph).run(function, function.block_specializations[function.opset])


class ProgramReader:
    def __init__(self, folder, graph: Graph):
        self.folder, self.graph = folder, graph
        self.b = Builder(graph)
        self.values: dict[str, object] = {}  # MIL name -> IR value, or a constant as NumPy
        self.lifted: dict[str, object] = {}  # MIL name of a constant -> the IR value it was read as
        self.op = None
        self.read: set[str] = set()

    # -- what rules use -----------------------------------------------------------------------------------
    @property
    def x(self):
        return self.tensor("x")

    def tensor(self, name: str):
        """The argument as an IR value (a constant becomes one)."""
        return self.tensors(name)[0]

    def tensors(self, name: str) -> list:
        self.read.add(name)
        if name not in self.op.inputs:
            raise ModelError(f"its argument {name!r} is missing")
        return [self._value(binding) for binding in self.op.inputs[name].arguments]

    def const(self, name: str, default=...):
        """The argument as a constant (NumPy); `default` when absent (none: it is required)."""
        self.read.add(name)
        if name not in self.op.inputs:
            if default is ...:
                raise ModelError(f"its argument {name!r} is missing")
            return default
        binding = self.op.inputs[name].arguments[0]
        value = self._bound(binding)
        if not isinstance(value, np.ndarray):
            raise ModelError(f"its argument {name!r} is computed, not a constant")
        return value

    def known(self, name: str) -> tuple[int, ...]:
        """The known shape of a tensor argument."""
        v = self.tensor(name)
        if v.shape is None or not all(isinstance(d, int) for d in v.shape):
            raise ModelError(f"its argument {name!r} has no known shape ({v.shape})")
        return tuple(v.shape)

    def weight(self, suffix: str, array):
        return self.b.weight(self.b.name(suffix), np.asarray(array))

    # -- reading ------------------------------------------------------------------------------------------
    def run(self, function, block) -> None:
        for declared in function.inputs:
            self.values[declared.name] = self.graph.add_input(declared.name, *_tensor_type(declared.type))
        self._check(block)
        report = BlockerReport("reading the Core ML program", "coreml")
        for op in block.operations:
            outputs = [o.name for o in op.outputs]
            if op.type == "const":
                self.values[outputs[0]] = self._constant(op.attributes["val"])
                continue
            self.op, self.read = op, set()
            self.b.at(outputs[0] if outputs else op.type, {"framework": "coreml", "source_op": op.type,
                                                            "source_name": outputs[0] if outputs else ""})
            try:
                if any(b.HasField("name") and b.name not in self.values for a in op.inputs.values()
                       for b in a.arguments):
                    continue  # it reads an op that could not be read (reported)
                results = self._convert(op)
                unread = sorted(set(op.inputs) - self.read - IGNORED)
                if unread:
                    raise ModelError(f"argument(s) {', '.join(unread)} not read: tensorbridge cannot tell what "
                                     "they change")
            except TensorbridgeError as e:
                report.add(op.type, outputs[0] if outputs else "", str(e))
                continue
            results = results if isinstance(results, list) else [results]
            if len(results) != len(outputs):
                raise ModelError(f"{op.type} {outputs[0]!r}: {len(outputs)} outputs, read as {len(results)}")
            for name, value in zip(outputs, results):
                self.values[name] = value
        report.raise_if_any()
        for name in block.outputs:
            value = self._bound_name(name)
            if isinstance(value, np.ndarray):
                value = self.b.const(value, name)
            self.graph.outputs.append(value)
        eliminate_dead_code(self.graph)

    def _check(self, block) -> None:
        report = BlockerReport("reading the Core ML program", "coreml")
        for op in block.operations:
            if op.type != "const" and REGISTRY.import_rule(op.type, "mil") is None:
                report.add(op.type, op.outputs[0].name if op.outputs else "", "MIL op without a rule")
        report.raise_if_any()

    def _convert(self, op):
        rule = REGISTRY.import_rule(op.type, "mil")
        if rule.convert is not None:
            return rule.convert(self, op)
        inputs = [self.tensor(name) for name in ("x", "y") if name in op.inputs]
        return self.b.op(rule.ir_op, *inputs, **rule.attrs)

    def _bound(self, binding):
        if binding.HasField("name"):
            return self._bound_name(binding.name)
        return self._constant(binding.value)

    def _bound_name(self, name: str):
        if name not in self.values:
            raise ModelError(f"{name!r} is read before any op writes it")
        return self.values[name]

    def _value(self, binding):
        named = binding.name if binding.HasField("name") else None
        if named in self.lifted:
            return self.lifted[named]
        value = self._bound(binding)
        if isinstance(value, np.ndarray):
            name = named or self.b.name("const")
            value = self.b.weight(name, value) if value.size > 1 else self.b.const(value, name)
            if named:
                self.lifted[named] = value
        return value

    def _constant(self, value) -> np.ndarray:
        """A MIL value (written in place, or in the weights blob) as NumPy."""
        if not value.type.HasField("tensorType"):
            raise ModelError("a constant that is not a tensor")
        dtype_code = value.type.tensorType.dataType
        shape = tuple(int(d.constant.size) for d in value.type.tensorType.dimensions)
        if dtype_code == 2:  # STRING
            strings = list(value.immediateValue.tensor.strings.values)
            return np.array(strings[0] if not shape and strings else strings, dtype=object)
        if dtype_code not in MIL_DTYPES:
            raise ModelError(f"a constant of MIL data type {dtype_code}, which tensorbridge does not read")
        dtype = np.dtype(MIL_DTYPES[dtype_code])
        if value.HasField("blobFileValue"):
            return blob(self.folder, value.blobFileValue.fileName, value.blobFileValue.offset, dtype, shape)
        tensor = value.immediateValue.tensor
        kind = tensor.WhichOneof("value")
        if kind == "bytes":
            data = np.frombuffer(tensor.bytes.values, dtype)
        elif kind is None:
            data = np.zeros(0, dtype)
        else:
            data = np.asarray(list(getattr(tensor, kind).values)).astype(dtype)
        size = int(np.prod(shape, dtype=np.int64))
        if data.size != size:
            raise ModelError(f"a constant of shape {list(shape)} holds {data.size} values")
        return data.reshape(shape)


def _tensor_type(value_type) -> tuple[np.dtype, tuple]:
    if not value_type.HasField("tensorType"):
        raise ModelError("a program input that is not a tensor")
    t = value_type.tensorType
    if t.dataType not in MIL_DTYPES:
        raise ModelError(f"a program input of MIL data type {t.dataType}")
    shape = tuple(int(d.constant.size) if d.HasField("constant") else None for d in t.dimensions)
    return np.dtype(MIL_DTYPES[t.dataType]), shape
