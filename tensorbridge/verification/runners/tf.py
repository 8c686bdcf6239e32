"""Runs TensorFlow-family models: Keras (`.keras`, `.h5`, code folders), SavedModels, TFLite (LiteRT)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules.tflite import signature_name


class KerasRunner:
    name = "Keras"

    def __init__(self, source, **_options):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

        self.layer_values, self._layouts, signature = {}, {}, {}
        if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():  # generated folder: its name map
            from tensorbridge.codegen.folder import load_folder, read_signature

            load_folder(Path(source))  # registers the layers model.keras names (a learned tensor's `Weight`)
            signature = read_signature(source)
            self.layer_values, self._layouts = signature.get("values", {}), signature.get("layouts", {})
        if isinstance(source, (str, os.PathLike)):
            from tensorbridge.frontends.keras.importer import read_model_file

            self.model = read_model_file(Path(source) / "model.keras" if Path(source).is_dir() else Path(source))
        else:
            self.model = source
        # names as the Keras frontend gives them: input layers and the layers producing the outputs
        self.inputs = []
        for t in self.model.inputs:
            layer = t._keras_history[0]
            shape = tuple(d if d is not None else ("batch" if i == 0 else None) for i, d in enumerate(t.shape))
            self.inputs.append((layer.name, dtypes.name(np.dtype(t.dtype)), shape))
        self.outputs = _output_names(self.model.outputs, signature.get("outputs"))

    def _args(self, feeds) -> list[np.ndarray]:
        """The feeds in input order; a scalar fed to an input of shape (1,) (how Keras code takes a rank-0
        input: Keras inputs have a batch axis) gets that axis."""
        args = [np.asarray(feeds[n]) for n, _, _ in self.inputs]
        return [a.reshape(1) if a.ndim == 0 and shape == (1,) else a for a, (_, _, shape) in zip(args, self.inputs)]

    def run(self, feeds):
        args = self._args(feeds)
        out = self.model(args if len(args) > 1 else args[0], training=False)
        out = out if isinstance(out, (list, tuple)) else [out]
        return {n: np.asarray(o) for n, o in zip(self.outputs, out)}

    def layouts(self) -> dict:
        return self._layouts

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every layer's output, named like the IR values (layer names follow the IR nodes)."""
        import keras

        layers = [layer for layer in self.model.layers if type(layer).__name__ != "InputLayer"]
        probe = keras.Model(self.model.inputs, [layer.output for layer in layers])
        args = self._args(feeds)
        values = probe(args if len(args) > 1 else args[0], training=False)
        return {self.layer_values.get(layer.name, layer.name): np.asarray(v) for layer, v in zip(layers, values)}


def _output_names(outputs, recorded: list | None) -> list[str]:
    """The names a generated folder records for its outputs, else the layers producing them, with the output's
    index where a layer (a split) produces several."""
    if recorded and len(recorded) == len(outputs):
        return list(recorded)
    names = [t._keras_history[0].name for t in outputs]
    return [f"{n}:{t._keras_history[2]}" if names.count(n) > 1 else n for n, t in zip(names, outputs)]


