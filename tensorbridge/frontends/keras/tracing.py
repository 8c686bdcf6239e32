"""Tracing a Keras layer the registry has no rule for: its `call` run on symbolic inputs, read as the functional
graph of `keras.ops` calls and rule-bearing layers it builds (frontends/keras/importer.py walks that graph).

Libraries' layers (keras_hub's) need more than a plain call on symbolic tensors, and `_traceable` provides it
while a layer is traced; a layer computing from its weights alone reads as its arrays (`ComputedOutputs`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys

import numpy as np

from tensorbridge.rules.keras import REGISTRY

#: the layer classes tensorbridge's generated Keras code defines that registry rules read by name
GENERATED_LAYERS = frozenset({"Weight"})


def layer_rule(layer):
    """The registry's rule for a layer of Keras's own (by class name); a library's class of the same name
    (keras_hub's RMSNormalization) is a custom layer, traced."""
    kind = type(layer).__name__
    if not type(layer).__module__.startswith(("keras.", "tf_keras.")) and kind not in GENERATED_LAYERS:
        return None
    return REGISTRY.import_rule(kind, "layer")


def trace_layer(layer, node, batch: int | None = None, shapes: list | None = None, renamed: list | None = None):
    """(the functional graph `layer.call` builds on symbolic copies of the node's inputs, None) or (None, why):
    a custom layer written with `keras.ops` traces into ops the registry reads. `batch`: the size its inputs'
    open leading dim takes (a layer that computes with the batch size in Python, `ops.tile(t, (batch, 1, 1))`);
    `shapes`: its inputs' shapes as the model's given input shapes make them. Sublayers of one name (two inlined
    attentions' `output_projector`) get distinct names, each (operation, old name) appended to `renamed`."""
    import keras

    def shape(t, i):
        if shapes is not None and shapes[i] is not None:
            return tuple(d if isinstance(d, int) else None for d in shapes[i])
        return t.shape if batch is None or not t.shape or t.shape[0] is not None else (batch, *t.shape[1:])

    fresh = {id(t): keras.Input(batch_shape=shape(t, i), dtype=t.dtype) for i, t in enumerate(node.input_tensors)}

    def swap(a):
        return fresh.get(id(a), a)

    args = keras.tree.map_structure(swap, node.arguments.args)
    kwargs = keras.tree.map_structure(swap, node.arguments.kwargs)
    kwargs.pop("training", None)
    try:
        with _traceable(keras):
            out = layer.call(*args, **kwargs)
        flat = keras.tree.flatten(out)
        symbolic = [t for t in flat if isinstance(t, keras.KerasTensor)]
        if symbolic:
            _distinct_names(list(fresh.values()), symbolic, renamed if renamed is not None else [])
        if len(symbolic) < len(flat):  # some computed from its weights, sliced by known sizes
            model = keras.Model(list(fresh.values()), symbolic, name=layer.name) if symbolic else None
            return ComputedOutputs([None if isinstance(t, keras.KerasTensor) else
                                    np.asarray(keras.ops.convert_to_numpy(t)) for t in flat], model), ""
        return keras.Model(list(fresh.values()), out, name=layer.name), ""
    except Exception as e:  # noqa: BLE001 - whatever the layer's Python does on symbolic tensors
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def _distinct_names(inputs, outputs, renamed: list) -> None:
    """Rename the operations of a traced graph that share a name (Keras builds a graph of distinct names)."""
    from keras.src.ops.function import _build_map

    seen: set[str] = set()
    for operation in dict.fromkeys(n.operation for n in _build_map(inputs, outputs)[0]):
        name, k = operation.name, 1
        while operation.name in seen:
            operation.name, k = f"{name}_{k}", k + 1
        if operation.name != name:
            renamed.append((operation, name))
        seen.add(operation.name)


#: a Keras variable's arithmetic with a symbolic tensor, as keras.ops calls (its own methods call the backend)
_VARIABLE_ARITHMETIC = {"__add__": "add", "__sub__": "subtract", "__mul__": "multiply", "__truediv__": "divide",
                        "__matmul__": "matmul", "__pow__": "power"}


#: the operators of a TensorFlow tensor that defer to a symbolic operand's reflected ones while a layer is traced
_OPERATORS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__matmul__", "__rmatmul__", "__pow__",
              "__rpow__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__")


def _deferring(keras, method):
    def operator(self, other):
        return NotImplemented if isinstance(other, keras.KerasTensor) else method(self, other)
    return operator


