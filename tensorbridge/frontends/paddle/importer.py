"""Paddle frontend: a saved inference model (`model.json` or `model.pdmodel`, with `model.pdiparams`) -> IR
`Graph`, without Paddle.

Both program forms are read op by op through the Paddle registry: a legacy op first becomes the PIR op its
signature names (rules/paddle/base.LEGACY). Every op is checked before any is read: an op without a rule, or an
attribute no rule reads, is a blocker, and all are reported together. Inputs keep the shapes the program
declares; a size fixed only at run time (-1) is the symbolic "batch" on the first axis and must be given
(`input_shapes`, --input-shape) anywhere else.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import BlockerReport, InputShapesNeeded, ModelError, TensorbridgeError
from tensorbridge.formats.paddle import Op, Program, paths, read_params, read_program
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.core import TrackedAttrs
from tensorbridge.rules.paddle import REGISTRY
from tensorbridge.rules.paddle.base import LEGACY, attributes

#: PIR's own plumbing: values gathered into a list (for concat, the rnn's weights) and a list taken apart
COMBINE, SPLIT = "builtin.combine", "builtin.split"


def load(source, weights=None, input_shapes: dict | None = None) -> Graph:
    """Read a Paddle model: `source` is its program (or the .pdiparams, with the program beside it)."""
    program_path, params_path = paths(source, weights)
    program = read_program(program_path)
    graph = Importer(program, read_params(params_path, program.params), input_shapes or {}).run()
    graph.name = program_path.stem or "paddle"
    return graph


def pir_form(program: Program, op: Op) -> tuple[str, list, list, dict]:
    """(PIR op type, inputs by position, outputs by position, attributes) of a program's op."""
    if program.form == "pir":
        return op.type, list(op.inputs), list(op.outputs), dict(op.attrs)
    sig = LEGACY[op.type]
    attrs = {sig.renames.get(k, k): v for k, v in op.attrs.items()}
    inputs = []
    for sources in sig.inputs:
        found = None
        for source in sources:
            if source.startswith("@") and source[1:] in attrs:
                found = ("@", attrs.pop(source[1:]))
                break
            if op.inputs.get(source.lstrip("*")):
                found = _slot(source, op.inputs[source.lstrip("*")])
                break
        inputs.append(found)
    outputs = [_slot(slot, op.outputs.get(slot.lstrip("*")) or [None]) for slot in sig.outputs]
    return sig.pir, inputs, outputs, attrs


def _slot(slot: str, names: list):
    """A slot's variables: a list for a list slot ("*Name", as PIR's combined values), else the one variable."""
    return list(names) if slot.startswith("*") or len(names) > 1 else names[0]


