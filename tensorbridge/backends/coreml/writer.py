"""Core ML backend: IR `Graph` -> `.mlpackage` (ML Program, float32 compute) or `.mlmodel` (neural network).

The graph is written op by op with coremltools' MIL builder (the iOS 15 opset, which both kinds take) through
the export rules (rules/coreml/export*.py); coremltools then turns the program into the file's spec, with
`compute_precision=FLOAT32` so no float16 casts are inserted. What Core ML cannot express (64-bit floats,
integers beyond int32, ops without a rule) is reported, every node at once, before anything is written.
Core ML runs only on Apple platforms: `verify` reads the written file back and runs it in the reference
interpreter (verification/runners/coreml.py).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.formats.coreml import coremltools
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget
from tensorbridge.passes.pipeline import Pipeline, writer_pipeline
from tensorbridge.rules.coreml import REGISTRY
from tensorbridge.rules.coreml.base import DTYPES, int32

LAYOUT = LayoutTarget(("NCHW",), native="NCHW")
_HELD = frozenset(dtypes.name(d) for d in DTYPES)
#: the MIL opset written for each kind: iOS 15, the first that ML Programs take; neural networks end at iOS 14
#: (both hold the same ops: the iOS 15 opset is the first of the MIL opsets)
OPSETS = {"mlprogram": "iOS15", "neuralnetwork": "iOS14"}


def pipeline(layout: LayoutOptions | None = None) -> Pipeline:
    return writer_pipeline("Core ML", LAYOUT, lambda g: legalize(g, REGISTRY.blocker, "Core ML", _holds), layout)


def _holds(name: str) -> str | None:
    """Why Core ML cannot hold a tensor of type `name` (the graph's untouched inputs and outputs; the nodes'
    tensors are checked with their names by _check_types)."""
    return None if name in _HELD else f"Core ML has no {name} tensors"


def save(graph: Graph, dest, layout: LayoutOptions | None = None, **_options) -> None:
    """Write `dest`: an ML Program package unless its name ends in `.mlmodel` (a neural network)."""
    dest = Path(dest)
    model = convert(graph, "neuralnetwork" if dest.suffix.lower() == ".mlmodel" else "mlprogram", layout)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".coreml-") as tmp:
        staged = Path(tmp) / dest.name
        try:
            model.save(str(staged))
        finally:
            if getattr(model, "is_temp_package", False):  # coremltools' own copy, otherwise removed only at exit
                shutil.rmtree(model.package_path, ignore_errors=True)
        if dest.is_dir():
            shutil.rmtree(dest)
        elif dest.exists():
            dest.unlink()
        staged.rename(dest)


def convert(graph: Graph, kind: str = "mlprogram", layout: LayoutOptions | None = None):
    """The graph as a coremltools `MLModel` (not loaded for prediction: Core ML runs only on Apple platforms)."""
    ct = coremltools()

    program = build(graph, layout, OPSETS[kind])
    options = {"compute_precision": ct.precision.FLOAT32} if kind == "mlprogram" else {}
    with contextlib.redirect_stderr(io.StringIO()):  # coremltools' progress bars
        try:
            return ct.convert(program, convert_to=kind, minimum_deployment_target=getattr(ct.target, OPSETS[kind]),
                              skip_model_load=True, **options)
        except (ValueError, TypeError, NotImplementedError, RuntimeError) as e:
            raise ModelError(f"coremltools refused the program: {str(e).splitlines()[0][:300]}") from None


def build(graph: Graph, layout: LayoutOptions | None = None, opset: str = "iOS15"):
    """The graph as a MIL `Program` with one function, `main`."""
    ct = coremltools()
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function, Program

    _check_inputs(graph)
    g = pipeline(layout).run(clone(graph))
    _check_types(g)
    writer = Writer(g, mb)
    specs = {writer.names[id(x)]: mb.placeholder(shape=list(x.shape), dtype=_mil_dtype(x.dtype)) for x in g.inputs}
    report = BlockerReport("export to Core ML", "coreml")
    with Function(specs, opset_version=getattr(ct.target, opset)) as function:
        for x in g.inputs:
            writer.vars[id(x)] = function.inputs[writer.names[id(x)]]
        for node in g.nodes:
            if any(v is not None and v.const is None and id(v) not in writer.vars for v in node.inputs):
                continue  # it reads a node the builder refused (reported)
            try:
                REGISTRY.export_rule(node.op).write(writer, node)
            except (ValueError, TypeError, IndexError) as e:  # the builder's own type and shape checks
                report.add(node.op, node.name, f"coremltools' builder refused it: {str(e).splitlines()[0][:200]}")
        report.raise_if_any()
        function.set_outputs(writer.outputs())
    program = Program()
    program.add_function("main", function)
    return program


def _check_inputs(g: Graph) -> None:
    """Core ML models are written for inputs of known shape: open dims are fixed by the user, not guessed."""
    open_inputs = [x for x in g.inputs if x.shape is None or not all(isinstance(d, int) for d in x.shape)]
    if open_inputs:
        shown = ", ".join(f"{x.name} {_dims(x.shape)}" for x in open_inputs)
        flags = " ".join(f"--input-shape {x.name}=" + ",".join("1" if not isinstance(d, int) else str(d)
                                                                  for d in x.shape or ()) for x in open_inputs)
        raise ModelError(f"Core ML models are written for inputs of known shape, and {shown} has open dims; fix "
                         f"them when loading (input_shapes={{...}}; command line: {flags})")


def _dims(shape) -> str:
    return "(unknown rank)" if shape is None else "(" + ", ".join(str(d) if isinstance(d, int) else "?"
                                                                 for d in shape) + ")"


def _check_types(g: Graph) -> None:
    """Every tensor's dtype, and the inputs' rank: Core ML's inputs have at least one dim."""
    report = BlockerReport("export to Core ML", "coreml")
    for node in g.nodes:
        for v in [*node.inputs, *node.outputs]:
            if v is not None and v.dtype is not None and np.dtype(v.dtype) not in DTYPES:
                report.add(node.op, node.name, f"Core ML has no {dtypes.name(v.dtype)} tensors ({v.name})")
                break
    for x in g.inputs:
        if x.shape is not None and len(x.shape) == 0:
            report.add("input", x.name, "a rank-0 input: Core ML's inputs have at least one dim")
    report.raise_if_any()


