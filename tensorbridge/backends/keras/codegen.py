"""Keras backend: IR `Graph` -> a folder with readable Keras 3 functional code and its weights.

    <dest>/model.py            build_model(): keras.Input -> layers / keras.ops calls -> keras.Model
    <dest>/constants.npz       non-weight tensors the code reads (only when there are any)
    <dest>/model.weights.h5    the layers' weights (model.load_weights)
    <dest>/model.keras         the whole model, for keras.models.load_model
    <dest>/__init__.py         load_model() -> build_model() with the weights loaded
    <dest>/tensorbridge.json   the signature and layer -> IR value names, for `verify`

The graph is first planned channels-last (`passes/layout.py`); weighted ops become
layers named after the IR nodes (Conv2D, DepthwiseConv2D, Dense, BatchNormalization,
layer norms, Embedding ...), the rest are `keras.ops` calls. Code is built as an
`ast`; identifiers and layer names come from the namer.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
from pathlib import Path

import numpy as np

from tensorbridge import trust
from tensorbridge.backends.keras.own_layers import OwnLayer, class_def, class_name, nested
from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.emitter import CodeEmitter
from tensorbridge.codegen.folder import read_signature, write_signature
from tensorbridge.errors import BlockerReport, ModelError, UnsupportedError
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph, clone, values_read
from tensorbridge.ir.namer import Namer
from tensorbridge.ir.value import Value
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.fold_constants import fold_constants, fold_keeping_quantization
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout
from tensorbridge.passes.lower import lower_variants
from tensorbridge.passes.pipeline import Pipeline
from tensorbridge.passes.recover import fuse_layers
from tensorbridge.passes.static_shapes import reshape_to_inferred
from tensorbridge.rules.keras import REGISTRY

INLINE_LIMIT = 16
WEIGHT_LAYER = "Weight"
LAYOUT = LayoutTarget(("NHWC",), native="NHWC")  # TensorFlow's CPU kernels run convolutions only channels-last


def non_default(ctor: str, kwargs: dict) -> dict:
    """`kwargs` without those a Keras layer's constructor `ctor` ("layers.Conv2D") defaults to anyway."""
    import keras

    cls = getattr(keras.layers, ctor.removeprefix("layers."), None) if ctor.startswith("layers.") else None
    if cls is None:
        return kwargs
    params = inspect.signature(cls.__init__).parameters

    def is_default(key, value) -> bool:
        default = params[key].default if key in params else inspect.Parameter.empty
        if isinstance(default, tuple) and isinstance(value, int) and not isinstance(value, bool):
            value = (value,) * len(default)  # strides=1 is strides=(1, 1)
        return type(default) is type(value) and default == value

    return {k: v for k, v in kwargs.items() if not is_default(k, v)}


def weight_layer_class() -> ast.ClassDef:
    """The generated file's `Weight` layer: one learned tensor, returned whatever its input (which only places
    it in the functional graph); registered so that model.keras loads once model.py is imported."""
    init = P.function("__init__", ["self", "shape"], [
        P.expr_stmt(ast.Call(ast.Attribute(P.call("super"), "__init__", ast.Load()), [],
                             [ast.keyword(None, P.name("kwargs"))])),
        P.assign_attr("self.tensor_shape", P.call("tuple", P.name("shape"))),
        P.assign_attr("self.value", P.method(P.name("self"), "add_weight", shape=P.name("self.tensor_shape"),
                                             initializer="zeros", name="value")),
    ], kwargs="kwargs")
    call = P.function("call", ["self", "x"], [P.ret(P.call("ops.convert_to_tensor", P.name("self.value")))])
    config = P.function("get_config", ["self"], [P.ret(ast.Dict([None, P.lit("shape")], [
        P.method(P.call("super"), "get_config"), P.call("list", P.name("self.tensor_shape"))]))])
    cls = P.class_def(WEIGHT_LAYER, ["layers.Layer"], [init, call, config],
                      doc="A learned tensor of the source model that no library layer holds.")
    cls.decorator_list = [P.call("keras.saving.register_keras_serializable", package="tensorbridge")]
    return cls


