"""TFLite resource variables read as explicit state.

A streaming model keeps state between calls in resource variables: VAR_HANDLE names one, READ_VARIABLE and
ASSIGN_VARIABLE read and write it, and CALL_ONCE runs, on the first call, the subgraph that assigns the
initial values. The IR has no hidden state, so a variable the model reads before it assigns it becomes a graph
input named after the variable, and the value it holds at the end of the call a graph output `<name>_next`;
the caller feeds each call's `_next` outputs back as the next call's state, starting from the initial values
that `graph.metadata["state"]` records (tensorbridge/ir/state.py). A variable whose value no call reads
before assigning it carries nothing between calls and is not state. (TensorFlow's converter freezes the
variables a model only reads into constants.)

Variable tensors (`is_variable`, the states of the fused sequence LSTM and RNN kernels) are state the same
way: LiteRT zero-fills them when the interpreter is made, and the kernel writes its last state back into them,
so each call starts where the previous one ended.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.state import state_entry
from tensorbridge.ir.value import Value
from tensorbridge.ops.elementwise import passed_on


@dataclass
class _Variable:
    initial: np.ndarray | None = None
    input: Value | None = None  # the state a call starts from (made when the model reads it before assigning it)
    current: Value | None = None  # the value the call assigned last


class ResourceVariables:
    """The resource variables of one model, as the importer reads its main subgraph (their ops inside IF/WHILE
    bodies are blockers of the importer's preflight, so none is read there)."""

    def __init__(self, importer):
        self.imp = importer
        self.main = importer.graph
        self.variables: dict[str, _Variable] = {}
        self.initializing: dict[str, Value] | None = None  # while CALL_ONCE's subgraph runs: what it assigns
        self.tensors: dict[int, str] = {}  # variable tensor -> the variable it is

    def handle(self, tensor: int, name: str) -> None:
        """VAR_HANDLE: tensor `tensor` names variable `name` (a handle, not a value of the graph)."""
        handle = Value(name)
        handle.meta["variable"] = name
        self.imp.values[tensor] = handle
        self.variables.setdefault(name, _Variable())

    def _variable(self, tensor: int) -> tuple[str, _Variable]:
        handle = self.imp.values.get(tensor)
        if handle is None or "variable" not in handle.meta:
            raise ModelError(f"tensor {self.imp.tensor_name(tensor)!r} is used as a resource variable but no "
                             "VAR_HANDLE names it")
        return handle.meta["variable"], self.variables[handle.meta["variable"]]

    def read(self, tensor: int) -> Value:
        """READ_VARIABLE: the value assigned last in this call, else the state the call starts from."""
        return self._read(*self._variable(tensor))

    def variable_tensor(self, tensor: int, name: str) -> Value:
        """Variable tensor `tensor`'s value, as state named `name`: what it holds when the call starts (zeros on
        the first call)."""
        if self.imp.graph is not self.main:
            raise ModelError(f"variable tensor {self.imp.tensor_name(tensor)!r} inside an IF or WHILE body: state "
                             "is carried only through the main subgraph")
        if tensor not in self.tensors:
            t = self.imp.subgraph.Tensors(tensor)
            shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
            name = name if name not in self.variables else f"{name}_{tensor}"
            self.tensors[tensor] = name
            self.variables[name] = _Variable(np.zeros(shape, self.imp.tensor_dtype(t)))
        name = self.tensors[tensor]
        return self._read(name, self.variables[name])

    def write_variable_tensor(self, tensor: int, value: Value) -> None:
        """What a stateful kernel leaves in variable tensor `tensor` for the next call."""
        self.variables[self.tensors[tensor]].current = value

    def _read(self, name: str, var: _Variable) -> Value:
        if var.current is not None:
            return var.current
        if var.initial is None:
            raise ModelError(f"resource variable {name!r} is read before any value is assigned to it")
        if var.input is None:
            var.input = self.main.add_input(name, var.initial.dtype, var.initial.shape)
        return var.input

    def assign(self, tensor: int, value: Value) -> None:
        """ASSIGN_VARIABLE (in CALL_ONCE's subgraph: the initial value)."""
        name, var = self._variable(tensor)
        if self.initializing is not None:
            self.initializing[name] = value
        else:
            var.current = value

    def initialize(self, index: int) -> None:
        """CALL_ONCE: run subgraph `index` (it takes no inputs) to the initial value of each variable it assigns."""
        from tensorbridge.reference.interpreter import run

        scratch = Graph(f"init{index}")
        self.initializing = assigned = {}
        try:
            self.imp.import_subgraph(index, scratch, [])
        finally:
            self.initializing = None
        scratch.outputs = list(assigned.values())
        values = run(scratch, {})
        for name, out in assigned.items():
            self.variables[name].initial = np.asarray(values[out.name])

    def finish(self) -> None:
        """After the main subgraph: the state outputs after the model's own, in the order of the state inputs,
        and their initial values in the metadata."""
        read = sorted((var for var in self.variables.values() if var.input is not None),
                      key=lambda var: self.main.inputs.index(var.input))
        state = []
        for var in read:
            name, last = var.input.name, var.input if var.current is None else var.current
            out = passed_on(self.main, last, f"{name}_next")
            self.main.outputs.append(out)
            state.append(state_entry(name, out.name, var.initial))
        if state:
            self.main.metadata["state"] = state