def _mil_dtype(dtype):
    from coremltools.converters.mil.mil import types

    return {np.float32: types.fp32, np.float16: types.fp16, np.int32: types.int32,
            np.bool_: types.bool}[DTYPES[np.dtype(dtype)]]


class Writer:
    def __init__(self, graph: Graph, mb):
        self.graph, self.mb = graph, mb
        self.vars: dict[int, object] = {}
        self.used: set[str] = set()
        self.names = {id(x): self._unique(x.name) for x in graph.inputs}

    def x(self, value):
        """An IR value as the builder takes it: its MIL variable, or a constant as NumPy (Core ML's dtype)."""
        if value is None:
            return None
        if id(value) in self.vars:
            return self.vars[id(value)]
        if value.const is None:
            raise RuntimeError(f"{value.name} is read before it is computed")
        array = np.asarray(value.const)
        if array.dtype == np.int64:
            return int32(array, value.name)
        return array.astype(DTYPES[np.dtype(array.dtype)])

    def name(self, node, suffix: str = "") -> str:
        """The name of the MIL op computing `node` (a step towards it with `suffix`): its output's name, so the
        values read back carry the IR's names."""
        base = node.outputs[0].name if node.outputs and node.outputs[0] is not None else node.name
        return self._unique(f"{base}_{suffix}" if suffix else base)

    def set(self, value, var) -> None:
        self.vars[id(value)] = var

    def outputs(self) -> list:
        """The graph's outputs as variables; an input or a constant passes through an identity (Core ML's
        outputs are ops' outputs), and each is named after the IR output."""
        result = []
        for v in self.graph.outputs:
            var = self.vars.get(id(v))
            if var is None or var.op is None or var.name != self._clean(v.name):
                var = self.mb.identity(x=self.x(v), name=self._unique(v.name))
            result.append(var)
        return result

    def _unique(self, name: str) -> str:
        base = self._clean(name)
        name, i = base, 1
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        return name

    @staticmethod
    def _clean(name: str) -> str:
        """A MIL name: letters, digits and underscores, not starting with a digit."""
        name = re.sub(r"\W", "_", name or "value")
        return name if not name[0].isdigit() else f"v_{name}"