def pipeline(layout: LayoutOptions | None = None, target: LayoutTarget = LAYOUT, blocker=REGISTRY.blocker,
             name: str = "Keras code", holds=REGISTRY.holds_type) -> Pipeline:
    """Dead code out, constants folded (an If of a constant condition becomes its branch, whose shapes the layout
    plan needs), layouts planned channels-last, attribute variants lowered (LiteRT's integer arithmetic), constants
    folded, computed reshape targets that shape inference knows made constants, the layers the writer has spelled
    in plain ops fused back, nodes `blocker` rejects decomposed."""
    return Pipeline(name).then("dead code", eliminate_dead_code).then("fold constants", fold_keeping_quantization) \
        .then("layout", lambda g: plan_layout(g, target, layout)) \
        .then("attribute variants", lower_variants) \
        .then("dead code", eliminate_dead_code).then("fold constants", fold_constants) \
        .then("computed reshapes", reshape_to_inferred).then("dead code", eliminate_dead_code) \
        .then("fuse layers", lambda g: fuse_layers(g, blocker)) \
        .then("legalize", lambda g: legalize(g, blocker, name, holds)) \
        .then("dead code", eliminate_dead_code).then("fold constants", fold_constants)


def prepare(graph: Graph, layout: LayoutOptions | None = None, target: LayoutTarget = LAYOUT,
            blocker=REGISTRY.blocker, name: str = "Keras code") -> Graph:
    return pipeline(layout, target, blocker, name).run(clone(graph))


def save(graph: Graph, dest, layout: LayoutOptions | None = None, target: LayoutTarget = LAYOUT,
         blocker=REGISTRY.blocker, name: str = "Keras code", for_tflite: bool = False, **_options) -> None:
    """Write the Keras code folder for `graph` at `dest` (builds the model to store its weights).

    The TFLite backend passes its own layout `target` and `blocker` (what its converter cannot lower), and
    `for_tflite`: the code is for TensorFlow's TFLite converter (see KerasEmitter)."""
    report = BlockerReport(f"export to {name}", name)
    try:
        prepared = prepare(graph, layout, target, blocker, name)
    except UnsupportedError as e:  # listed all at once
        report.blockers += e.blockers
    report.raise_if_any()
    em = KerasEmitter(prepared, for_tflite=for_tflite)
    em.run()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "model.py").write_text(em.module_source())
    if em.constants:
        np.savez(dest / "constants.npz", **em.constants)
    (dest / "__init__.py").write_text(init_code())
    trust.written_by_us(dest)
    model = build(dest)
    for path, arrays in em.weights.items():
        holder = nested(model, path)
        arrays = [np.asarray(a, dtype=np.float32) if a.dtype == np.float64 else a for a in arrays]
        try:
            if hasattr(holder, "set_weights"):
                holder.set_weights(arrays)
            else:  # a variable of a generated layer class
                holder.assign(arrays[0])
        except ValueError as e:
            raise ModelError(f"generated layer {path!r} rejected its weights: {e}") from None
    model.save_weights(str(dest / "model.weights.h5"))
    model.save(str(dest / "model.keras"))
    write_signature(dest, em.g, em.layer_values, "keras")


def layer_values(folder) -> dict[str, str]:
    """A generated folder's layer name -> IR value name map, where they differ."""
    return read_signature(folder).get("values", {})


def build(folder: Path):
    """Import a generated folder's model.py and call build_model() (weights not loaded)."""
    from tensorbridge.codegen.folder import load_folder

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    package = load_folder(folder)
    import sys

    return sys.modules[package.__name__ + ".model"].build_model()


