"""Keras 3 frontend: `.keras` / `.h5` files and in-memory models (Sequential, Functional, nested).

The functional graph is walked node by node (deepest first); each layer class, and each
`keras.ops` call in the graph, maps to an import rule of the Keras registry (`rules/keras/`); nested models are
inlined; every layer or call without a converter (custom layers included) is listed in one
error before anything is built. IR nodes and weights are named after the layers (`block1_conv1`, `block1_conv1.kernel`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError, TensorbridgeError, reason
from tensorbridge.formats import hdf5
from tensorbridge.formats.archive import CheckedZip
from tensorbridge.formats.sniff import is_hdf5
from tensorbridge.frontends.keras.tf_trace import function_graph
from tensorbridge.frontends.keras.tracing import ComputedOutputs, layer_rule, trace_layer
from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.ir.value import Value
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.keras import REGISTRY

log = logging.getLogger(__name__)


def _keras():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    return keras


def load(source, input_shapes: dict | None = None) -> Graph:
    """Import a Keras model object or a `.keras`/`.h5` file. `input_shapes` ({input name: dims}) fixes open
    input dims, so a custom layer that computes with them in Python (keras_hub's position embeddings slice a
    table by the sequence length) is traced once its inputs' shapes are known."""
    keras = _keras()
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():  # a generated code folder: its model.keras, once its model.py defines its layers
            from tensorbridge.codegen.folder import load_folder

            load_folder(path)
            path = path / "model.keras"
        model = read_model_file(path)
    else:
        model = source
    if isinstance(model, keras.Sequential):
        if not model.built or getattr(model, "_functional", None) is None:
            raise ModelError("the Sequential model has no known input shape: build it (or call it once) first")
        model = model._functional
    if not hasattr(model, "_nodes_by_depth"):
        raise ModelError(f"{type(model).__name__} is a subclassed Keras model; only Sequential and Functional "
                         "models have a graph tensorbridge can read")
    graph = Importer(model, input_shapes).run()
    return graph


def read_model_file(path: Path):
    """A `.keras`/`.h5` file loaded by Keras in safe mode (no lambdas deserialized), its zip checked first; any
    failure is one clear error with Keras's whole reason."""
    keras = _keras()
    if path.is_file() and zipfile.is_zipfile(path):
        CheckedZip(path, "Keras model (.keras)").close()
    elif path.is_file() and is_hdf5(path):
        hdf5.check_readable(path, "Keras model (HDF5)")
    try:
        with _named_for_keras(path) as named:
            model = keras.models.load_model(str(named), compile=False, safe_mode=True)
    except TensorbridgeError:
        raise
    except Exception as e:  # noqa: BLE001 - Keras, h5py and zipfile raise many kinds for a bad file
        raise ModelError(f"cannot load {path} as a Keras model: {reason(e)}") from None
    try:
        config = model.get_config()
    except Exception:  # noqa: BLE001 - a model that cannot describe itself has no configuration to check
        config = {}
    wide = [f"{'/'.join(map(str, where))} = {value}" for where, value in _integers(config) if abs(value) >= 1 << 31]
    if wide:
        raise ModelError(f"cannot load {path} as a Keras model: its configuration holds integers beyond the 32-bit "
                         f"range TensorFlow computes with (it would abort): {'; '.join(wide[:5])}")
    return model


def _integers(config, where=()):
    """(path, value) of every integer in a layer configuration."""
    if isinstance(config, dict):
        for key, value in config.items():
            yield from _integers(value, (*where, key))
    elif isinstance(config, (list, tuple)):
        for i, value in enumerate(config):
            yield from _integers(value, (*where, i))
    elif isinstance(config, int) and not isinstance(config, bool):
        yield where, config


@contextlib.contextmanager
def _named_for_keras(path: Path):
    """`path`, or a link to it named as Keras's loader wants (.keras for its zip, .h5 for HDF5): Keras picks
    its reader by the extension, tensorbridge by the content."""
    if path.suffix.lower() in (".keras", ".h5", ".hdf5") or not path.is_file():
        yield path
        return
    suffix = ".h5" if is_hdf5(path) else ".keras"
    with tempfile.TemporaryDirectory(prefix="tb-keras-") as tmp:
        link = Path(tmp) / f"model{suffix}"
        os.symlink(path.resolve(), link)
        yield link