class Importer:
    def __init__(self, program: Program, params: dict, input_shapes: dict):
        self.program, self.params, self.input_shapes = program, params, input_shapes
        self.graph = Graph("paddle")
        self.b = Builder(self.graph)
        self.values: dict[str, object] = {}
        self.inputs: list = []
        self.attrs: TrackedAttrs | None = None

    @property
    def x(self):
        return self.inputs[0] if self.inputs else None

    def weight(self, suffix: str, array):
        return self.b.weight(self.b.name(suffix), array)

    # -- reading -------------------------------------------------------------------------------------------
    def run(self) -> Graph:
        forms = self._check()
        self._declare()
        report = BlockerReport("reading the Paddle program", "paddle")
        for index, (op, (kind, inputs, outputs, attrs)) in enumerate(zip(self.program.ops, forms)):
            if any(not self._known(name) for name in inputs):
                continue  # it reads an op that could not be read (reported)
            if kind == COMBINE:
                self.values[outputs[0]] = [self._value(name) for name in inputs]
                continue
            if kind == SPLIT:
                self.values.update(zip(outputs, self.values[inputs[0]]))
                continue
            first = outputs[0][0] if outputs and isinstance(outputs[0], list) else outputs[0] if outputs else None
            name = first if self.program.form == "legacy" and first else f"{kind}_{index}"
            self.b.at(name, {"framework": "paddle", "source_op": op.type, "source_name": name})
            self.inputs = [self._value(v) for v in inputs]
            self.attrs = attributes(attrs)
            try:
                results = self._convert(kind, op)
                unread = self.attrs.unread()
                if unread:
                    raise ModelError(f"attribute(s) {', '.join(unread)} not read: tensorbridge cannot tell what "
                                     "they change")
            except TensorbridgeError as e:
                report.add(op.type, name, str(e))
                continue
            results = results if isinstance(results, list) else [results]
            for out, v in zip(outputs, results):
                if isinstance(out, list):  # a legacy slot of several outputs (split's Out)
                    self.values.update(zip(out, v))
                elif out:
                    self.values[out] = v
        missing = [name for name in self.program.outputs if self.values.get(name) is None]
        if missing and not report.blockers:
            report.add("fetch", "", f"output(s) {', '.join(missing)} are computed by no op read")
        report.raise_if_any()
        self.graph.outputs.extend(self.values[name] for name in self.program.outputs)
        recover_patterns(self.graph)
        eliminate_dead_code(self.graph)
        return self.graph

    def _convert(self, kind: str, op: Op):
        rule = REGISTRY.import_rule(kind)
        if rule.convert is not None:
            return rule.convert(self, Op(kind, op.inputs, op.outputs, op.attrs, op.name))
        return self.b.op(rule.ir_op, *self.inputs, **rule.attrs)

    def _known(self, name) -> bool:
        if name is None or isinstance(name, tuple):
            return True
        if isinstance(name, list):
            return all(self._known(n) for n in name)
        return name in self.values or name in self.program.absent

    def _value(self, name):
        """An input: a value, a list of values, None when absent, or an attribute made a constant."""
        if isinstance(name, tuple):
            return self.b.const(np.asarray(name[1]))
        if isinstance(name, list):
            return [self._value(n) for n in name]
        if name is None or name in self.program.absent:
            return None
        return self.values[name]

    def _check(self) -> list[tuple]:
        """Every op in its PIR form, once each has a rule (else every op without one is reported)."""
        report = BlockerReport("reading the Paddle program", "paddle")
        forms = []
        for op in self.program.ops:
            if op.attrs.get("__regions__"):
                report.add(op.type, "", "control flow (ops with sub-blocks) is not read")
                continue
            if self.program.form == "legacy" and op.type not in LEGACY:
                report.add(op.type, "", "legacy Paddle op without a rule")
                continue
            forms.append(pir_form(self.program, op))
            if forms[-1][0] not in (COMBINE, SPLIT) and REGISTRY.import_rule(forms[-1][0]) is None:
                report.add(op.type, "", "Paddle op without a rule")
        report.raise_if_any()
        return forms

    def _declare(self) -> None:
        unknown = sorted(set(self.input_shapes) - {v.name for v in self.program.inputs})
        if unknown:
            raise ModelError(f"input_shapes names {unknown}, which are not inputs of the model "
                             f"({[v.name for v in self.program.inputs]})")
        missing = []
        for var in self.program.inputs:
            shape = self.input_shapes.get(var.name)
            if shape is None:
                if var.shape is None or any(d < 0 for d in var.shape[1:]):
                    missing.append(var.name)
                    continue
                shape = tuple("batch" if i == 0 and d < 0 else d for i, d in enumerate(var.shape))
            if not var.dtype or var.dtype.startswith("type"):
                raise ModelError(f"input {var.name!r} has element type {var.dtype}, which tensorbridge does not read")
            value = self.graph.add_input(var.name, var.dtype, tuple(shape))
            self.values[self.program.value.get(var.name, var.name)] = value
        if missing:
            flags = " ".join(f"--input-shape {name}=N,C,H,W" for name in missing)
            raise InputShapesNeeded(f"the program leaves the size of input(s) {', '.join(missing)} open past the "
                                    f"batch; pass input_shapes (command line: {flags})",
                                    inputs=[v.name for v in self.program.inputs])
        for var in self.program.params:
            self.values[self.program.value.get(var.name, var.name)] = self.b.weight(var.name, self.params[var.name])