def init_code() -> str:
    body = [P.function("load_model", [], [
        ast.Assign([ast.Name("model", ast.Store())], P.call("build_model"), lineno=0),
        P.expr_stmt(P.method(P.name("model"), "load_weights", P.call(
            "str", P.method(P.call("Path", P.name("__file__")), "with_name", "model.weights.h5")))),
        P.ret(P.name("model")),
    ], doc="The generated Keras model with its weights loaded.")]
    return P.module("Generated by tensorbridge. `load_model()` returns the Keras model with its weights.",
                    [[P.from_import("pathlib", ["Path"])], [P.from_import("model", ["build_model"], level=1)]], body)


@functools.cache
def _keras_op_names() -> frozenset[str]:
    import keras

    return frozenset(dir(keras.ops)) | frozenset(dir(keras.ops.nn)) | frozenset(dir(keras.ops.image))


class LayerNamer(Namer):
    """Layer names Keras's own naming of `keras.ops` calls never produces: Keras names each op call after its
    function plus a process-wide counter ("matmul", "matmul_33"), so a source node named like that ("matmul_33"
    from a Paddle program) would collide with an op call of the same model once the counter got there."""

    def name(self, raw: str, fallback: str = "v") -> str:
        candidate = super().name(raw, fallback)
        if re.sub(r"_\d+$", "", candidate) in _keras_op_names():
            self.taken.discard(candidate)
            return super().name(f"{candidate}_layer", fallback)
        return candidate