class Importer:
    def __init__(self, model, input_shapes: dict | None = None):
        self.model = model
        self.input_shapes = input_shapes or {}
        self.deferred: set[int] = set()  # id(keras node): traced when its inputs' given shapes are known
        self.graph = Graph(model.name or "keras_model")
        self.env: dict[int, Value] = {}
        self.report = BlockerReport("Keras import", "keras")
        self.build = Builder(self.graph)
        self.layer = None
        self.traced: dict[int, object] = {}  # id(keras node) -> the functional graph its custom layer's call builds
        self.renamed: list = []  # (keras operation, its name) renamed while traced, restored after the import
        self.batch_fixed_by: list[str] = []  # layers traced only with the batch size known (it is then 1)
        self.open_batch: list = []  # keras nodes whose custom layer was traced with the batch size open
        self.variables: dict[int, Value] = {}  # id(keras variable) -> its weight

    def run(self) -> Graph:
        try:
            return self._run()
        finally:
            for operation, name in reversed(self.renamed):
                operation.name = name

    def _run(self) -> Graph:
        self._preflight(self.model)
        open_inputs = [self._input_name(t) for t in self.model.inputs if None in tuple(t.shape)[1:]]
        self.report.raise_if_any(
            "Nothing was written. A layer that cannot be traced needs an import rule (tensorbridge/rules/keras/)"
            + (f"; one that computes with an open input dim traces once the input shapes are given: --input-shape "
               f"NAME=d0,d1,... for {', '.join(open_inputs)}." if open_inputs else "."))
        batch = "batch"
        if self.batch_fixed_by:
            batch = 1
            self._retrace_with_batch()
            log.warning("the batch size is fixed at 1: layers %s compute with it in Python", ", ".join(
                self.batch_fixed_by))
        for t in self.model.inputs:
            shape = tuple(d if d is not None else (batch if i == 0 else None) for i, d in enumerate(t.shape))
            name = self._input_name(t)
            shape = tuple(self.input_shapes.get(name, shape))
            self.env[id(t)] = self.graph.add_input(name, dtypes.name(np.dtype(t.dtype)), shape)
        self._walk(self.model)
        for t in self.model.outputs:
            self.graph.outputs.append(self.env[id(t)])
        self.graph.metadata["source_framework"] = "keras"
        recover_patterns(self.graph)  # the layers the framework runs as plain ops (PReLU)
        infer_shapes(self.graph)
        return self.graph

    def _input_name(self, tensor) -> str:
        """An input's name in the graph: its tensor's, or its input layer's where Keras named the tensor itself."""
        return tensor.name if not tensor.name.startswith("keras_tensor") else self._input_layer_name(tensor)

    def _input_layer_name(self, tensor) -> str:
        for layer in self.model.layers:
            if type(layer).__name__ == "InputLayer" and layer.output is tensor:
                return layer.name
        return tensor.name

    def _nodes(self, model):
        depths = sorted(model._nodes_by_depth, reverse=True)
        return [n for d in depths for n in model._nodes_by_depth[d]]

    def _preflight(self, model) -> None:
        keras = _keras()
        for node in self._nodes(model):
            layer = node.operation
            kind = type(layer).__name__
            if kind == "InputLayer":
                continue
            if hasattr(layer, "_nodes_by_depth"):
                self._preflight(layer)
            elif not isinstance(layer, keras.layers.Layer):
                if REGISTRY.import_rule(kind, "op") is None:
                    self.report.add(kind, layer.name, "keras.ops call without a converter")
            elif layer_rule(layer) is None:
                if self.input_shapes:  # traced on the shapes the given ones make, as the walk reaches it
                    self.deferred.add(id(node))
                    continue
                fixed = 1 if self.batch_fixed_by else None
                traced, why = trace_layer(layer, node, batch=fixed, renamed=self.renamed)
                if traced is None and fixed is None:  # a layer may need the batch size (it is then fixed at 1)
                    traced = trace_layer(layer, node, batch=1, renamed=self.renamed)[0]
                    self.batch_fixed_by += [layer.name] if traced is not None else []
                elif fixed is None:
                    self.open_batch.append(node)
                if traced is None and not self._open_dims():  # else keras.ops may trace it once they are given
                    traced, why = self._through_tensorflow(node, [tuple(t.shape) for t in node.input_tensors], why)
                if traced is None:
                    self.report.add(kind, layer.name, f"custom layer that cannot be traced: {why}")
                else:
                    self.traced[id(node)] = traced
                    self._preflight_traced(traced)

    def _retrace_with_batch(self) -> None:
        """Once the batch size is fixed, the layers traced before with it open are traced with it known: what they
        compute from it (Swin's `ops.reshape(x, (ops.shape(x)[0], -1, c))`) then reads as that size, where an open
        one leaves two dims of a reshape open."""
        for node in self.open_batch:
            traced = trace_layer(node.operation, node, batch=1, renamed=self.renamed)[0]
            if traced is not None:
                self.traced[id(node)] = traced
                self._preflight_traced(traced)
        self.report.raise_if_any("Nothing was written.")

    def _open_dims(self) -> bool:
        """Whether an input has a dim other than the batch that the model leaves open."""
        return any(None in tuple(t.shape)[1:] for t in self.model.inputs)

    def _through_tensorflow(self, node, shapes: list, why: str):
        """(the IR graph TensorFlow traces of a layer keras.ops tracing could not read, "") or (None, both whys).
        keras.ops tracing comes first: its weights stay a layer's (TensorFlow's graph freezes them into constants)."""
        graph, tf_why = function_graph(node.operation, node, shapes)
        if graph is not None:
            log.info("%s: read through TensorFlow's tracing (%s)", node.operation.name, why)
            return graph, ""
        return None, f"{why}; traced by TensorFlow: {tf_why}"

    def _preflight_traced(self, traced) -> None:
        model = traced.model if isinstance(traced, ComputedOutputs) else traced
        if model is not None and not isinstance(model, Graph):
            self._preflight(model)

    def _walk(self, model) -> None:
        keras = _keras()
        for node in self._nodes(model):
            layer = node.operation
            kind = type(layer).__name__
            if kind == "InputLayer":
                continue
            inputs = [self.env[id(t)] for t in node.input_tensors]
            if id(node) in self.deferred:
                self._trace_with_shapes(node, inputs)
            traced = self.traced.get(id(node))
            if isinstance(traced, ComputedOutputs):
                symbolic = iter(self._inline(traced.model, inputs) if traced.model is not None else ())
                self._at(layer)
                outs = [next(symbolic) if a is None else self.weight(f"output{i}" if len(traced.arrays) > 1
                                                                      else "output", a)
                        for i, a in enumerate(traced.arrays)]
            elif isinstance(traced, Graph):  # read through TensorFlow
                outs = self._inline_graph(traced, inputs, layer.name)
            elif traced is not None or hasattr(layer, "_nodes_by_depth"):  # nested or traced: inline it
                outs = self._inline(traced if traced is not None else layer, inputs)
            elif not isinstance(layer, keras.layers.Layer):  # a keras.ops call
                self._at(layer)
                args, kwargs = self.operands(node.arguments.args), self.operands(node.arguments.kwargs)
                outs = REGISTRY.import_rule(kind, "op").convert(self, layer, args, kwargs, node)
                outs = outs if isinstance(outs, (list, tuple)) else [outs]
            else:
                self._at(layer)
                outs = layer_rule(layer).convert(self, layer, inputs, node)
                outs = outs if isinstance(outs, (list, tuple)) else [outs]
            for t, v in zip(node.output_tensors, outs):
                self.env[id(t)] = v

    def _inline(self, model, inputs: list[Value]) -> list[Value]:
        """The outputs of functional `model` (a nested model, a traced layer) read on `inputs`."""
        for inner, outer in zip(model.inputs, inputs):
            self.env[id(inner)] = outer
        self._walk(model)
        return [self.env[id(t)] for t in model.outputs]

    def _inline_graph(self, graph: Graph, inputs: list[Value], prefix: str) -> list[Value]:
        """The outputs of IR graph `graph` (a layer TensorFlow traced) copied into this one, reading `inputs`."""
        mapping = {id(v): a for v, a in zip(graph.inputs, inputs)}
        for c in graph.constants.values():  # float arrays are the frozen weights; the rest, literals
            weight = c.const.dtype.kind == "f" and c.const.size > 1
            mapping[id(c)] = self.build.const(c.const, name=f"{prefix}.{c.name}", literal=not weight)
        for n in graph.nodes:
            attrs = {k: clone(a, self.graph, mapping) if isinstance(a, Graph) else a for k, a in n.attrs.items()}
            new = self.graph.add_node(n.op, [None if v is None else mapping.get(id(v), v) for v in n.inputs], attrs,
                                      outputs=len(n.outputs), name=f"{prefix}.{n.name}", meta=n.meta)
            for old, out in zip(n.outputs, new.outputs):
                out.dtype, out.shape, out.layout = old.dtype, old.shape, old.layout
                mapping[id(old)] = out
        return [mapping[id(v)] for v in graph.outputs]

    def traced_function(self, fn, x: Value, name: str) -> Value:
        """`fn(x)` for a function of keras.ops (a custom activation), traced on a symbolic copy of `x` and read."""
        keras = _keras()
        symbolic = keras.Input(batch_shape=tuple(d if isinstance(d, int) else None for d in x.shape or ()),
                               dtype=dtypes.name(x.dtype))
        try:
            model = keras.Model(symbolic, fn(symbolic), name=name)
        except Exception as e:  # noqa: BLE001 - whatever the function's Python does on symbolic tensors
            raise ModelError(f"{self.layer.name}: activation {name!r} cannot be traced: {type(e).__name__}: "
                             f"{str(e).splitlines()[0][:200] if str(e) else ''}") from None
        self._preflight(model)
        self.report.raise_if_any("Nothing was written.")
        layer = self.layer
        self.env[id(model.inputs[0])] = x
        self._walk(model)
        self._at(layer)
        return self.env[id(model.outputs[0])]

    def _trace_with_shapes(self, node, inputs) -> None:
        """Trace a custom layer on its inputs' shapes as the given input shapes made them, or refuse it."""
        layer = node.operation
        traced, why = trace_layer(layer, node, shapes=[v.shape for v in inputs], renamed=self.renamed)
        if traced is None:
            shapes = [tuple(d if isinstance(d, int) else None for d in v.shape) for v in inputs]
            traced, why = self._through_tensorflow(node, shapes, why)
        if traced is None:
            self.report.add(type(layer).__name__, layer.name, f"custom layer that cannot be traced: {why}")
            self.report.raise_if_any("Nothing was written.")
        self.traced[id(node)] = traced
        self._preflight_traced(traced)
        self.report.raise_if_any("Nothing was written.")

    # -- helpers for converters ---------------------------------------------------------------
    def operands(self, args):
        """A call's arguments with every Keras tensor replaced by its IR value, and every variable (a traced
        layer's weight) by a weight (nesting kept)."""
        if isinstance(args, dict):
            return {k: self.operands(v) for k, v in args.items()}
        if isinstance(args, (list, tuple)):
            return [self.operands(a) for a in args]
        if id(args) in self.env:
            return self.env[id(args)]
        if isinstance(args, _keras().Variable):
            if id(args) not in self.variables:
                self.variables[id(args)] = self.build.weight(args.path.replace("/", "."), np.asarray(args.numpy()))
            return self.variables[id(args)]
        if hasattr(args, "numpy") and hasattr(args, "dtype"):  # a backend tensor the layer computed when traced
            return np.asarray(args.numpy())
        return args

    def _at(self, layer) -> None:
        self.layer = layer
        self.build.at(layer.name, {"framework": "keras", "source_op": type(layer).__name__,
                                   "source_name": layer.name})

    def emit(self, op: str, inputs, attrs=None, outputs: int = 1, suffix: str = ""):
        """An IR node; an array among the inputs (a tensor a traced layer computed) is a constant."""
        inputs = [self.const(v, v.dtype) if isinstance(v, np.ndarray) else v for v in inputs]
        return self.build.emit(op, inputs, attrs, outputs, suffix)

    def weight(self, name: str, array) -> Value:
        return self.build.weight(f"{self.layer.name}.{name}", np.asarray(array, order="C"))

    def const(self, value, dtype=np.float32) -> Value:
        return self.build.const(value, dtype=dtype)
