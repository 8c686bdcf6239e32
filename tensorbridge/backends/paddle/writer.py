"""Paddle backend: IR `Graph` -> `model.pdmodel` + `model.pdiparams`, the legacy ProgramDesc that Paddle 2 saves and
Paddle 3's `paddle.inference` still loads.

The legacy form is written, not Paddle 3's PIR JSON: it is a versioned protobuf whose schema we vendor
(formats/paddle/framework.proto), every Paddle since 2.0 loads it, and its ops state their options as attributes
rather than as ops that make constants. Each node becomes one Paddle op or a few through the export rules
(rules/paddle/export.py); each input is a `feed` op, each output a `fetch` op, each constant read as a tensor a
persistable variable stored in the `.pdiparams` (in the sorted order of the names, as Paddle reads them). What
Paddle cannot express is reported, every node at once, before anything is written.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.formats.paddle import PARAMS_SUFFIX, messages, write_params
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget
from tensorbridge.passes.pipeline import Pipeline, writer_pipeline
from tensorbridge.rules.paddle import REGISTRY

LAYOUT = LayoutTarget(("NCHW",), native="NCHW")
#: the version the program says it was written by (Paddle 3.3.1, whose inference the tests run)
VERSION = 3003001
#: VarType.Type of the tensors written
CODES = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6, "uint8": 20,
         "int8": 21}
DENSE_TENSOR, FEED_MINIBATCH, FETCH_LIST = 7, 9, 10
INT32_MAX = 2 ** 31 - 1


def pipeline(layout: LayoutOptions | None = None) -> Pipeline:
    return writer_pipeline("Paddle", LAYOUT, lambda g: legalize(g, REGISTRY.blocker, "Paddle"), layout)


def save(graph: Graph, dest, layout: LayoutOptions | None = None, **_options) -> Path:
    """Write `dest` (a `.pdmodel`, or a folder that gets `model.pdmodel`) and its `.pdiparams` beside it."""
    dest = Path(dest)
    program_path = dest if dest.suffix == ".pdmodel" else dest / "model.pdmodel"
    program, params = write(graph, layout)
    program_path.parent.mkdir(parents=True, exist_ok=True)
    write_params(program_path.with_suffix(PARAMS_SUFFIX), params)
    program_path.write_bytes(program.SerializeToString())
    return program_path


def write(graph: Graph, layout: LayoutOptions | None = None):
    """(ProgramDesc, {parameter name: array}) of the graph."""
    g = pipeline(layout).run(clone(graph))
    report = BlockerReport("export to Paddle", "paddle")
    for x in [*g.inputs, *g.outputs]:
        if x.dtype is None or x.dtype.name not in CODES or x.shape is None:
            report.add("inputs/outputs", x.name, f"Paddle's feeds and fetches are tensors of a known rank and a type "
                                                 f"it stores, not {x.dtype} {x.shape}")
    report.raise_if_any()
    w = Writer(g)
    for node in g.nodes:
        REGISTRY.export_rule(node.op).write(w, node)
    w.finish()
    return w.program, w.params


class Writer:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.program = messages().ProgramDesc()
        self.program.version.version = VERSION
        self.block = self.program.blocks.add()
        self.block.idx, self.block.parent_idx = 0, -1
        self.params: dict[str, np.ndarray] = {}
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self._declare("feed", FEED_MINIBATCH, persistable=True)
        self._declare("fetch", FETCH_LIST, persistable=True)
        for i, x in enumerate(graph.inputs):
            self.op("feed", {"X": ["feed"]}, {"Out": [x]}, col=i)

    # -- what export rules use ---------------------------------------------------------------------------
    def var(self, value) -> str:
        """The variable of an IR value: declared when first met; a constant becomes a persistable parameter."""
        if id(value) not in self.names:
            if value.const is None and value.producer is None and not any(value is x for x in self.graph.inputs):
                raise ModelError(f"{value.name} is read before it is computed")
            name = self._unique(value.name)
            self.names[id(value)] = name
            self._declare(name, DENSE_TENSOR, value.dtype, value.shape, persistable=value.const is not None)
            if value.const is not None:
                self.params[name] = np.array(value.const, order="C")  # (ascontiguousarray makes 0-d 1-d)
        return self.names[id(value)]

    def temp(self, like, suffix: str, dtype=None, shape=None) -> str:
        """A new variable for a step inside a node's ops (a bias added after a product, an XShape)."""
        name = self._unique(f"{like.name}.{suffix}")
        self._declare(name, DENSE_TENSOR, dtype or like.dtype, like.shape if shape is None else shape)
        return name

    def param(self, like, suffix: str, array: np.ndarray) -> str:
        """A new persistable parameter (a weight the rule transformed)."""
        name = self._unique(f"{like.name}.{suffix}")
        array = np.array(array, order="C")
        self._declare(name, DENSE_TENSOR, array.dtype, array.shape, persistable=True)
        self.params[name] = array
        return name

    def op(self, kind: str, inputs: dict, outputs: dict, **attrs) -> None:
        """A Paddle op; inputs and outputs by slot, each a list of IR values or variable names."""
        op = self.block.ops.add()
        op.type = kind
        for slots, target in ((inputs, op.inputs), (outputs, op.outputs)):
            for slot, values in slots.items():
                var = target.add()
                var.parameter = slot
                var.arguments.extend(v if isinstance(v, str) else self.var(v) for v in values)
        for key, value in attrs.items():
            _attribute(op.attrs.add(), key, value)

    # -- assembling --------------------------------------------------------------------------------------
    def _unique(self, name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.]", "_", name or "var") or "var"
        name, i = base, 1
        while name in self.taken or name in ("feed", "fetch"):
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name

    def _declare(self, name: str, kind: int, dtype=None, shape=None, persistable: bool = False) -> None:
        var = self.block.vars.add()
        var.name, var.persistable = name, persistable
        var.type.type = kind
        if kind == DENSE_TENSOR:
            tensor = var.type.dense_tensor.tensor
            tensor.data_type = CODES[np.dtype(dtype).name]
            tensor.dims.extend(d if isinstance(d, int) else -1 for d in (shape or ()))

    def finish(self) -> None:
        """The fetches; an output that is a constant or an input is copied first (Paddle fetches what ops make)."""
        for i, v in enumerate(self.graph.outputs):
            fetched = v
            if v.producer is None:
                fetched = self.temp(v, "output")
                self.op("assign", {"X": [v]}, {"Out": [fetched]})
            self.op("fetch", {"X": [fetched]}, {"Out": ["fetch"]}, col=i)


def _attribute(attr, key: str, value) -> None:
    """An OpDesc attribute of the type Paddle declares for it (bool, int, float, str, or lists of those)."""
    attr.name = key
    if isinstance(value, bool):
        attr.type, attr.b = 6, value
    elif isinstance(value, (int, np.integer)):
        attr.type, attr.i = 0, int(value)
    elif isinstance(value, (float, np.floating)):
        attr.type, attr.f = 1, float(value)
    elif isinstance(value, str):
        attr.type, attr.s = 2, value
    elif isinstance(value, (list, tuple)) and all(isinstance(v, bool) for v in value) and value:
        attr.type = 7
        attr.bools.extend(value)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in value):
        attr.type = 3
        attr.ints.extend(max(-INT32_MAX - 1, min(INT32_MAX, int(v))) for v in value)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, np.number)) for v in value):
        attr.type = 4
        attr.floats.extend(float(v) for v in value)
    else:
        raise ModelError(f"attribute {key}={value!r} has no Paddle type")