class KerasEmitter(CodeEmitter):
    """Builds the body of build_model(): keras.Input, layers and keras.ops calls, keras.Model."""

    label = "Keras code"

    def __init__(self, graph: Graph, for_tflite: bool = False):
        super().__init__(graph, REGISTRY)
        #: code for TensorFlow's TFLite converter: it takes rank-0 inputs as they are (Keras code gives each a batch
        #: axis of one, reshaped), and loses the channel count of UpSampling2D over open sizes (its tf.repeat), which
        #: its convolutions need: such an upsampling is written as a nearest resize
        self.for_tflite = for_tflite
        self.batched_scalars = not for_tflite
        self.layer_names = LayerNamer()
        self.namer.taken |= {"training", "mask"}  # Keras gives a layer's call parameters of these names a meaning
        self.weights: dict[str, list[np.ndarray]] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.layer_values: dict[str, str] = {}  # layer name -> IR value name, where they differ
        self.uses_weight_layer = False
        self.shared: dict[int, ast.expr] = {}  # weight value id -> the local holding its layer
        self.classes: list[ast.ClassDef] = []  # the layer classes of nodes with bodies (own_layers.py)
        self.owner: OwnLayer | None = None  # the one whose `call` is being written

    def begin(self) -> None:
        for v in self.g.inputs:
            ident = self.local(v, "input")
            shape = v.shape or ()
            batch = shape[0] if shape and isinstance(shape[0], int) else None
            dims = [d if isinstance(d, int) else None for d in shape[1:]]
            kwargs = {"shape": tuple(dims), "name": self.layer_names.name(v.name, "input")}
            if batch is not None:
                kwargs["batch_size"] = batch
            if v.dtype is not None and dtypes.name(v.dtype) != "float32":
                kwargs["dtype"] = dtypes.name(v.dtype)
            if self.batched_scalars and v.shape is not None and len(v.shape) == 0:  # Keras inputs have a batch axis
                held = self.namer.name(f"{ident}_batch", "input")
                self.body.append(P.assign([held], P.call("keras.Input", **kwargs, batch_size=1)))
                self.body.append(P.assign([ident], P.call("ops.reshape", P.name(held), ())))
                self.inputs.append(held)
            else:
                self.body.append(P.assign([ident], P.call("keras.Input", **kwargs)))
                self.inputs.append(ident)
            self.var[id(v)] = P.name(ident)

    def write(self, node, rule) -> None:
        if next(node.subgraphs(), None) is not None:
            self.in_own_layer(node, rule.write)
        else:
            rule.write(self, node)

    def in_own_layer(self, node, write) -> None:
        """`write(self, node)` in the `call` of a layer class of its own (own_layers.py), called on the values the
        node reads: for control flow, and for calls that need the values of their operands, not symbolic tensors
        (a shape computed when the model runs). Inside such a class, `write` is simply called."""
        if self.owner is not None:
            write(self, node)
            return
        operands = list({id(v): v for v in values_read(node) if id(v) in self.var}.values())
        owner = OwnLayer(self.namer.name(class_name(node.name), "Block"), self.layer_names.name(node.name, "layer"))
        outer, self.body, self.owner = self.body, [], owner
        try:
            with self.var.scoped():
                params = []
                for v in operands:  # named as their locals, unless two values share one (an alias)
                    expr = self.var[id(v)]
                    held = isinstance(expr, ast.Name) and expr.id not in params
                    params.append(expr.id if held else self.namer.name(v.name, "arg"))
                    self.var[id(v)] = P.name(params[-1])
                write(self, node)
                graph_outputs = {id(v) for v in self.g.outputs}
                read = [v for v in node.outputs if v.uses() or id(v) in graph_outputs]  # what the layer returns
                results = [self.tensor(v) for v in read]
            body = self.body + [P.ret(results[0] if len(results) == 1 else ast.Tuple(results, ast.Load()))]
        finally:
            self.body, self.owner = outer, None
        self.classes.append(class_def(owner, node, operands, params, body, read))
        made = P.call(P.call(owner.cls, name=owner.name), *(self.tensor(v) for v in operands))
        idents = [self.local(v) for v in read]
        self.body.append(P.assign(idents, made))
        for v, ident in zip(read, idents):
            self.var[id(v)] = P.name(ident)

    def finish(self) -> None:
        for v in self.g.outputs:  # a Keras model's outputs are layer outputs: a constant one is held by a layer
            if v.const is not None and id(v) not in self.var:
                self.learned(v, np.asarray(v.const))
        outs = self.outputs()
        inputs = [P.name(n) for n in self.inputs]  # one input bare, so calling it with a tensor is silent
        self.body.append(P.ret(P.call("keras.Model", inputs=inputs[0] if len(inputs) == 1 else P.lit(inputs),
                                      outputs=P.lit(outs), name=self.layer_names.name(self.g.name, "model"))))

    # -- what rules call ---------------------------------------------------------------------
    def constant(self, v: Value) -> ast.expr:
        arr = np.asarray(v.const)
        dt = dtypes.name(arr.dtype)
        if arr.size == 0:  # a nested list of no elements would lose the trailing dims
            return P.call("np.zeros", tuple(arr.shape), dtype=dt)
        if arr.size > 1 and (arr == arr.flat[0]).all():  # every element the same: not learned, and short
            return P.call("np.full", tuple(arr.shape), arr.flat[0].item(), dtype=dt)
        if v.learned and arr.size > INLINE_LIMIT:
            return self.learned(v, arr)
        if arr.size <= INLINE_LIMIT:
            return P.call("np.array", arr.tolist(), dtype=dt)
        key = self.namer.name(v.name, "const")
        self.constants[key] = arr
        self.var[id(v)] = P.subscript(P.name("CONSTANTS"), key)
        return self.var[id(v)]

    def learned(self, v: Value, arr: np.ndarray) -> ast.expr:
        """A learned tensor no library layer holds (a positional embedding, a class token): a `Weight` layer of
        the generated file, so it is saved, loaded and trained with the model's other weights."""
        if self.owner is not None:  # a variable of the layer class being written
            made = self.owner.attribute(v.name, P.method(P.name("self"), "add_weight", shape=tuple(arr.shape),
                                                         initializer="zeros", dtype=dtypes.name(arr.dtype)), "weight")
            self.weights[self.owner.path(made)] = [arr]
            self.var[id(v)] = made
            return made
        name = self.layer_names.name(v.name, "weight")
        self.weights[name] = [arr]
        if name != v.name:
            self.layer_values[name] = v.name
        self.uses_weight_layer = True
        self.var[id(v)] = P.call(P.call(WEIGHT_LAYER, tuple(arr.shape), **({"dtype": dtypes.name(arr.dtype)} if
                                                                            arr.dtype != np.float32 else {}),
                                        name=name), P.name(self.inputs[0]))
        ident = self.namer.name(v.name, "weight")
        self.body.append(P.assign([ident], self.var[id(v)]))
        self.var[id(v)] = P.name(ident)
        return self.var[id(v)]

    def layer(self, node, ctor: str, args: list, kwargs: dict, weights: list[np.ndarray], *inputs, **call_kwargs):
        """`ctor(*args, **kwargs)` named after `node`, called on `inputs`; its `weights` set once it is built. In
        a layer class's `call`, the layer is an attribute of the class, built in `__init__` where its input's
        shape is known."""
        if self.owner is not None:
            return P.call(self._attribute_layer(node, ctor, args, kwargs, weights), *inputs, **call_kwargs)
        name, made = self._constructed(node, ctor, args, kwargs, weights)
        if name != node.outputs[0].name:
            self.layer_values[name] = node.outputs[0].name
        return P.call(made, *inputs, **call_kwargs)

    def shared_layer(self, weight, node, ctor: str, args: list, kwargs: dict, weights: list[np.ndarray], *inputs):
        """`ctor(...)` holding the constant `weight`, called on `inputs`; where several nodes read the weight, the
        layer is built once into a local and called by each (one weight, as in the source)."""
        if len(weight.uses()) == 1 or self.owner is not None:
            return self.layer(node, ctor, args, kwargs, weights, *inputs)
        if id(weight) not in self.shared:
            name, made = self._constructed(node, ctor, args, kwargs, weights)
            ident = self.namer.name(name, "layer")
            self.body.append(P.assign([ident], made))
            self.shared[id(weight)] = P.name(ident)
        return P.call(self.shared[id(weight)], *inputs)

    def _attribute_layer(self, node, ctor: str, args: list, kwargs: dict, weights: list[np.ndarray]) -> ast.expr:
        made = self.owner.attribute(node.name, P.call(ctor, *args, **non_default(ctor, kwargs)), "layer")
        shape = node.inputs[0].shape if node.inputs and node.inputs[0] is not None else None
        if weights:
            self.weights[self.owner.path(made)] = weights
        if weights and shape is not None:  # built now: Keras warns of a layer whose weights only a call makes
            self.owner.init.append(P.expr_stmt(P.method(made, "build", tuple(
                d if isinstance(d, int) else None for d in shape))))
        return made

    def _constructed(self, node, ctor: str, args: list, kwargs: dict, weights: list[np.ndarray]):
        """(the layer's name, `ctor(*args, **kwargs, name=...)`), its `weights` recorded under the name."""
        name = self.layer_names.name(node.name, "layer")
        if weights:
            self.weights[name] = weights
        return name, P.call(ctor, *args, **non_default(ctor, kwargs), name=name)

    def module_source(self) -> str:
        uses_constants = bool(self.constants)
        prelude = []
        if uses_constants:
            prelude.append(P.assign(["CONSTANTS"], P.call("dict", P.call(
                "np.load", P.call("str", P.method(P.call("Path", P.name("__file__")), "with_name", "constants.npz")),
                allow_pickle=False))))
        fn = P.function("build_model", [], self.body, doc=f"{self.g.name}: the Keras functional model.")
        classes = [*self.helpers.values(), *([weight_layer_class()] if self.uses_weight_layer else []), *self.classes]
        src = ast.unparse(ast.Module([*classes, fn], []))
        groups = [[P.from_import("pathlib", ["Path"])]] if uses_constants else []
        third = [P.import_("keras")]
        if "np." in src or uses_constants:
            third.insert(1, P.import_("numpy", "np"))  # isort order: keras, numpy, then from-imports
        names = [n for n in ("layers", "ops") if f"{n}." in src]
        if names:
            third.append(P.from_import("keras", names))
        groups.append(third)
        return P.module(f"Keras model generated by tensorbridge from {self.g.metadata.get('source_framework', 'IR')}.",
                        groups, [*prelude, *classes, fn])
