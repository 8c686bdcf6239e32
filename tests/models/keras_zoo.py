"""keras.applications architectures with seeded random weights (no downloads), and small
Keras text/attention models, plus their TFLite conversions made by TF's own converter."""

from __future__ import annotations

import os

APPS = {"MobileNetV2": (96, 96, 3), "ResNet50": (96, 96, 3), "InceptionV3": (139, 139, 3),
        "EfficientNetB0": (96, 96, 3), "DenseNet121": (96, 96, 3), "NASNetMobile": (224, 224, 3)}


def application(name: str):
    """(model, input shape) with logits output and BatchNorm statistics calibrated on seeded data, so comparisons
    are of outputs that vary with the input (random weights with the default statistics give logits near 0)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    keras.utils.set_random_seed(0)
    shape = APPS[name]
    model = getattr(keras.applications, name)(weights=None, classifier_activation=None, input_shape=shape)
    calibrate_batch_norms(model, shape)
    return model, shape


def calibrate_batch_norms(model, shape, batch: int = 4, data=None) -> None:
    """Every BatchNormalization's shift drawn in (0.5, 1), as trained nets mostly have them (with Keras' zero
    shifts a deep random net amplifies float32 rounding ~1.2x a layer, so two runtimes of one EfficientNet differ
    by 1e-3 from rounding alone), then its moving statistics set to its input's statistics on seeded data (`data`,
    else standard normal): one training-mode pass with momentum 0, so each layer sees inputs normalized as
    inference will. Calibrate on data drawn like the inputs the model will be fed, or the statistics do not fit
    them."""
    import keras
    import numpy as np

    layers = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.BatchNormalization)]
    shifts = np.random.default_rng(2)
    for layer in layers:
        if layer.center:
            layer.beta.assign(shifts.uniform(0.5, 1.0, tuple(layer.beta.shape)).astype(layer.beta.dtype))
    saved = [layer.momentum for layer in layers]
    for layer in layers:
        layer.momentum = 0.0
    x = np.random.default_rng(1).standard_normal((batch, *shape)).astype(np.float32) if data is None else data
    model(x, training=True)
    for layer, momentum in zip(layers, saved):
        layer.momentum = momentum


def text_model(kind: str = "lstm"):
    """Embedding -> (Bidirectional LSTM | GRU) -> Dense classifier."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    tokens = keras.Input((12,), dtype="int32", name="tokens")
    x = layers.Embedding(300, 16)(tokens)
    if kind == "lstm":
        x = layers.Bidirectional(layers.LSTM(24, return_sequences=True))(x)
        x = layers.LSTM(20)(x)
    else:
        x = layers.GRU(24, return_sequences=True)(x)
        x = layers.GRU(20)(x)
    out = layers.Dense(10)(x)
    return keras.Model(tokens, out, name=f"text_{kind}"), (12,)


def attention_model(causal: bool = False):
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    x_in = keras.Input((10, 32), name="sequence")
    att = layers.MultiHeadAttention(num_heads=4, key_dim=8)(x_in, x_in, use_causal_mask=causal)
    x = layers.LayerNormalization()(layers.Add()([x_in, att]))
    x = layers.Dense(64, activation="gelu")(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(x_in, layers.Dense(10)(x), name="attention"), (10, 32)


def to_tflite(model, path, fp16: bool = False) -> None:
    """TF's own converter on the Keras model (`fp16`: its float16-weight path)."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if fp16:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    with open(path, "wb") as f:
        f.write(converter.convert())


def control_flow_tflite(path) -> None:
    """A .tflite with IF and WHILE subgraphs (an IF nested in the loop body), made by TF's converter
    from tf.cond / tf.while_loop: inputs x [1, 4] float32 and a trip count n int32."""
    import numpy as np
    import tensorflow as tf

    w = tf.constant(np.linspace(-1, 1, 16).reshape(4, 4).astype(np.float32))

    class Stepper(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32), tf.TensorSpec([], tf.int32)])
        def run(self, x, n):
            y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.matmul(x, w) + 1.0, lambda: tf.nn.relu(x) * 2.0)

            def body(i, y):
                y = tf.cond(i % 2 == 0, lambda: tf.tanh(tf.matmul(y, w)), lambda: y * 0.5 - 0.25)
                return i + 1, y

            return tf.while_loop(lambda i, y: i < n, body, [tf.constant(0), y])[1]

    module = Stepper()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.run.get_concrete_function()], module)
    with open(path, "wb") as f:
        f.write(converter.convert())


def streaming_tflite(path, in_loop: bool = False) -> None:
    """A streaming .tflite with resource variables (TF's converter, `experimental_enable_resource_variables`):
    input x [1, 1, 4]; a window buffer [1, 3, 4] (initially zeros) shifted by each frame, and a call counter
    [1, 1] (initially 2) that the output reads after incrementing it. `in_loop`: the counter is incremented
    inside a tf.while_loop instead."""
    import numpy as np
    import tensorflow as tf

    class Stream(tf.Module):
        def __init__(self):
            self.buffer = tf.Variable(tf.zeros([1, 3, 4]), trainable=False, name="buffer")
            self.count = tf.Variable(tf.fill([1, 1], 2.0), trainable=False, name="count")
            self.w = tf.constant(np.linspace(-1, 1, 16).reshape(4, 4).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([1, 1, 4], tf.float32)])
        def step(self, x):
            window = tf.concat([self.buffer, x], axis=1)
            self.buffer.assign(window[:, 1:, :])
            if in_loop:
                tf.while_loop(lambda i: i < 2, self.bump, [tf.constant(0)])
            else:
                self.bump(0)
            return {"y": tf.reduce_sum(tf.matmul(window, self.w), axis=1) * self.count}

        def bump(self, i):
            self.count.assign_add(tf.ones([1, 1]))
            return (i + 1,)

    module = Stream()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.step.get_concrete_function()], module)
    converter.experimental_enable_resource_variables = True
    with open(path, "wb") as f:
        f.write(converter.convert())


def recurrent_tflite(path) -> None:
    """Keras 3 LSTM + GRU written by TF's converter: WHILE loops whose bodies SLICE at the loop index."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((7, 5), batch_size=1), keras.layers.LSTM(6, return_sequences=True),
                              keras.layers.GRU(4)])
    with open(path, "wb") as f:
        f.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
