"""TensorFlow frontend: SavedModel directories and frozen GraphDefs (`.pb`) -> IR `Graph`.

A SavedModel's serving signature is frozen into a GraphDef through its concrete function
(`convert_variables_to_constants_v2`); a `.pb` is read as a frozen GraphDef. Nodes are
walked in dependency order and mapped through the TensorFlow registry (`rules/tf/`); MatMul (+ BiasAdd) on a
constant kernel becomes Dense and FusedBatchNorm becomes BatchNormalization, while data
stays channels-last (`layout="NHWC"`). Every op without a mapping is listed in one error.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.formats.savedmodel import load_saved_model
from tensorbridge.frontends.tf.frames import Frames
from tensorbridge.ir import dtypes, shapes
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import Value
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.tf import REGISTRY
from tensorbridge.rules.tf.control import FUNCTIONS

#: GraphDef nodes the importer itself handles: graph inputs, constants, control dependencies
STRUCTURAL = {"Placeholder", "Const", "NoOp"}

def load(source, input_shapes: dict | None = None) -> Graph:
    """A SavedModel folder or a frozen GraphDef; `input_shapes` ({name: dims}) fixes input dims before the ops
    are read, so what depends on them (a recurrent layer's state, its tensor lists) is read with them."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    path = Path(source)
    if path.is_dir():
        saved = load_saved_model(path)
        sigs = saved.signatures
        if not sigs:
            raise ModelError(f"{path} has no serving signature to convert")
        fn = sigs.get("serving_default") or next(iter(sigs.values()))
        from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

        # functional While/If stay functions (rules/tf/control.py), not TF1 Switch/Merge frames
        frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
        graph_def = frozen.graph.as_graph_def()
        inputs = _signature_order([t.name.split(":")[0] for t in frozen.inputs if t.dtype != tf.resource], fn,
                                  saved)
        outputs = [t.name for t in frozen.outputs]
        # the frozen outputs are the flattened structure: a dict's values in sorted key order
        output_names = sorted(fn.structured_outputs) if isinstance(fn.structured_outputs, dict) else None
    else:
        graph_def = tf.compat.v1.GraphDef()
        try:
            graph_def.ParseFromString(path.read_bytes())
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{path} is not a frozen GraphDef: {e}") from None
        inputs, outputs = frozen_graph_ends(graph_def)
        output_names = None
    return Importer(graph_def, path.stem or path.name).run(inputs, outputs, output_names, input_shapes or {})


def frozen_graph_ends(graph_def) -> tuple[list[str], list[str]]:
    """A frozen GraphDef's inputs (its placeholders) and outputs (what no op reads, as "node:0")."""
    inputs = [n.name for n in graph_def.node if n.op == "Placeholder"]
    consumed = {i.split(":")[0].lstrip("^") for n in graph_def.node for i in n.input}
    return inputs, [f"{n.name}:0" for n in graph_def.node if n.name not in consumed and n.op not in ("NoOp", "Const")]


def _signature_order(inputs: list[str], fn, saved) -> list[str]:
    """The placeholders in the model's own argument order where it has one (a signature's positional
    arguments, else those of the `serve` endpoint Keras's `model.export` writes), else sorted by name as
    TensorFlow flattens keyword arguments; the frozen function lists them in no stable order."""
    import tensorflow as tf

    def names(concrete) -> list[str]:
        args, _ = concrete.structured_input_signature
        return [getattr(spec, "name", None) for spec in tf.nest.flatten(args)]

    candidates = [names(fn)]
    serve = getattr(saved, "serve", None)
    for concrete in getattr(serve, "concrete_functions", None) or []:
        candidates.append(names(concrete))
    for order in candidates:
        if sorted(map(str, order)) == sorted(inputs):
            return order
    return sorted(inputs)


class Importer:
    def __init__(self, graph_def, name: str):
        self.nodes = {n.name: n for n in graph_def.node}
        self.library = {f.signature.name: f for f in graph_def.library.function}
        self.graph = Graph(name)
        self.values: dict[str, Value] = {}  # "node:index" -> value
        self.report = BlockerReport("TensorFlow import", "tf")
        self.build = Builder(self.graph)
        self.node = None
        self._active: set[str] = set()  # functions being imported (a call cycle is an error)
        self.frames: Frames | None = None  # TF1 control flow's dead branches, where the graph has any

    def run(self, inputs, outputs, output_names, input_shapes: dict) -> Graph:
        import tensorflow as tf

        order = self._order([o.split(":")[0] for o in outputs])
        if any(n.op in ("Switch", "Merge") for n in order):  # TF1 tf.cond: its untaken branches are not read
            self.frames = Frames(self.nodes)
            order = [n for n in order if not self.frames.node_dead(n.name)]
        self._preflight(order, set())
        self.report.raise_if_any("Nothing was written.")
        placeholders = [n for n in order if n.op == "Placeholder"]
        rank = {name: i for i, name in enumerate(inputs)}
        for n in sorted(placeholders, key=lambda n: rank.get(n.name, len(rank))):  # the signature's order
            shape = tf.TensorShape(n.attr["shape"].shape)
            dims = tuple(("batch" if i == 0 else None) if d is None else d
                         for i, d in enumerate(shape.as_list())) if shape.rank is not None else None
            dims = shapes.normalize(input_shapes[n.name]) if n.name in input_shapes else dims
            dt = tf.as_dtype(n.attr["dtype"].type).as_numpy_dtype
            self.values[f"{n.name}:0"] = self.graph.add_input(n.name, dtypes.name(np.dtype(dt)), dims)
        for n in order:
            self.node = n
            if n.op == "Placeholder":
                continue
            if n.op == "Const":
                self._constant(n)
            elif n.op == "NoOp":
                continue
            else:
                self._convert(n)
        for i, ref in enumerate(outputs):
            v = self.value(ref)
            if output_names and i < len(output_names) and v.producer is not None:
                v.name = self.graph.unique_name(output_names[i])
            self.graph.outputs.append(v)
        self.graph.metadata["source_framework"] = "tf"
        fold_constants(self.graph, max_bytes=1 << 20)
        recover_patterns(self.graph)  # the layers TensorFlow runs as plain ops (PReLU)
        infer_shapes(self.graph)
        return self.graph

    def _preflight(self, nodes, seen: set) -> None:
        """List every op without a mapping, in the graph and in the functions its control flow runs."""
        for n in nodes:
            if n.op not in STRUCTURAL and REGISTRY.import_rule(n.op) is None:
                self.report.add(n.op, n.name, "no IR mapping yet")
            if n.op == "Switch" and self.frames.predicate(n.input[1]) is None:
                self.report.add(n.op, n.name, "a TF1 tf.cond whose predicate is computed at run time (only constant "
                                              "predicates are read, as a placeholder's default; a SavedModel keeps "
                                              "tf.cond as a function, which is read)")
            for key in FUNCTIONS.get(n.op, ()):
                name = n.attr[key].func.name
                if name in seen:
                    continue
                seen.add(name)
                if name not in self.library:
                    raise ModelError(f"{n.name}: the graph holds no function {name!r}")
                self._preflight(self.library[name].node_def, seen)

    def import_function(self, name: str, graph: Graph, bound: list[Value]) -> list[Value]:
        """Function `name` of the graph's library imported into `graph`, its arguments bound to `bound`; its
        results."""
        from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

        if name in self._active:
            raise ModelError(f"function {name!r} calls itself")
        fdef = self.library[name]
        body, flat = function_def_to_graph_def(fdef)
        args = [a.name for a in fdef.signature.input_arg]
        if len(args) != len(bound):
            raise ModelError(f"function {name!r} takes {len(args)} arguments, its caller passes {len(bound)}")
        saved = self.graph, self.build, self.values, self.nodes, self.node
        self._active.add(name)
        self.graph, self.build, self.values = graph, Builder(graph), {f"{a}:0": v for a, v in zip(args, bound)}
        self.nodes = {n.name: n for n in body.node}
        try:
            results = [flat.get(fdef.ret[a.name], fdef.ret[a.name]) for a in fdef.signature.output_arg]
            for n in self._order([r.split(":")[0] for r in results]):
                self.node = n
                if n.op == "Const":
                    self._constant(n)
                elif n.op not in ("Placeholder", "NoOp"):
                    self._convert(n)
            return [self.value(r) for r in results]
        finally:
            self._active.discard(name)
            self.graph, self.build, self.values, self.nodes, self.node = saved

    def _constant(self, n) -> None:
        import tensorflow as tf

        arr = tf.make_ndarray(n.attr["value"].tensor)
        if arr.dtype.kind in "SU" or arr.dtype == object:
            raise ModelError(f"{n.name}: string constants are not supported")
        self.values[f"{n.name}:0"] = self.graph.add_constant(n.name, arr)

    def _order(self, roots):
        seen, order = set(), []
        stack = [(r, False) for r in reversed(roots)]
        while stack:
            name, done = stack.pop()
            if done:
                order.append(self.nodes[name])
                continue
            if name in seen:
                continue
            seen.add(name)
            if name not in self.nodes:
                raise ModelError(f"the graph refers to a missing node {name!r}")
            stack.append((name, True))
            for i in self.nodes[name].input:
                if not i.startswith("^"):
                    stack.append((i.split(":")[0], False))
        return order

    def value(self, ref: str) -> Value:
        key = ref if ":" in ref else f"{ref}:0"
        if key not in self.values:
            raise ModelError(f"{self.node.name if self.node else ''}: input {ref!r} has no value")
        return self.values[key]

    def emit(self, op, inputs, attrs=None, outputs=1, suffix=""):
        return self.build.emit(op, inputs, attrs, outputs, suffix)

    def const(self, value, dtype=np.int64) -> Value:
        return self.build.const(value, dtype=dtype)

    def _convert(self, n) -> None:
        ins = [self.value(i) for i in n.input if not i.startswith("^") and not (self.frames and self.frames.dead(i))]
        if n.name in getattr(self, "fused_bias", ()):  # its bias went into the Dense before it
            self.values[f"{n.name}:0"] = ins[0]
            return
        self.build.at(n.name, {"framework": "tf", "source_op": n.op, "source_name": n.name})
        out = REGISTRY.import_rule(n.op).convert(self, n, ins)
        for k, v in enumerate(out if isinstance(out, (list, tuple)) else [out]):
            self.values[f"{n.name}:{k}"] = v
