"""TensorFlow's TFLite converter's failures, said in a line: the ops it could not lower (its message begins with
MLIR's location of the first, which says nothing of why), and the option that may help."""

from __future__ import annotations

import numpy as np
import pytest

from tensorbridge.backends.tflite.export import _converter_reason
from tensorbridge.ir.graph import Graph

MESSAGE = """Could not translate MLIR to FlatBuffer.<unknown>:0: error: loc(callsite(fused["Conv2D:", "m/conv"]))
<unknown>:0: error: failed while converting: 'main':
Some ops are not supported by the native TFLite runtime, you can enable TF kernels fallback using TF Select.
TF Select ops: Conv2D
Details:
\ttf.Conv2D(tensor<?x?x?x?xf32>, tensor<1x1x384x128xf32>) -> (tensor<?x?x?x128xf32>)
"""


def test_the_ops_left_unlowered_are_named_with_the_fix_for_open_dims():
    graph = Graph()
    graph.add_input("images", np.dtype(np.float32), (1, 3, "h", "w"))
    reason = _converter_reason(MESSAGE, graph)
    assert reason.startswith("LiteRT has no kernel for TensorFlow's Conv2D")
    assert "--input-shape (images)" in reason
    graph.inputs[0].shape = (1, 3, 320, 320)
    assert "--input-shape" not in _converter_reason(MESSAGE, graph)


def test_another_failure_keeps_its_first_line():
    assert _converter_reason("something else broke\nmore", Graph()) == "something else broke"


def test_a_keras_model_tensorflow_cannot_trace_is_named_with_its_reason():
    """TensorFlow's converter hides why it could not trace a Keras 3 model (it falls back to a Keras 2 path that
    fails with "'NoneType' object is not callable"): the reason is TensorFlow's own, with the layer."""
    keras = pytest.importorskip("keras")
    from tensorbridge.backends.tflite.export import _keras_trace_failure

    class Branchy(keras.layers.Layer):
        def compute_output_shape(self, shape):
            return shape

        def call(self, x):
            return x if bool(keras.ops.sum(x) > 0) else -x

    inputs = keras.Input((None, 3))
    assert "bool" in _keras_trace_failure(keras.Model(inputs, Branchy()(inputs)))
    assert _keras_trace_failure(keras.Model(inputs, keras.layers.ReLU()(inputs))) == ""