@contextlib.contextmanager
def _traceable(keras):
    """What lets a layer's Python run on symbolic tensors while it is traced:
    - its sublayers without a registry rule run their `call` in place, so what they compute joins the trace as
      keras.ops (a library's attention subclass, which takes a cache Keras's output-spec method does not know, or
      returns None beside its tensors); a sublayer with a rule stays one node, and one whose output-spec method
      does not fit its call is run symbolically, as Keras runs a layer without one;
    - a variable's arithmetic with a symbolic tensor (`self.weight * x`, keras_hub's T5 norm) is a keras.ops call,
      where the variable's own methods would hand the symbolic tensor to the backend;
    - `tf.gather`, which a layer may call under the TensorFlow backend (keras_hub's DeBERTa-v3 attention), is the
      keras.ops call it equals on symbolic tensors (`symbolic_gather`);
    - `ops.ndim` of a symbolic tensor is its rank as a Python int, as it is of a live one (RoFormer-v2's rotary
      embedding branches on it), where Keras would give another symbolic tensor;
    - a TensorFlow tensor the layer computed (`ops.arange` of a known length) with a symbolic one in an operator
      (Moonshine's `indices[None, :] < lengths[:, None]`) leaves the operation to the symbolic tensor's reflected
      operator, a keras.ops call, where TensorFlow's would take the symbolic tensor for its own."""
    from keras.src.backend import compute_output_spec

    base, variable = keras.layers.Layer, keras.Variable
    saved = {(base, "__call__"): base.__call__, (base, "symbolic_call"): base.symbolic_call,
             **{(variable, name): getattr(variable, name) for name in _VARIABLE_ARITHMETIC},
             **{(variable, "__r" + name[2:]): getattr(variable, "__r" + name[2:]) for name in _VARIABLE_ARITHMETIC}}

    def call(self, *args, **kwargs):
        if self.built and layer_rule(self) is None and not hasattr(self, "_nodes_by_depth"):
            if not getattr(self, "_call_has_training_arg", True):  # as Keras's __call__ passes it on
                kwargs.pop("training", None)
            return self.call(*args, **kwargs)
        return saved[base, "__call__"](self, *args, **kwargs)

    def symbolic_call(self, *args, **kwargs):
        try:
            return self.compute_output_spec(*args, **kwargs)
        except (TypeError, ValueError):
            return compute_output_spec(self.call, *args, **kwargs)

    def arithmetic(name, op, reflected):
        def method(self, other):
            if isinstance(other, keras.KerasTensor):
                return getattr(keras.ops, op)(*((other, self) if reflected else (self, other)))
            return saved[variable, name](self, other)
        return method

    def gather(params, indices, *args, **kwargs):
        if isinstance(params, keras.KerasTensor) or isinstance(indices, keras.KerasTensor):
            return symbolic_gather(keras, params, indices, *args, **kwargs)
        return saved[tf, "gather"](params, indices, *args, **kwargs)

    def ndim(x):
        return len(x.shape) if isinstance(x, keras.KerasTensor) else saved[keras.ops, "ndim"](x)

    tf = sys.modules.get("tensorflow")  # the backend's, when it is TensorFlow
    functions = {(keras.ops, "ndim"): ndim, **({(tf, "gather"): gather} if tf is not None else {})}
    if tf is not None:  # a TensorFlow tensor's operator with a symbolic one defers to the symbolic one's
        functions.update({(tf.Tensor, name): _deferring(keras, getattr(tf.Tensor, name))
                          for name in _OPERATORS if hasattr(tf.Tensor, name)})
    for (module, name), function in functions.items():
        saved[module, name] = getattr(module, name)
        setattr(module, name, function)
    base.__call__, base.symbolic_call = call, symbolic_call
    for name, op in _VARIABLE_ARITHMETIC.items():
        setattr(variable, name, arithmetic(name, op, False))
        setattr(variable, "__r" + name[2:], arithmetic("__r" + name[2:], op, True))
    try:
        yield
    finally:
        for (cls, name), method in saved.items():
            setattr(cls, name, method)


def symbolic_gather(keras, params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """tf.gather as the keras.ops call it equals: `ops.take` without batch dims, `ops.take_along_axis` when every
    axis before the gathered one is a batch dim (indices of the params' rank); others raise."""
    indices = indices if isinstance(indices, keras.KerasTensor) else keras.ops.convert_to_tensor(indices)
    rank = len(indices.shape)
    batch_dims = batch_dims + rank if batch_dims < 0 else batch_dims
    axis = batch_dims if axis is None else axis + len(params.shape) if axis < 0 else axis
    if batch_dims == 0:
        return keras.ops.take(params, indices, axis=axis)
    if batch_dims == axis == rank - 1 == len(params.shape) - 1:
        return keras.ops.take_along_axis(params, indices, axis=axis)
    raise ValueError(f"tf.gather with batch_dims={batch_dims} at axis {axis} has no keras.ops equivalent")


@dataclasses.dataclass
class ComputedOutputs:
    """What a traced layer computes from its weights alone, its inputs' shapes once known (a table of position
    embeddings sliced to the sequence length): those of the layer's outputs are these arrays; the others (None
    in `arrays`) are the outputs of `model`, in order (XLNet's embedding gives its words' and its positions')."""

    arrays: list
    model: object = None
