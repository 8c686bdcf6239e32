"""A custom Keras layer that `keras.ops` tracing cannot get through (it calls TensorFlow itself: a `tf.TensorArray`
filled in a Python loop, as keras_hub's RWKV-7 does), read through TensorFlow instead: its `call` traced by
`tf.function` on its inputs' shapes, the weights frozen into the graph, and the GraphDef read by the TensorFlow
frontend into an IR graph the Keras reader inlines. Only under Keras's TensorFlow backend; the frozen weights
arrive as the graph's float constants, which the reader keeps as weights (not as the layers TensorFlow has no
record of: a generated module holds them as plain tensors of its own).
"""

from __future__ import annotations

from tensorbridge.errors import ModelError, UnsupportedError


def function_graph(layer, node, shapes: list):
    """(the IR graph of `layer.call` on the node's arguments, "") or (None, why). `shapes`: the inputs' shapes,
    None for a dim known only at run time."""
    import keras

    if keras.backend.backend() != "tensorflow":
        return None, "its call needs TensorFlow's tracing, and the Keras backend is not TensorFlow"
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from tensorbridge.frontends.tf.importer import Importer

    tensors = list(node.input_tensors)
    specs = [tf.TensorSpec(shape, t.dtype) for t, shape in zip(tensors, shapes)]

    def call(*args):
        given = {id(t): a for t, a in zip(tensors, args)}
        swap = lambda a: given.get(id(a), a)  # noqa: E731
        kwargs = keras.tree.map_structure(swap, node.arguments.kwargs)
        kwargs.pop("training", None)
        return layer.call(*keras.tree.map_structure(swap, node.arguments.args), **kwargs)

    try:
        frozen = convert_variables_to_constants_v2(tf.function(call).get_concrete_function(*specs),
                                                   lower_control_flow=False)
        inputs = [t.name.split(":")[0] for t in frozen.inputs if t.dtype != tf.resource]
        graph = Importer(frozen.graph.as_graph_def(), layer.name).run(inputs, [t.name for t in frozen.outputs],
                                                                       None, {})
    except (UnsupportedError, ModelError) as e:
        return None, str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001 - whatever the layer's Python does under tf.function
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return graph, ""