class TFLiteRunner:
    name = "LiteRT (TFLite)"

    def __init__(self, source, **_options):
        from tensorbridge.formats.tflite_flatbuffer import read_metadata

        self.source = source
        self.note = ""
        self.reference = None
        self.metadata = read_metadata(source)
        try:
            self.interp = _interpreter(source)
        except _NoKernel as e:
            self._run_by_reference(e.op)
            return
        self.in_details = self.interp.get_input_details()
        self.out_details = _in_signature_order(self.interp, self.interp.get_output_details())
        self.inputs = [(signature_name(d["name"]), dtypes.name(np.dtype(d["dtype"])),
                        tuple(int(x) for x in d["shape"])) for d in self.in_details]
        self.outputs = [d["name"] for d in self.out_details]

    def _run_by_reference(self, op: str) -> None:
        """A model with a CUSTOM op LiteRT has no kernel for (MediaPipe's, say), which tensorbridge reads:
        the reference interpreter runs the model as read, and the report says so."""
        from tensorbridge.verification.runners.reference import ReferenceRunner

        self.reference = ReferenceRunner(self.source)
        self.inputs, self.outputs = self.reference.inputs, self.reference.outputs
        self.note = (f"LiteRT has no kernel for the custom op {op}: the reference interpreter ran the model as "
                     "tensorbridge reads it (the custom ops' reading is tested against their kernels' code)")

    def run(self, feeds):
        if self.reference is not None:
            return self.reference.run(feeds)
        self._invoke(self.interp, feeds)
        return {d["name"]: np.array(self.interp.get_tensor(d["index"])) for d in self.out_details}

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every tensor LiteRT computed, by tensor name (tensorbridge's writers name them after IR values)."""
        if self.reference is not None:
            return self.reference.run_intermediates(feeds)
        interp = _interpreter(self.source, preserve=True)
        self._invoke(interp, feeds)
        values = {}
        for d in interp.get_tensor_details():
            try:
                values[d["name"]] = np.array(interp.get_tensor(d["index"]))
            except ValueError:  # a tensor LiteRT did not keep
                continue
        for tensor, value in self.metadata.get("int8_of", {}).items():  # uint8 values held as int8
            if tensor in values:
                values[value] = (values[tensor].astype(np.int16) + 128).astype(np.uint8)
        return values

    def layouts(self) -> dict:
        """IR value name -> layout, for tensors tensorbridge's writers hold permuted (the model's metadata)."""
        return self.metadata.get("layouts", {})

    def _invoke(self, interp, feeds) -> None:
        """Run on `feeds`, the inputs resized to them; a model with open dims is sized before each run (it may not
        have been before the first: _interpreter)."""
        arrays = [np.asarray(feeds[name]) for name, _, _ in self.inputs]
        resized = False
        for d, arr in zip(self.in_details, arrays):
            if tuple(arr.shape) != tuple(d["shape"]):
                interp.resize_tensor_input(d["index"], arr.shape)
                resized = True
        if resized or _dynamic(interp):
            interp.allocate_tensors()
        for d, arr in zip(self.in_details, arrays):
            interp.set_tensor(d["index"], arr.astype(d["dtype"]))
        interp.invoke()

    def output_steps(self) -> dict[str, float]:
        """Float outputs written by a DEQUANTIZE of a per-tensor quantized tensor: name -> scale."""
        if self.reference is not None:
            return {}
        ops = getattr(self.interp, "_get_ops_details", list)()
        tensors = {d["index"]: d for d in self.interp.get_tensor_details()}
        steps = {}
        for d in self.out_details:
            op = next((o for o in ops if d["index"] in list(o["outputs"]) and o["op_name"] == "DEQUANTIZE"), None)
            scale = tensors[int(op["inputs"][0])]["quantization"][0] if op is not None else 0.0
            if scale:
                steps[d["name"]] = float(scale)
        return steps


_UNRESOLVED_CUSTOM = re.compile(r"unresolved custom op: (\w+)")


class _NoKernel(ModelError):
    """LiteRT has no kernel for the model's CUSTOM op `op`."""

    def __init__(self, message: str, op: str):
        super().__init__(message)
        self.op = op


def _interpreter(source, preserve: bool = False):
    from ai_edge_litert.interpreter import Interpreter

    interp = None
    try:
        interp = Interpreter(model_path=str(source), experimental_preserve_all_tensors=preserve)
        interp.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        custom = _UNRESOLVED_CUSTOM.search(str(e))
        if custom:
            raise _NoKernel(f"LiteRT cannot load {source}: {custom.group(0)}", custom.group(1)) from None
        if interp is not None and _dynamic(interp):
            return interp  # its ops may only take the sizes it will be fed (a reflect pad wider than 1): _invoke
        raise ModelError(f"LiteRT cannot load {source}: {str(e).splitlines()[0][:300]}") from None
    return interp


def _dynamic(interp) -> bool:
    """Whether an input has dims the model leaves open (-1 in its shape signature)."""
    return any(-1 in d.get("shape_signature", ()) for d in interp.get_input_details())


def _in_signature_order(interp, details: list[dict]) -> list[dict]:
    """Output details in the order of the model's serving signature (the flatbuffer's own order differs)."""
    signatures = interp.get_signature_list()
    full = getattr(interp, "_get_full_signature_list", dict)()
    if len(signatures) != 1:
        return details
    key = next(iter(signatures))
    index = full.get(key, {}).get("outputs", {})
    order = [index.get(name) for name in signatures[key]["outputs"]]
    by_index = {d["index"]: d for d in details}
    if None in order or sorted(order) != sorted(by_index):
        return details
    return [by_index[i] for i in order]


def tensorflow_runner(source, **options):
    """A SavedModel folder's runner, or a frozen GraphDef file's."""
    from pathlib import Path

    return FrozenGraphRunner(source) if Path(source).is_file() else SavedModelRunner(source, **options)


class FrozenGraphRunner:
    """A frozen GraphDef (`.pb`) run by TensorFlow: its placeholders fed, what no op reads fetched, as the
    TensorFlow frontend reads it."""

    name = "TensorFlow (frozen GraphDef)"

    def __init__(self, source):
        import tensorflow as tf

        from tensorbridge.frontends.tf.importer import frozen_graph_ends

        graph_def = tf.compat.v1.GraphDef()
        try:
            graph_def.ParseFromString(open(source, "rb").read())
        except Exception as e:  # noqa: BLE001 - protobuf raises its own kinds
            raise ModelError(f"{source} is not a frozen GraphDef: {e}") from None
        placeholders, fetched = frozen_graph_ends(graph_def)
        nodes = {n.name: n for n in graph_def.node}
        self.inputs = []
        for name in placeholders:
            shape = tf.TensorShape(nodes[name].attr["shape"].shape)
            dims = tuple(("batch" if i == 0 else None) if d is None else d
                         for i, d in enumerate(shape.as_list())) if shape.rank is not None else None
            self.inputs.append((name, dtypes.name(np.dtype(tf.as_dtype(nodes[name].attr["dtype"].type)
                                                           .as_numpy_dtype)), dims))
        self.outputs = fetched
        wrapped = tf.compat.v1.wrap_function(lambda: tf.graph_util.import_graph_def(graph_def, name=""), [])
        self._fn = wrapped.prune([wrapped.graph.get_tensor_by_name(f"{n}:0") for n in placeholders],
                                 [wrapped.graph.get_tensor_by_name(t) for t in fetched])
        self._tf = tf

    def run(self, feeds):
        results = self._fn(*[self._tf.constant(np.asarray(feeds[name])) for name, _, _ in self.inputs])
        return {name: np.asarray(r) for name, r in zip(self.outputs, results)}


class SavedModelRunner:
    name = "TensorFlow (SavedModel)"

    def __init__(self, source, **_options):
        from tensorbridge.formats.savedmodel import load_saved_model

        saved = load_saved_model(source)
        sigs = saved.signatures
        if not sigs:
            raise ModelError(f"{source} has no serving signature")
        self.fn = sigs.get("serving_default") or next(iter(sigs.values()))
        _, specs = self.fn.structured_input_signature
        self.inputs = [(name, dtypes.name(np.dtype(spec.dtype.as_numpy_dtype)),
                        tuple(("batch" if i == 0 else None) if d is None else d for i, d in enumerate(spec.shape)))
                       for name, spec in specs.items()]
        self.outputs = sorted(self.fn.structured_outputs)  # in the TensorFlow frontend's order (tf.nest's)
        self._saved = saved  # keeps the functions' variables alive

    def run(self, feeds):
        out = self.fn(**{name: np.asarray(feeds[name]) for name, _, _ in self.inputs})
        return {k: np.asarray(out[k]) for k in self.outputs}

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every op's first output by TF node name (the TF frontend's value names), and each Keras layer's
        output by layer name in a SavedModel exported from Keras (its last op in the layer's scope)."""
        import tensorflow as tf
        from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

        from tensorbridge.rules.keras import tf_layer_scopes

        frozen = convert_variables_to_constants_v2(self.fn)
        ops = [op for op in frozen.graph.get_operations() if op.outputs and op.outputs[0].dtype != tf.resource
               and op.type not in ("Const", "Placeholder", "Identity", "NoOp")]
        graph_def = frozen.graph.as_graph_def()
        wrapped = tf.compat.v1.wrap_function(lambda: tf.graph_util.import_graph_def(graph_def, name=""), [])
        fetch = wrapped.prune([wrapped.graph.get_tensor_by_name(t.name) for t in frozen.inputs],
                              [wrapped.graph.get_tensor_by_name(op.outputs[0].name) for op in ops])
        order = sorted(name for name, _, _ in self.inputs)  # the flat order of the signature's inputs
        results = fetch(*[tf.constant(np.asarray(feeds[name])) for name in order])
        values = {}
        for op, result in zip(ops, results):
            values[op.name] = np.asarray(result)
            for scope in tf_layer_scopes(op.name):
                values[scope] = values[op.name]
        return values
